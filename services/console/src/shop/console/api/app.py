"""The FastAPI application of the console."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from prometheus_client import CollectorRegistry
from starlette.middleware.sessions import SessionMiddleware

from shop.console.api import asyncapi, auth, bus, deadletters, errors, health, mail, orders
from shop.console.api.rendering import STATIC
from shop.console.domain.throttle import LoginThrottle
from shop.console.ports import Sources
from shop.console.service_layer.logins import Logins
from shop.console.service_layer.password_checks import PasswordChecks
from shop.console.service_layer.redrives import RedriveJobs
from shop.console.settings import ConsoleSettings
from shop.web.guards import BodyLimit
from shop.web.metrics import HttpMetrics

SESSION_COOKIE = "shop_console_session"
MAX_FORM_BYTES = 64 * 1024


def create_app(settings: ConsoleSettings, sources: Sources) -> FastAPI:
    """The console on ``sources`` (``bootstrap`` wires them), which it closes when it stops."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        logins.checks.close()
        await redrives.close()
        for close in sources.close:
            await close()

    redrives = RedriveJobs()
    app = FastAPI(
        title="Skincare Shop: ops console",
        version="1.0.0",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    registry = CollectorRegistry()
    app.state.settings = settings
    app.state.sources = sources
    app.state.registry = registry
    app.state.redrives = redrives
    logins = Logins(
        user=settings.admin_user,
        password_hash=settings.password_hash,
        throttle=LoginThrottle(
            max_failures=settings.login_max_failures,
            window=settings.login_failure_window_seconds,
        ),
        checks=PasswordChecks(settings.login_concurrent_checks),
    )
    app.state.logins = logins
    for router in (
        auth.router,
        orders.router,
        bus.router,
        deadletters.router,
        asyncapi.router,
        mail.router,
        health.router,
    ):
        app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    errors.install(app)
    # Outermost last: the headers go on every answer, the session's errors included.
    app.add_middleware(
        SessionMiddleware,
        secret_key=settings.session_secret.get_secret_value(),
        session_cookie=SESSION_COOKIE,
        max_age=settings.session_max_age_seconds,
        same_site="lax",
        https_only=settings.secure_cookie,
    )
    app.add_middleware(BodyLimit, max_bytes=MAX_FORM_BYTES)
    app.add_middleware(HttpMetrics, registry=registry)
    app.add_middleware(errors.PageHeaders)
    return app
