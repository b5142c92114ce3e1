"""A logged-in (or not) client of the console wired to fakes, and the CSRF token of the
page it last read."""

from __future__ import annotations

import re

import httpx

CSRF_FIELD = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(page: httpx.Response) -> str:
    found = CSRF_FIELD.search(page.text)
    assert found, f"no CSRF token on {page.url}"
    return found.group(1)


async def log_in(client: httpx.AsyncClient, user: str, password: str) -> httpx.Response:
    form = await client.get("/login")
    return await client.post(
        "/login",
        data={"username": user, "password": password, "csrf_token": csrf_of(form)},
    )
