"""Refusals and failures as pages: 403 for a form without its CSRF token, 404 for what does
not exist, 503 when a part of the shop cannot be read, and the redirect to the login form.
Every answer also carries the headers that keep the console's pages to themselves."""

from __future__ import annotations

from http import HTTPStatus

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shop.console.api.rendering import render
from shop.console.api.security import CsrfRefused, LoginRequired
from shop.console.domain.errors import NotFound
from shop.ops.errors import OpsError

PAGE_HEADERS = (
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; frame-src 'self'; frame-ancestors 'none'; "
        b"form-action 'self'; base-uri 'none'; object-src 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    # Dead letters and orders hold customer data: no copy stays in a cache.
    (b"cache-control", b"no-store"),
)


class PageHeaders:
    """Adds :data:`PAGE_HEADERS` to every answer that does not set its own."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in PAGE_HEADERS if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


def install(app: FastAPI) -> None:
    @app.exception_handler(LoginRequired)
    async def login_required(_: Request, error: LoginRequired) -> Response:
        return RedirectResponse(error.location, status_code=303)

    @app.exception_handler(CsrfRefused)
    async def csrf_refused(request: Request, _: CsrfRefused) -> Response:
        return render(
            request,
            "error.html",
            status_code=403,
            title="Form refused",
            message="This form was not sent from a page of this console's session (its CSRF "
            "token is missing or wrong). Reload the page and try again.",
        )

    @app.exception_handler(NotFound)
    async def not_found(request: Request, error: NotFound) -> Response:
        return render(request, "error.html", status_code=404, title="Not found", message=error.what)

    @app.exception_handler(OpsError)
    async def unavailable(request: Request, error: OpsError) -> Response:
        return render(
            request,
            "error.html",
            status_code=503,
            title="Part of the shop could not be read",
            message=str(error),
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError) -> Response:
        said = "; ".join(
            f"{'.'.join(str(part) for part in e['loc'])}: {e['msg']}" for e in error.errors()
        )
        return render(request, "error.html", status_code=422, title="Invalid request", message=said)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> Response:
        try:
            title = HTTPStatus(error.status_code).phrase
        except ValueError:
            title = "Error"
        response = render(
            request,
            "error.html",
            status_code=error.status_code,
            title=title,
            message=str(error.detail),
        )
        for name, value in (error.headers or {}).items():
            response.headers[name] = value
        return response
