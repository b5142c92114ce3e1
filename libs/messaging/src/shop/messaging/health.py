"""A small HTTP port for orchestrators and Prometheus: /healthz, /readyz, /metrics."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

Readiness = Callable[[], dict[str, bool]]
"""Each named part of the worker, and whether it is ready."""


@dataclass(frozen=True, slots=True)
class OperatorRoute:
    """A route of a service's own on the worker's port, for its operators (the console,
    ``shopctl``): never exposed beyond the cluster, as ``/metrics`` is not."""

    method: Literal["GET", "POST"]
    path: str
    answer: Callable[[Mapping[str, str]], Awaitable[tuple[int, Any]]]
    """Given the query parameters, the status and the JSON body of the answer."""


class HealthServer:
    def __init__(
        self,
        registry: CollectorRegistry,
        readiness: Readiness,
        *,
        host: str,
        port: int,
        routes: Sequence[OperatorRoute] = (),
    ) -> None:
        self.registry = registry
        self.readiness = readiness
        self.host = host
        self.port = port
        self.routes = list(routes)
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        for route in self.routes:
            app.router.add_route(route.method, route.path, _answering(route))
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0:  # a free port was asked for: tell which one it got
            self.port = self._runner.addresses[0][1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _readyz(self, _: web.Request) -> web.Response:
        parts = self.readiness()
        ready = all(parts.values())
        return web.json_response(
            {"status": "ready" if ready else "not ready", "parts": parts},
            status=200 if ready else 503,
        )

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self.registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )


def _answering(route: OperatorRoute) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        status, body = await route.answer(request.query)
        return web.json_response(body, status=status)

    return handle
