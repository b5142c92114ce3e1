"""Every dependency and parameter the routes declare, as an ``Annotated`` type: the
settings, the logged-in user, the CSRF check of a form, and the sources ``bootstrap`` wired
into the app."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import Depends, Form, Path, Query, Request

from shop.console.api.security import check_csrf, require_user
from shop.console.ports import Documents, Operations, OrderDirectory, Sources
from shop.console.service_layer.logins import Logins
from shop.console.service_layer.redrives import RedriveJobs
from shop.console.settings import ConsoleSettings


async def _settings(request: Request) -> ConsoleSettings:
    settings: ConsoleSettings = request.app.state.settings
    return settings


async def _sources(request: Request) -> Sources:
    sources: Sources = request.app.state.sources
    return sources


async def _orders(request: Request) -> OrderDirectory:
    return (await _sources(request)).orders


async def _operations(request: Request) -> Operations:
    return (await _sources(request)).operations


async def _documents(request: Request) -> Documents:
    return (await _sources(request)).documents


async def _logins(request: Request) -> Logins:
    logins: Logins = request.app.state.logins
    return logins


async def _redrives(request: Request) -> RedriveJobs:
    jobs: RedriveJobs = request.app.state.redrives
    return jobs


async def _user(request: Request) -> str:
    return require_user(request)


Settings = Annotated[ConsoleSettings, Depends(_settings)]
Orders = Annotated[OrderDirectory, Depends(_orders)]
Ops = Annotated[Operations, Depends(_operations)]
AsyncApiDocuments = Annotated[Documents, Depends(_documents)]
AdminLogins = Annotated[Logins, Depends(_logins)]
Redrives = Annotated[RedriveJobs, Depends(_redrives)]

User = Annotated[str, Depends(_user)]
"""The logged-in user; anyone else is sent to the login form (a redirect)."""
LOGIN_REQUIRED = Depends(_user)
"""For a router whose every page needs a logged-in user."""
CsrfChecked = Annotated[None, Depends(check_csrf)]
"""A form whose CSRF token is the session's; any other is refused with 403."""

OrderId = Annotated[uuid.UUID, Path(description="The order's id.")]
GroupPath = Annotated[str, Path(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._-]+$")]
LetterIdPath = Annotated[str, Path(min_length=1, max_length=300)]
ServicePath = Annotated[str, Path(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._-]+$")]
JobId = Annotated[str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$")]
MailName = Annotated[str, Path(min_length=1, max_length=300, pattern=r"^[A-Za-z0-9._-]+$")]
SearchText = Annotated[str, Query(max_length=200)]
FilterText = Annotated[str, Query(max_length=500)]
FormText = Annotated[str, Form(max_length=500)]
