"""Liveness, readiness and metrics, without a login.

The console is ready when it can serve its pages: its settings were read and its sources
wired. It never asks a service it reads: a service that is down shows on the pages that
read it (a 503 page naming it), and an outage is when operators need the console most."""

from __future__ import annotations

from fastapi import Request

from shop.console.ports import Sources
from shop.console.settings import ConsoleSettings
from shop.web.health import operations_router


class NotWired(RuntimeError):
    """The console's application lacks what its pages need (a bootstrap defect)."""


async def _settings_and_sources_ready(request: Request) -> None:
    state = request.app.state
    if not isinstance(getattr(state, "settings", None), ConsoleSettings):
        raise NotWired("the console has no settings")
    if not isinstance(getattr(state, "sources", None), Sources):
        raise NotWired("the console has no sources wired")


router = operations_router(_settings_and_sources_ready, checks="settings_and_sources")
