"""A small HTTP port for orchestrators and Prometheus: /healthz, /readyz, /metrics; and the
service's own operator routes, behind its operator token when it has one."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import structlog
from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = structlog.get_logger("shop.messaging.health")

Readiness = Callable[[], dict[str, bool]]
"""Each named part of the worker, and whether it is ready."""


@dataclass(frozen=True, slots=True)
class OperatorRoute:
    """A route of a service's own on the worker's port, for its operators (the console,
    ``shopctl``): never exposed beyond the cluster, as ``/metrics`` is not."""

    method: Literal["GET", "POST"]
    path: str
    answer: Callable[[Mapping[str, str]], Awaitable[tuple[int, Any]]]
    """Given the query parameters and the path's own (``{order_id}`` in ``path``), the
    status and the JSON body of the answer."""


class HealthServer:
    def __init__(
        self,
        registry: CollectorRegistry,
        readiness: Readiness,
        *,
        host: str,
        port: int,
        routes: Sequence[OperatorRoute] = (),
        operator_token: str | None = None,
        outage: Callable[[BaseException], bool] | None = None,
    ) -> None:
        """``operator_token``: the bearer token every operator route requires (the health
        routes and ``/metrics`` never do: probes and Prometheus carry none). None leaves
        the operator routes to the network's protection alone, which only development
        and tests may do (each service's settings refuse it in production).
        ``outage``: whether an operator route's failure says the service's database is
        away or too slow (the worker's own ``outage``): a 503 to ask again, not a 500."""
        if operator_token == "":
            # An empty token set by mistake would otherwise read as "no token": open routes.
            raise ValueError("the operator token is empty: set one, or none at all")
        self.registry = registry
        self.readiness = readiness
        self.host = host
        self.port = port
        self.routes = list(routes)
        self.operator_token = operator_token
        self.outage = outage
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        for route in self.routes:
            app.router.add_route(
                route.method, route.path, _answering(route, self.operator_token, self.outage)
            )
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


BEARER: Final = "Bearer "


def refusal(authorization: str | None, operator_token: str | None) -> str | None:
    """Why a request with this ``Authorization`` header may not use an operator route
    (None when it may). The token is compared in constant time."""
    if operator_token is None:
        return None
    if not authorization or not authorization.startswith(BEARER):
        return "an Authorization: Bearer <operator token> header is required"
    given = authorization.removeprefix(BEARER).strip().encode()
    if not hmac.compare_digest(given, operator_token.encode()):
        return "the operator token is not this service's"
    return None


PROBLEM_JSON: Final = "application/problem+json"


PRIVATE_FIELDS: Final = frozenset({"email"})
"""What an operator route takes in its JSON body only, never in its URL: access logs and
proxies keep URLs, and a customer's address must not stay there."""


class UnreadableBody(ValueError):
    """A request's body that is not what an operator route reads; the message says why."""


async def _fields_of(request: web.Request) -> dict[str, str]:
    """A POST's JSON body (an object of strings: a list of ids comma-separated, as in a
    query), read as more parameters; a private one in the query string is refused."""
    in_the_url = sorted(PRIVATE_FIELDS & set(request.query))
    if in_the_url:
        raise UnreadableBody(
            f"{in_the_url[0]} goes in the JSON body, not in the URL (which access logs keep)"
        )
    if not request.can_read_body:
        return {}
    try:
        fields = await request.json()
    except ValueError:
        raise UnreadableBody("the body must be a JSON object") from None
    if not isinstance(fields, dict):
        raise UnreadableBody("the body must be a JSON object")
    for name, value in fields.items():
        if not isinstance(value, str):
            raise UnreadableBody(f"{name} must be a string in the body")
    return fields


def problem(
    status: int, title: str, detail: str, *, headers: Mapping[str, str] | None = None
) -> web.Response:
    """An RFC 9457 problem document, as the services' public APIs answer errors
    (``shop.web.problems``)."""
    return web.json_response(
        {"type": "about:blank", "title": title, "status": status, "detail": detail},
        status=status,
        content_type=PROBLEM_JSON,
        headers=headers,
    )


def _answering(
    route: OperatorRoute,
    operator_token: str | None,
    outage: Callable[[BaseException], bool] | None,
) -> Callable[[web.Request], Awaitable[web.Response]]:
    async def handle(request: web.Request) -> web.Response:
        refused = refusal(request.headers.get("Authorization"), operator_token)
        if refused is not None:
            return web.json_response(
                {"detail": refused},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="operator"'},
            )
        try:
            parameters = {**request.query, **await _fields_of(request), **request.match_info}
        except UnreadableBody as bad:
            return problem(400, "Bad Request", str(bad))
        try:
            status, body = await route.answer(parameters)
        except Exception as error:
            # An operator (the console, shopctl) reads JSON: never aiohttp's plain-text 500.
            if outage is not None and outage(error):
                log.warning("database unavailable", path=request.path, error=repr(error))
                return problem(
                    503,
                    "Service Unavailable",
                    "the database could not be reached, or was too slow; ask again shortly",
                    headers={"Retry-After": "1"},
                )
            log.exception("operator route failed", path=request.path)
            return problem(
                500,
                "Internal Server Error",
                f"unexpected {type(error).__name__} (the worker's log has more)",
            )
        return web.json_response(body, status=status)

    return handle
