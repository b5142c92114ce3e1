"""The services' internal APIs (``/internal/v1`` and the operator routes on each worker's
port), asked with the operator token of ``SHOP_OPS_OPERATOR_TOKEN``: how the console and
``shopctl`` read a service, never through its tables. A refusal is said in one line: which
service, what it answered, and what to do."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Final
from urllib.parse import quote

import httpx

from shop.ops.errors import OpsError
from shop.ops.http import TIMEOUT, asked_again_when_busy, reaching
from shop.ops.settings import OpsSettings

MAX_IDS: Final = 200
"""Ids one question may list (the services' own bound): more are asked in parts."""


class NotFoundThere(OpsError):
    """The service knows nothing by that name (its 404)."""


class OperatorPort:
    """One service's worker port, for its operator routes."""

    def __init__(self, client: httpx.AsyncClient, service: str, url: str) -> None:
        self.client = client
        self.service = service
        self.url = url

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        """The JSON of ``GET path``; :class:`NotFoundThere` for a 404, :class:`OpsError`
        for any other refusal."""
        return await self.ask("GET", path, params)

    async def post(
        self,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        body: Mapping[str, str] | None = None,
    ) -> Any:
        """``body``: the fields sent as JSON, where a customer's address goes (a URL is
        kept by access logs)."""
        return await self.ask("POST", path, params, body=body)

    async def ask(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None,
        *,
        body: Mapping[str, str] | None = None,
    ) -> Any:
        reply = await self.answer(method, path, params, body=body)
        if reply.status_code != 200:
            raise self.refusal(reply)
        return reply.json()

    async def answer(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None = None,
        *,
        body: Mapping[str, str] | None = None,
    ) -> httpx.Response:
        """The reply as it came, for a caller that reads other statuses itself. A read the
        worker answers 503 (its database away or too slow a moment) is asked again, a few
        times; a change is not, as it may have been made before the answer failed."""
        with reaching(f"{self.service}'s worker", self.url):
            if method != "GET":
                return await self.client.request(method, path, params=params, json=body)
            return await asked_again_when_busy(
                lambda: self.client.request(method, path, params=params, json=body)
            )

    def refusal(self, reply: httpx.Response) -> OpsError:
        detail = _detail(reply)
        if reply.status_code == 401:
            return OpsError(
                f"{self.service}'s worker refused the operator token ({detail}): set "
                "SHOP_OPS_OPERATOR_TOKEN to the services' operator token"
            )
        if reply.status_code == 404:
            if not _said_by_a_route(reply):
                # The server's own 404: a path this worker does not serve (an older
                # release mid-upgrade), which must not read as "nothing there".
                return OpsError(f"{self.service}'s worker does not serve {reply.request.url.path}")
            return NotFoundThere(f"{self.service}: {detail}")
        return OpsError(f"{self.service}'s worker answered {reply.status_code}: {detail}")


def _said_by_a_route(reply: httpx.Response) -> bool:
    """Whether the answer is a route's own (a JSON ``detail``), not the server's."""
    try:
        body = reply.json()
    except ValueError:
        return False
    return isinstance(body, dict) and "detail" in body


def _detail(reply: httpx.Response) -> str:
    try:
        body = reply.json()
    except ValueError:
        return reply.text[:300]
    if isinstance(body, dict) and "detail" in body:
        return str(body["detail"])
    return reply.text[:300]


@asynccontextmanager
async def operator_port(
    settings: OpsSettings, service: str, *, patience: httpx.Timeout = TIMEOUT
) -> AsyncIterator[OperatorPort]:
    """``service``'s worker port, asked with the operator token, for the block (each
    request given ``patience``)."""
    url = settings.worker_url(service)
    headers = {}
    if settings.operator_token is not None:
        headers["Authorization"] = f"Bearer {settings.operator_token.get_secret_value()}"
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=patience) as client:
        yield OperatorPort(client, service, url)


def quoted(reference: str) -> str:
    """An order's id or number as one segment of a path."""
    return quote(reference.strip(), safe="")


async def listed_by_ids(
    port: OperatorPort,
    path: str,
    *,
    name: str,
    ids: Iterable[object],
    field: str,
    params: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """The ``field`` list of ``GET path?name=…`` for every one of ``ids``, asked in parts."""
    found: list[dict[str, Any]] = []
    for part in in_parts([str(one) for one in ids]):
        found += (await port.get(path, {**(params or {}), name: part}))[field]
    return found


def in_parts(ids: list[str]) -> list[str]:
    """``ids`` as comma-separated parts of at most :data:`MAX_IDS` each."""
    return [",".join(ids[start : start + MAX_IDS]) for start in range(0, len(ids), MAX_IDS)]
