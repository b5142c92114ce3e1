"""Logging in and out. Every form, these two included, carries the session's CSRF token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse
from starlette.responses import Response

from shop.console.api.dependencies import AdminLogins, CsrfChecked
from shop.console.api.rendering import render
from shop.console.api.security import (
    current_user,
    flash,
    log_in,
    log_out,
    safe_next,
)
from shop.console.service_layer.logins import Busy, LoggedIn, Throttled, WrongCredentials

router = APIRouter()

WRONG_CREDENTIALS = "That user name and password do not match. Try again."
TOO_MANY_TRIES = "Too many failed logins from your address. Try again in {} seconds."
BUSY = "The console is checking other logins. Try again in {} seconds."
OUTDATED_HASH = (
    "The configured password hash is in the earlier scrypt format. Set "
    "SHOP_CONSOLE_ADMIN_PASSWORD_HASH to what `python -m shop.console hash-password` prints."
)


@router.get("/login")
async def login_form(
    request: Request, next_page: Annotated[str, Query(alias="next", max_length=500)] = "/"
) -> Response:
    if current_user(request) is not None:
        return RedirectResponse(safe_next(next_page), status_code=303)
    return render(request, "login.html", next_page=safe_next(next_page), error=None, user_name="")


@router.post("/login")
async def login(
    request: Request,
    _: CsrfChecked,
    *,
    logins: AdminLogins,
    username: Annotated[str, Form(max_length=200)] = "",
    password: Annotated[str, Form(max_length=2048)] = "",
    next_page: Annotated[str, Form(alias="next", max_length=500)] = "/",
) -> Response:
    address = request.client.host if request.client else "unknown"
    match await logins.attempt(address, username, password):
        case Throttled(retry_after=wait):
            return _refused(
                request,
                next_page,
                username,
                status_code=429,
                error=TOO_MANY_TRIES.format(wait),
                retry_after=wait,
            )
        case Busy(retry_after=wait):
            return _refused(
                request,
                next_page,
                username,
                status_code=503,
                error=BUSY.format(wait),
                retry_after=wait,
            )
        case WrongCredentials():
            return _refused(request, next_page, username, status_code=401, error=WRONG_CREDENTIALS)
        case LoggedIn(replaced_outdated_hash=outdated):
            log_in(request, username)
            if outdated:
                flash(request, "error", OUTDATED_HASH)
            return RedirectResponse(safe_next(next_page), status_code=303)


def _refused(
    request: Request,
    next_page: str,
    username: str,
    *,
    status_code: int,
    error: str,
    retry_after: int | None = None,
) -> Response:
    response = render(
        request,
        "login.html",
        status_code=status_code,
        next_page=safe_next(next_page),
        error=error,
        user_name=username,
    )
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


@router.post("/logout")
async def logout(request: Request, _: CsrfChecked) -> Response:
    log_out(request)
    flash(request, "success", "You are logged out.")
    return RedirectResponse("/login", status_code=303)
