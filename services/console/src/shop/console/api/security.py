"""Who may see the console, and what protects its forms.

The session lives in a signed cookie (Starlette's ``SessionMiddleware``: HttpOnly,
SameSite=Lax, Secure in production); it holds the user once logged in, a CSRF token that
every form carries back, and the one-line messages shown after a redirect. A POST without
the session's token is refused with 403, the login and logout forms included.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Final
from urllib.parse import quote, urlencode, urlsplit

from fastapi import Request

USER: Final = "user"
CSRF: Final = "csrf"
FLASH: Final = "flash"
CSRF_FIELD: Final = "csrf_token"


class LoginRequired(Exception):
    """The page needs a logged-in user: answered with a redirect to the login form."""

    def __init__(self, back_to: str) -> None:
        super().__init__(back_to)
        self.back_to = back_to

    @property
    def location(self) -> str:
        return "/login?" + urlencode({"next": self.back_to})


class CsrfRefused(Exception):
    """A form came back without the session's CSRF token."""


def csrf_token(request: Request) -> str:
    """The session's CSRF token, made on first use."""
    token = request.session.get(CSRF)
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        request.session[CSRF] = token
    return token


async def check_csrf(request: Request) -> None:
    """Refuse a form whose ``csrf_token`` is not the session's (constant-time comparison)."""
    expected = request.session.get(CSRF)
    sent = (await request.form()).get(CSRF_FIELD)
    if (
        not isinstance(expected, str)
        or not expected
        or not isinstance(sent, str)
        or not hmac.compare_digest(sent.encode(), expected.encode())
    ):
        raise CsrfRefused()


def current_user(request: Request) -> str | None:
    user = request.session.get(USER)
    return user if isinstance(user, str) else None


def require_user(request: Request) -> str:
    user = current_user(request)
    if user is None:
        # The path encoded again: left decoded, one with an escaped percent sign (``%2500``)
        # would lead back to another (``%00``).
        path = quote(request.scope["path"])
        back_to = path + (f"?{request.url.query}" if request.url.query else "")
        raise LoginRequired(back_to)
    return user


def log_in(request: Request, user: str) -> None:
    """A fresh session for ``user``: whatever the session held before (a token an attacker
    may have planted) does not survive the login."""
    request.session.clear()
    request.session[USER] = user
    request.session[CSRF] = secrets.token_urlsafe(32)


def log_out(request: Request) -> None:
    request.session.clear()


def flash(request: Request, kind: str, text: str) -> None:
    """A message for the next page shown (``success`` or ``error``)."""
    messages = list(request.session.get(FLASH, []))
    messages.append({"kind": kind, "text": text})
    request.session[FLASH] = messages


def take_flashes(request: Request) -> list[dict[str, str]]:
    messages = request.session.pop(FLASH, [])
    return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path of this console only, never another site
    (``//evil.example`` or ``https://…`` fall back to the start page)."""
    if not target:
        return "/"
    parts = urlsplit(target)
    if (
        parts.scheme
        or parts.netloc
        or not target.startswith("/")
        or target.startswith("//")
        or "\\" in target
    ):
        return "/"
    return target
