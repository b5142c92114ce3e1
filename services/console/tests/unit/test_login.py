"""Only the admin gets in: a wrong password is a 401 page, every page but the login form,
the static files and the probes sends the others to the login form, and every form
without the session's CSRF token is refused."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from shop.console.bootstrap import build_app
from shop.console.domain.passwords import Argon2idHash, ScryptHash
from shop.console.service_layer.logins import Logins
from shop.console.settings import (
    DEVELOPMENT_ADMIN_PASSWORD,
    DEVELOPMENT_ADMIN_USER,
    EARLIER_DEVELOPMENT_ADMIN_PASSWORD_HASH,
)

from .browsing import csrf_of, log_in
from .fakes import ADMIN, PASSWORD, SETTINGS, FakeShop, letter


@pytest.fixture
def shop() -> FakeShop:
    return FakeShop()


@pytest.fixture
def app(shop: FakeShop) -> FastAPI:
    return build_app(SETTINGS, sources=shop.sources())


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with browser(app) as client:
        yield client


@asynccontextmanager
async def browser(app: FastAPI, address: str = "127.0.0.1") -> AsyncIterator[httpx.AsyncClient]:
    """A client of the console from ``address``."""
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, client=(address, 50123)),
        base_url="http://console.test",
    ) as client:
        yield client


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/orders",
        "/outbox",
        "/consumers",
        "/dead-letters",
        "/asyncapi",
        "/mail",
        "/dead-letters/notification-service/0-17",
    ],
)
async def test_a_page_sends_a_stranger_to_the_login_form_and_back(
    client: httpx.AsyncClient, path: str
) -> None:
    answer = await client.get(path)

    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/login?next=")
    assert httpx.URL(answer.headers["location"]).params["next"] == path


async def test_the_login_form_the_static_files_and_the_probes_need_no_login(
    client: httpx.AsyncClient,
) -> None:
    login = await client.get("/login")
    css = await client.get("/static/console.css")
    health = await client.get("/healthz")

    assert login.status_code == 200
    assert 'type="password"' in login.text
    assert css.status_code == 200
    assert css.headers["content-type"].startswith("text/css")
    assert health.json() == {"status": "ok"}


async def test_a_wrong_password_is_refused_with_a_401_page_that_says_so(
    client: httpx.AsyncClient,
) -> None:
    refused = await log_in(client, ADMIN, "not the password")

    assert refused.status_code == 401
    assert "do not match" in refused.text
    assert (await client.get("/orders")).status_code == 303


async def test_a_wrong_user_name_is_refused_alike(client: httpx.AsyncClient) -> None:
    refused = await log_in(client, "root", PASSWORD)

    assert refused.status_code == 401
    assert "do not match" in refused.text


async def test_the_right_password_opens_the_console_and_goes_where_it_was_asked(
    client: httpx.AsyncClient,
) -> None:
    form = await client.get("/login", params={"next": "/dead-letters?group=order-service"})
    accepted = await client.post(
        "/login",
        data={
            "username": ADMIN,
            "password": PASSWORD,
            "csrf_token": csrf_of(form),
            "next": "/dead-letters?group=order-service",
        },
    )

    assert accepted.status_code == 303
    assert accepted.headers["location"] == "/dead-letters?group=order-service"
    assert (await client.get("/orders")).status_code == 200


@pytest.mark.parametrize("elsewhere", ["https://evil.example/", "//evil.example/x", "/\\evil"])
async def test_after_logging_in_it_never_goes_to_another_site(
    client: httpx.AsyncClient, elsewhere: str
) -> None:
    form = await client.get("/login")
    accepted = await client.post(
        "/login",
        data={
            "username": ADMIN,
            "password": PASSWORD,
            "csrf_token": csrf_of(form),
            "next": elsewhere,
        },
    )

    assert accepted.headers["location"] == "/"


async def test_the_session_cookie_is_http_only_and_same_site_lax(
    client: httpx.AsyncClient,
) -> None:
    answer = await log_in(client, ADMIN, PASSWORD)

    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie
    assert "samesite=lax" in cookie


async def test_the_login_form_without_its_csrf_token_is_refused_with_403(
    client: httpx.AsyncClient,
) -> None:
    await client.get("/login")
    refused = await client.post("/login", data={"username": ADMIN, "password": PASSWORD})

    assert refused.status_code == 403
    assert "CSRF" in refused.text
    assert (await client.get("/orders")).status_code == 303


async def test_a_token_made_before_the_login_is_no_longer_valid_after_it(
    client: httpx.AsyncClient,
) -> None:
    before = csrf_of(await client.get("/login"))
    await client.post(
        "/login", data={"username": ADMIN, "password": PASSWORD, "csrf_token": before}
    )

    after = csrf_of(await client.get("/orders"))
    assert after != before
    refused = await client.post("/logout", data={"csrf_token": before})
    assert refused.status_code == 403


@pytest.mark.parametrize(
    "path",
    [
        "/logout",
        "/dead-letters/notification-service/0-17/redrive",
        "/dead-letters/notification-service/0-17/purge",
        "/dead-letters/redrive-matching",
    ],
)
@pytest.mark.parametrize("token", [None, "forged-token"])
async def test_every_form_without_the_sessions_token_is_refused_with_403(
    client: httpx.AsyncClient, shop: FakeShop, path: str, token: str | None
) -> None:
    shop.operations.letters.append(letter("0-17"))
    await log_in(client, ADMIN, PASSWORD)

    refused = await client.post(path, data={} if token is None else {"csrf_token": token})

    assert refused.status_code == 403
    assert shop.operations.redriven == []
    assert shop.operations.purged == []
    assert (await client.get("/orders")).status_code == 200


async def test_logging_out_ends_the_session(client: httpx.AsyncClient) -> None:
    await log_in(client, ADMIN, PASSWORD)
    page = await client.get("/orders")

    out = await client.post("/logout", data={"csrf_token": csrf_of(page)})

    assert out.status_code == 303
    assert out.headers["location"] == "/login"
    assert "logged out" in (await client.get("/login")).text
    assert (await client.get("/orders")).status_code == 303


async def test_repeated_failures_lock_the_client_out_even_with_the_right_password(
    client: httpx.AsyncClient,
) -> None:
    for _ in range(SETTINGS.login_max_failures):
        assert (await log_in(client, ADMIN, "guess")).status_code == 401

    locked = await log_in(client, ADMIN, PASSWORD)

    assert locked.status_code == 429
    assert "Too many failed logins" in locked.text
    assert 0 < int(locked.headers["retry-after"]) <= SETTINGS.login_failure_window_seconds
    assert (await client.get("/orders")).status_code == 303


async def test_a_successful_login_forgets_the_earlier_failures(client: httpx.AsyncClient) -> None:
    for _ in range(SETTINGS.login_max_failures - 1):
        await log_in(client, ADMIN, "guess")
    assert (await log_in(client, ADMIN, PASSWORD)).status_code == 303
    page = await client.get("/orders")
    await client.post("/logout", data={"csrf_token": csrf_of(page)})

    assert (await log_in(client, ADMIN, "one more guess")).status_code == 401


async def test_guesses_sent_all_at_once_are_throttled_as_they_arrive(shop: FakeShop) -> None:
    # As many check slots as guesses: what is shown here is the throttle's count alone.
    roomy = SETTINGS.model_copy(update={"login_concurrent_checks": 16})
    async with browser(build_app(roomy, sources=shop.sources())) as client:
        token = csrf_of(await client.get("/login"))

        async def guess(n: int) -> int:
            data = {"username": ADMIN, "password": f"guess {n}", "csrf_token": token}
            return (await client.post("/login", data=data)).status_code

        answers = await asyncio.gather(*(guess(n) for n in range(16)))

    assert answers.count(401) == SETTINGS.login_max_failures
    assert answers.count(429) == 16 - SETTINGS.login_max_failures


async def test_fifty_user_names_from_one_address_get_the_tries_of_one(
    client: httpx.AsyncClient,
) -> None:
    answers = [(await log_in(client, f"user-{n}", "guess")).status_code for n in range(50)]

    tries = SETTINGS.login_max_failures
    assert answers == [401] * tries + [429] * (50 - tries)
    assert (await log_in(client, ADMIN, PASSWORD)).status_code == 429


async def test_one_addresses_failures_do_not_lock_out_another_address(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    for n in range(SETTINGS.login_max_failures):
        await log_in(client, f"user-{n}", "guess")
    assert (await log_in(client, ADMIN, PASSWORD)).status_code == 429

    async with browser(app, "10.20.30.40") as elsewhere:
        assert (await log_in(elsewhere, ADMIN, PASSWORD)).status_code == 303


async def test_a_try_that_finds_every_check_busy_is_refused_with_503_and_not_counted(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    logins: Logins = app.state.logins
    release = threading.Event()
    busy = [
        logins.checks.try_start(partial(release.wait, 30))
        for _ in range(SETTINGS.login_concurrent_checks)
    ]
    try:
        assert logins.checks.try_start(release.is_set) is None
        refused = [
            await log_in(client, ADMIN, PASSWORD) for _ in range(SETTINGS.login_max_failures + 1)
        ]
    finally:
        release.set()
        await asyncio.gather(*(check for check in busy if check is not None))

    assert {answer.status_code for answer in refused} == {503}
    assert refused[0].headers["retry-after"] == "1"
    assert "checking other logins" in refused[0].text
    assert (await log_in(client, ADMIN, PASSWORD)).status_code == 303


async def test_an_earlier_scrypt_hash_lets_the_admin_in_and_is_replaced_by_argon2id(
    shop: FakeShop,
) -> None:
    settings = SETTINGS.model_copy(
        update={
            "admin_user": DEVELOPMENT_ADMIN_USER,
            "admin_password_hash": SecretStr(EARLIER_DEVELOPMENT_ADMIN_PASSWORD_HASH),
        }
    )
    app = build_app(settings, sources=shop.sources())
    logins: Logins = app.state.logins
    assert isinstance(logins.password_hash, ScryptHash)

    async with browser(app) as client:
        accepted = await log_in(client, DEVELOPMENT_ADMIN_USER, DEVELOPMENT_ADMIN_PASSWORD)
        page = await client.get(accepted.headers["location"], follow_redirects=True)

    assert accepted.status_code == 303
    assert "earlier scrypt format" in page.text
    assert isinstance(logins.password_hash, Argon2idHash)
    assert logins.password_hash.matches(DEVELOPMENT_ADMIN_PASSWORD)
    async with browser(app) as again:
        assert (await log_in(again, DEVELOPMENT_ADMIN_USER, "a wrong one")).status_code == 401
        accepted = await log_in(again, DEVELOPMENT_ADMIN_USER, DEVELOPMENT_ADMIN_PASSWORD)
        page = await again.get(accepted.headers["location"], follow_redirects=True)
    assert accepted.status_code == 303
    assert "earlier scrypt format" not in page.text
