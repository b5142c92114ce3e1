"""A service's internal API asked as the console and shopctl ask it: with the operator token
of ``SHOP_OPS_OPERATOR_TOKEN``; a refusal is one line that says what to do."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import SecretStr

from shop.messaging import OperatorRoute
from shop.messaging.testing import operator_port as served
from shop.ops.errors import OpsError
from shop.ops.internal import NotFoundThere, in_parts, operator_port
from shop.ops.settings import OpsSettings

TOKEN = "an-operator-token-of-this-test-long-enough"


async def _answer(query: Mapping[str, str]) -> tuple[int, Any]:
    if query["thing"] == "missing":
        return 404, {"detail": "no thing 'missing' here"}
    return 200, {"thing": query["thing"]}


ROUTES = [OperatorRoute("GET", "/internal/v1/things/{thing}", _answer)]


def settings(url: str, token: str | None) -> OpsSettings:
    return OpsSettings(
        environment="development",
        order_worker_url=url,
        operator_token=None if token is None else SecretStr(token),
    )


async def test_the_operator_token_is_presented_and_the_answer_read() -> None:
    async with (
        served(ROUTES, token=TOKEN) as url,
        operator_port(settings(url, TOKEN), "order-service") as port,
    ):
        assert await port.get("/internal/v1/things/42") == {"thing": "42"}
        with pytest.raises(NotFoundThere, match="order-service: no thing 'missing' here"):
            await port.get("/internal/v1/things/missing")


async def test_a_refused_token_is_said_with_the_variable_to_set() -> None:
    async with (
        served(ROUTES, token=TOKEN) as url,
        operator_port(settings(url, None), "order-service") as port,
    ):
        with pytest.raises(OpsError, match=r"refused the operator token .*SHOP_OPS_OPERATOR_TOKEN"):
            await port.get("/internal/v1/things/42")


def test_many_ids_are_asked_in_parts() -> None:
    ids = [str(n) for n in range(450)]
    parts = in_parts(ids)
    assert [len(part.split(",")) for part in parts] == [200, 200, 50]
    assert in_parts([]) == []
