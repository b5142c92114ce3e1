"""What ops makes of a worker's refusals: a 404 the worker's route said (a JSON detail) is
"no such thing there"; a 404 of a path the worker does not serve at all (an older worker,
mid-upgrade) is an error, never read as "nothing there"."""

from __future__ import annotations

import httpx
import pytest

from shop.ops.errors import OpsError
from shop.ops.internal import NotFoundThere, OperatorPort


def port(reply: httpx.Response) -> OperatorPort:
    client = httpx.AsyncClient(transport=httpx.MockTransport(lambda _: reply), base_url="http://w")
    return OperatorPort(client, "order-service", "http://w")


async def test_a_404_with_the_routes_detail_is_nothing_there() -> None:
    missing = httpx.Response(404, json={"detail": "no order SK-1"})
    with pytest.raises(NotFoundThere, match="no order SK-1"):
        await port(missing).get("/internal/v1/orders/SK-1")


async def test_a_404_of_a_path_the_worker_does_not_serve_is_an_error() -> None:
    unknown = httpx.Response(404, text="404: Not Found")
    with pytest.raises(OpsError) as raised:
        await port(unknown).get("/internal/v1/dead-letters/g/1")
    assert not isinstance(raised.value, NotFoundThere)
    assert "does not serve" in str(raised.value)
