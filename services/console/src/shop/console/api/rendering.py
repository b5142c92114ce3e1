"""The pages' templates (``shop/console/templates``) and what every page is given: the
user, the CSRF token for its forms, the messages left by a redirect, and the navigation."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from fastapi import Request
from fastapi.templating import Jinja2Templates
from starlette.responses import Response

from shop.console.api.security import csrf_token, current_user, take_flashes
from shop.console.settings import ConsoleSettings

PACKAGE: Final = Path(__file__).resolve().parent.parent
TEMPLATES: Final = PACKAGE / "templates"
STATIC: Final = PACKAGE / "static"

templates = Jinja2Templates(directory=TEMPLATES)
templates.env.autoescape = True
templates.env.trim_blocks = True
templates.env.lstrip_blocks = True


def _money(amount: int, currency: str) -> str:
    return f"{amount:,} {currency}"


def _when(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _seconds(value: float) -> str:
    """A duration as a person says it: 0 s, 42 s, 3 min 5 s, 2 h 10 min."""
    whole = round(value)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


templates.env.filters["money"] = _money
templates.env.filters["when"] = _when
templates.env.filters["seconds"] = _seconds


def navigation(settings: ConsoleSettings) -> list[tuple[str, str]]:
    pages = [
        ("/orders", "Orders"),
        ("/outbox", "Outbox"),
        ("/consumers", "Consumers"),
        ("/reconciliation", "Reconciliation"),
        ("/dead-letters", "Dead letters"),
        ("/asyncapi", "AsyncAPI"),
    ]
    if settings.shows_captured_mail:
        pages.append(("/mail", "E-mails"))
    return pages


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> Response:
    settings: ConsoleSettings = request.app.state.settings
    path = request.url.path
    return templates.TemplateResponse(
        request,
        template,
        {
            "user": current_user(request),
            "csrf_token": csrf_token(request),
            "flashes": take_flashes(request),
            "navigation": navigation(settings),
            "current": next(
                (href for href, _ in navigation(settings) if path.startswith(href)), None
            ),
            "environment": settings.environment,
            **context,
        },
        status_code=status_code,
    )
