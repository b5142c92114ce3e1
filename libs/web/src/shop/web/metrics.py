"""Request counts and latencies for Prometheus, by route template (not by raw path, which
would make a time series per order id)."""

from __future__ import annotations

import time

from prometheus_client import CollectorRegistry, Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HttpMetrics:
    def __init__(self, app: ASGIApp, registry: CollectorRegistry) -> None:
        self.app = app
        self.requests = Counter(
            "http_requests",
            "HTTP requests answered.",
            ("method", "route", "status"),
            registry=registry,
        )
        self.seconds = Histogram(
            "http_request_duration_seconds",
            "Time to answer an HTTP request.",
            ("method", "route"),
            buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
            registry=registry,
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        # Stays "none" when the client left before any answer; an exception is a 500.
        status = "none"

        async def recording_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = str(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        except Exception:
            status = "500"
            raise
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.requests.labels(scope["method"], route, status).inc()
            self.seconds.labels(scope["method"], route).observe(time.perf_counter() - started)
