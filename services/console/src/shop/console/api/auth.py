"""Logging in and out. Every form, these two included, carries the session's CSRF token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse
from starlette.responses import Response

from shop.console.api.dependencies import CsrfChecked, Settings, Throttle
from shop.console.api.rendering import render
from shop.console.api.security import (
    credentials_match,
    current_user,
    flash,
    log_in,
    log_out,
    safe_next,
)

router = APIRouter()

WRONG_CREDENTIALS = "That user name and password do not match. Try again."
TOO_MANY_TRIES = "Too many failed logins from your address. Try again in {} seconds."


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
    settings: Settings,
    throttle: Throttle,
    username: Annotated[str, Form(max_length=200)] = "",
    password: Annotated[str, Form(max_length=2048)] = "",
    next_page: Annotated[str, Form(alias="next", max_length=500)] = "/",
) -> Response:
    # By address and name together: behind a port-forward every operator comes from one
    # address, and one's mistakes must not lock the others out.
    client = f"{request.client.host if request.client else 'unknown'} {username}"
    wait = throttle.wait_before_next_try(client)
    if wait:
        # Refused before the password is even hashed: a guess costs the guesser, not us.
        return _refused(
            request,
            next_page,
            username,
            status_code=429,
            error=TOO_MANY_TRIES.format(wait),
            retry_after=wait,
        )
    # Counted as a failure before the hash is checked, so that guesses sent all at once
    # are counted as they arrive, not after every one of them was let through.
    throttle.failed(client)
    if not await credentials_match(settings, username, password):
        return _refused(request, next_page, username, status_code=401, error=WRONG_CREDENTIALS)
    throttle.succeeded(client)
    log_in(request, username)
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
