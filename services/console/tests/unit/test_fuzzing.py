"""The console fuzzed on fakes: every route the app serves, with every method it takes,
logged out and logged in, with generated path parameters, query strings and forms (odd
unicode, huge strings, numbers out of every range; CSRF tokens missing, changed, cut short,
of no session, sent in the query string, as a file or as JSON; session cookies dropped or
forged; bodies that are no form).

Whatever comes in: no 5xx; a stranger gets the login form, never a page; every redirect
stays on the console; and nothing changes, in the shop or in who is logged in, unless a POST
carries its session's CSRF token in its form. A form refused for its token is a 4xx.

The console serves no OpenAPI document (``openapi_url=None``: its routes are HTML pages and
forms), so there is nothing for schemathesis to read: hypothesis draws the requests from the
table below, and the first test holds that table to the routes the app serves.
"""

from __future__ import annotations

import functools
import itertools
import re
import string
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st
from starlette.routing import Mount

from shop.console.api.app import MAX_FORM_BYTES, SESSION_COOKIE
from shop.console.api.rendering import STATIC
from shop.console.api.security import CSRF_FIELD
from shop.console.bootstrap import build_app
from shop.console.service_layer.redrives import RedriveJobs

from .browsing import csrf_of, log_in
from .fakes import ADMIN, MAIL, ORDER_ID, PASSWORD, SETTINGS, FakeShop, letter

BASE = "http://console.test"
EXAMPLES = 20
"""Per route and login state: some 1,200 requests in all, in well under half a minute."""

# --- What the requests are made of --------------------------------------------------------

ODD_VALUES = (
    "",
    " ",
    ".",
    "..",
    "../../settings.py",
    "%",
    "%00",
    "%ff",
    "\x00",
    "\r\nSet-Cookie: session=forged",
    "\u202e\u0644\u0627",
    "\ufeff",
    "ǅ",
    "😀",
    "<script>alert(1)</script>",
    "{{ 7 * 7 }}",
    "' OR '1'='1",
    "//evil.example",
    "https://evil.example/",
    "/\\evil.example",
    "javascript:alert(1)",
    "-1",
    "-0",
    "1e309",
    "NaN",
    str(2**63),
    str(-(2**63) - 1),
    str(ORDER_ID).upper(),
    "00000000-0000-0000-0000-000000000000",
)
PAST_THE_BODY_LIMIT = "x" * (MAX_FORM_BYTES + 1)


def odd_text(*more: str, longest: int = 600) -> st.SearchStrategy[str]:
    """Text a route does not expect, ``more`` with it; the longest of it still fits in a URL
    (httpx refuses one past 64 KiB, a server far shorter), past every limit of the routes."""
    return st.one_of(
        st.sampled_from((*ODD_VALUES, *more)),
        # Any code point but a lone surrogate, which no client can encode.
        st.text(max_size=30),
        st.integers(min_value=-(10**40), max_value=10**40).map(str),
        st.floats().map(str),
        st.builds(
            lambda char, times: char * times,
            st.sampled_from("x€😀\u202e\x00"),
            st.integers(min_value=150, max_value=longest),
        ),
    )


form_text = odd_text(PAST_THE_BODY_LIMIT, longest=9_000)
"""A form field's value: the password's limit is 2,048 characters, the body's 64 KiB."""

RAW_SEGMENTS = ("%2F", "a%2Fb", "%00", "%ff", "%2e%2e", "%", "%%32%65")
"""Path parameters sent as they are, not encoded again: escapes the server decodes itself
(a slash, a NUL, a byte that is no UTF-8, a dot-dot), some of them malformed."""


def encoded(value: str) -> str:
    return quote(value, safe="")


def segment(*known: str) -> st.SearchStrategy[str]:
    """A path parameter as it goes in the URL: a value the fakes hold, an odd one, or raw
    escapes."""
    odd = odd_text().map(encoded) | st.sampled_from(RAW_SEGMENTS)
    return st.sampled_from(known).map(encoded) | odd if known else odd


def parameters(
    *known: dict[str, str], **each: st.SearchStrategy[str]
) -> st.SearchStrategy[dict[str, str]]:
    """A route's path parameters: half the time a set the fakes hold (a letter and its
    group only go together), else each drawn on its own."""
    apart = st.fixed_dictionaries(each)
    if not known:
        return apart
    held = st.sampled_from(known).map(lambda values: {k: encoded(v) for k, v in values.items()})
    return held | apart


@dataclass(frozen=True)
class Token:
    """The CSRF token a request carries, and where: the session's own (no ``text``, nothing
    changed or cut), that token altered, or another text altogether."""

    where: Literal["form", "file", "query", "nowhere"] = "form"
    text: str | None = None
    changed_at: int | None = None
    cut_to: int | None = None

    def value(self, sessions: str) -> str:
        if self.text is not None:
            return self.text
        if self.changed_at is not None:
            at = self.changed_at % len(sessions)
            other = "A" if sessions[at] != "A" else "B"
            return sessions[:at] + other + sessions[at + 1 :]
        if self.cut_to is not None:
            return sessions[: self.cut_to % len(sessions)]
        return sessions


THE_SESSIONS_TOKEN = Token()
COOKIES = ("kept", "dropped", "forged")

tokens = st.one_of(
    st.just(THE_SESSIONS_TOKEN),
    st.builds(Token, where=st.sampled_from(["file", "query", "nowhere"])),
    st.builds(Token, changed_at=st.integers(min_value=0, max_value=100)),
    st.builds(Token, cut_to=st.integers(min_value=0, max_value=100)),
    st.builds(
        Token,
        # Odd text, or a token as well made as the session's, of no session.
        text=odd_text()
        | st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=43, max_size=43),
    ),
)


@dataclass(frozen=True)
class Form:
    fields: dict[str, str]
    token: Token
    encoding: Literal["urlencoded", "multipart", "json"]


@dataclass(frozen=True)
class Bytes:
    """A body that is no form, sent as one or as something else."""

    content: bytes
    content_type: str | None


@dataclass(frozen=True)
class Call:
    """One request to a route: its path parameters (as they go in the URL), its query
    string, its body, and what became of the session cookie its client was given."""

    segments: dict[str, str]
    query: list[tuple[str, str]]
    body: Form | Bytes | None = None
    cookie: Literal["kept", "dropped", "forged"] = "kept"

    @property
    def carries_the_sessions_token(self) -> bool:
        return (
            isinstance(self.body, Form)
            and self.body.token == THE_SESSIONS_TOKEN
            and self.body.encoding != "json"
            and self.cookie == "kept"
        )


def bodies(form: Mapping[str, st.SearchStrategy[str]]) -> st.SearchStrategy[Form | Bytes]:
    fields = st.fixed_dictionaries({}, optional=dict(form)) | st.dictionaries(
        st.text(max_size=10).filter(lambda name: name != CSRF_FIELD), form_text, max_size=3
    )
    forms = st.builds(
        Form, fields=fields, token=tokens, encoding=st.sampled_from(["urlencoded", "multipart"])
    )
    return st.one_of(
        forms,
        forms,  # twice as likely as the rest: the forms are what this is about
        st.builds(Form, fields=fields, token=tokens, encoding=st.just("json")),
        st.builds(
            Bytes,
            content=st.binary(max_size=300),
            content_type=st.sampled_from(
                [
                    None,
                    "application/x-www-form-urlencoded",
                    "multipart/form-data",
                    "multipart/form-data; boundary=x",
                    "text/plain",
                ]
            ),
        ),
    )


# --- The routes, each with how it is fuzzed -----------------------------------------------


@dataclass(frozen=True)
class Effect:
    """What a form does when sent with its session's token: from a client logged in or
    not, to the path ``segments`` name, with ``fields``."""

    logged_in: bool = True
    segments: dict[str, str] = field(default_factory=dict)
    fields: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Fuzzed:
    """How one route is fuzzed: a strategy for its path parameters, the names its query
    string takes, its form fields (None: it takes no form) and what the form does, and
    whether a stranger may see it."""

    public: bool = False
    segments: st.SearchStrategy[dict[str, str]] = field(default_factory=lambda: st.just({}))
    query: tuple[str, ...] = ()
    form: Mapping[str, st.SearchStrategy[str]] | None = None
    effect: Effect | None = None


A_LETTER = {"group": "notification-service", "letter_id": "0-17"}
LETTER = parameters(
    A_LETTER,
    {"group": "order-service", "letter_id": "0-18"},
    {"group": "notification-service", "letter_id": "0-19"},
    group=segment("notification-service", "order-service"),
    letter_id=segment("0-17", "0-18", "0-19"),
)
"""The letters ``Console`` restocks, or a group and an id drawn apart."""
FILTER = ("group", "message_type", "error_type", "text")
SERVICE = parameters({"service": "order-service"}, service=segment("order-service"))
MAIL_NAME = {"name": MAIL.file_name}
STATIC_PATH = st.one_of(
    st.sampled_from(
        [
            "console.css",
            "favicon.svg",
            "../api/app.py",
            "%2e%2e/api/app.py",
            "..%2F..%2Fsettings.py",
            "%2e%2e%2f%2e%2e%2fsettings.py",
            "/etc/passwd",
            "%2Fetc%2Fpasswd",
        ]
    ),
    segment(),
)

FUZZED: dict[str, Fuzzed] = {
    "GET /login": Fuzzed(public=True, query=("next",)),
    "POST /login": Fuzzed(
        public=True,
        form={
            "username": st.just(ADMIN) | form_text,
            "password": st.just(PASSWORD) | form_text,
            "next": form_text,
        },
        effect=Effect(logged_in=False, fields={"username": ADMIN, "password": PASSWORD}),
    ),
    "POST /logout": Fuzzed(public=True, form={}, effect=Effect()),
    "GET /": Fuzzed(),
    "GET /orders": Fuzzed(query=("q",)),
    "GET /orders/{order_id}": Fuzzed(
        segments=parameters({"order_id": str(ORDER_ID)}, order_id=segment() | st.uuids().map(str))
    ),
    "GET /outbox": Fuzzed(),
    "GET /consumers": Fuzzed(),
    "GET /reconciliation": Fuzzed(),
    "POST /reconciliation": Fuzzed(form={}, effect=Effect()),
    "GET /dead-letters": Fuzzed(query=(*FILTER, "cursor")),
    "GET /dead-letters/redrive-matching": Fuzzed(query=FILTER),
    "POST /dead-letters/redrive-matching": Fuzzed(
        form=dict.fromkeys(FILTER, form_text), effect=Effect()
    ),
    "GET /dead-letters/redrives/{job_id}": Fuzzed(segments=parameters(job_id=segment())),
    "GET /dead-letters/{group}/{letter_id}": Fuzzed(segments=LETTER),
    "GET /dead-letters/{group}/{letter_id}/redrive": Fuzzed(segments=LETTER),
    "POST /dead-letters/{group}/{letter_id}/redrive": Fuzzed(
        segments=LETTER, form={}, effect=Effect(segments=A_LETTER)
    ),
    "GET /dead-letters/{group}/{letter_id}/purge": Fuzzed(segments=LETTER),
    "POST /dead-letters/{group}/{letter_id}/purge": Fuzzed(
        segments=LETTER, form={}, effect=Effect(segments=A_LETTER)
    ),
    "GET /asyncapi": Fuzzed(),
    "GET /asyncapi/{service}": Fuzzed(segments=SERVICE),
    "GET /asyncapi/{service}/document.json": Fuzzed(segments=SERVICE),
    "GET /mail": Fuzzed(),
    "GET /mail/{name}": Fuzzed(segments=parameters(MAIL_NAME, name=segment())),
    "GET /mail/{name}/html": Fuzzed(segments=parameters(MAIL_NAME, name=segment())),
    "GET /mail/{name}/pdf/{index}": Fuzzed(
        segments=parameters(
            {**MAIL_NAME, "index": "0"},
            name=segment(MAIL.file_name),
            index=segment("0", "1", "100", "101", "-1")
            | st.integers(min_value=-(10**30), max_value=10**30).map(str),
        )
    ),
    "GET /healthz": Fuzzed(public=True),
    "GET /readyz": Fuzzed(public=True),
    "GET /metrics": Fuzzed(public=True),
    "GET /static/{path}": Fuzzed(public=True, segments=parameters(path=STATIC_PATH)),
}
FORMS = [route for route, fuzzed in FUZZED.items() if fuzzed.form is not None]
STATIC_ROUTE = "GET /static/{path}"
STATIC_FILES = frozenset(path.read_bytes() for path in STATIC.rglob("*") if path.is_file())


@functools.cache
def calls(route: str, *, logged_in: bool) -> st.SearchStrategy[Call]:
    """The calls to ``route``, made once: a strategy is checked on its first use."""
    fuzzed = FUZZED[route]
    names = st.sampled_from((*fuzzed.query, "next", CSRF_FIELD)) | st.text(max_size=10)
    return st.builds(
        Call,
        segments=fuzzed.segments,
        query=st.lists(st.tuples(names, odd_text()), max_size=3),
        body=st.none() if fuzzed.form is None else bodies(fuzzed.form),
        # A logged-in client keeps its cookie: without it, it is a stranger, fuzzed as such.
        cookie=st.just("kept") if logged_in else st.sampled_from(COOKIES),
    )


def served_routes(app: FastAPI) -> set[str]:
    """Every ``METHOD /path`` the app answers: the routes of its routers one by one (they
    are nested in ``app.routes``), and each mounted folder as ``GET /folder/{path}``."""
    served: set[str] = set()
    for route in iter_route_contexts(app.routes):
        if isinstance(route.original_route, Mount):
            served.add(f"GET {route.path}/{{path}}")
        else:
            served.update(f"{method} {route.path}" for method in route.methods or ())
    return served


# --- The console on fakes, and one request to it ------------------------------------------


@dataclass(frozen=True)
class Seen:
    """What a request could change: the fakes' records, and whether its client is logged
    in."""

    letters: tuple[str, ...]
    redriven: tuple[tuple[str, str], ...]
    purged: tuple[tuple[str, str], ...]
    reconciled: bool
    logged_in: bool


@dataclass(frozen=True)
class Exchange:
    answer: httpx.Response
    before: Seen
    after: Seen


@dataclass(frozen=True)
class Session:
    """A browser's session cookie and the CSRF token of the pages it was shown."""

    cookies: httpx.Cookies
    token: str


class Console:
    """The console on fakes, shared by the examples (building it for each would cost more
    than the examples): the fakes are restocked before each one; each starts from the same
    browser session, logged in or a stranger's, and comes from an address of its own, so
    that one's failed logins never throttle another's."""

    def __init__(self) -> None:
        self.shop = FakeShop()
        self.app = build_app(SETTINGS, sources=self.shop.sources())
        self._addresses = itertools.count(1)
        self._sessions: dict[bool, Session] = {}

    async def exchange(self, route: str, call: Call, *, logged_in: bool) -> Exchange:
        self._restock()
        session = await self._session(logged_in=logged_in)
        async with self._client(session.cookies) as client:
            before = self._seen(logged_in=logged_in)
            method, path = route.split(" ", 1)
            answer = await client.request(
                method, path.format(**call.segments), **arguments(call, session.token, client)
            )
            await self._redrives_ended()
            # The login form sends whoever is logged in on, and shows itself to the others.
            login_form = await client.get("/login")
            after = self._seen(logged_in=login_form.status_code == 303)
        return Exchange(answer, before, after)

    def _restock(self) -> None:
        operations = self.shop.operations
        operations.letters = [
            letter("0-17"),
            letter("0-18", group="order-service", error_type="TimeoutError"),
            letter("0-19", truncated=True),
        ]
        operations.mails = [MAIL]
        operations.redriven, operations.purged, operations.redrive_rates = [], [], []
        operations.reconciled = None

    @asynccontextmanager
    async def _client(
        self, cookies: httpx.Cookies | None = None
    ) -> AsyncIterator[httpx.AsyncClient]:
        address = f"2001:db8::{next(self._addresses):x}"
        transport = httpx.ASGITransport(app=self.app, client=(address, 50_000))
        async with httpx.AsyncClient(transport=transport, base_url=BASE, cookies=cookies) as client:
            yield client

    async def _session(self, *, logged_in: bool) -> Session:
        """A session logged in, or a stranger's that only read the login form; made once
        (the session lives in its signed cookie: each example's client gets a copy)."""
        if logged_in not in self._sessions:
            async with self._client() as client:
                if logged_in:
                    assert (await log_in(client, ADMIN, PASSWORD)).status_code == 303
                    token = csrf_of(await client.get("/outbox"))
                else:
                    token = csrf_of(await client.get("/login"))
                self._sessions[logged_in] = Session(httpx.Cookies(client.cookies), token)
        return self._sessions[logged_in]

    def _seen(self, *, logged_in: bool) -> Seen:
        operations = self.shop.operations
        return Seen(
            letters=tuple(entry.id for entry in operations.letters),
            redriven=tuple(operations.redriven),
            purged=tuple(operations.purged),
            reconciled=operations.reconciled is not None,
            logged_in=logged_in,
        )

    async def _redrives_ended(self) -> None:
        # A redrive of every matching letter runs after its answer: what it changes is only
        # seen once it ends.
        jobs: RedriveJobs = self.app.state.redrives
        while (running := jobs.running) is not None:
            await jobs.wait(running)


def arguments(call: Call, token: str, client: httpx.AsyncClient) -> dict[str, Any]:
    """``httpx`` arguments for ``call`` from ``client``, whose session's token is ``token``."""
    params = list(call.query)
    headers = cookie_header(call, client)
    body: dict[str, Any] = {}
    if isinstance(call.body, Bytes):
        body["content"] = call.body.content
        if call.body.content_type is not None:
            headers["content-type"] = call.body.content_type
    elif isinstance(call.body, Form):
        fields = dict(call.body.fields)
        files: list[tuple[str, tuple[str | None, str | bytes, str | None]]] = []
        sent = call.body.token.value(token)
        match call.body.token.where:
            case "form":
                fields[CSRF_FIELD] = sent
            case "file":
                files.append((CSRF_FIELD, ("csrf_token.txt", sent.encode(), "text/plain")))
            case "query":
                params.append((CSRF_FIELD, sent))
            case "nowhere":
                pass
        if call.body.encoding == "json":
            body["json"] = fields
        elif call.body.encoding == "multipart" or files:
            body["files"] = [(name, (None, value, None)) for name, value in fields.items()] + files
        else:
            body["data"] = fields
    return {"params": params, "headers": headers, **body}


def cookie_header(call: Call, client: httpx.AsyncClient) -> dict[str, str]:
    """Drop the session cookie, or send it forged (its signed content changed): the session
    is then empty to the console, whatever the form carries."""
    if call.cookie == "kept":
        return {}
    cookie = client.cookies[SESSION_COOKIE]
    client.cookies.clear()
    if call.cookie == "dropped":
        return {}
    forged = ("A" if cookie[0] != "A" else "B") + cookie[1:]
    return {"cookie": f"{SESSION_COOKIE}={forged}"}


# --- What every answer must be ------------------------------------------------------------


def sent_to_the_login_form(answer: httpx.Response) -> bool:
    return answer.status_code == 303 and answer.headers["location"].startswith("/login?next=")


def sent_back_where_it_was(answer: httpx.Response) -> bool:
    """The login form, once passed, leads to what was asked for."""
    back_to = httpx.URL(answer.headers["location"]).params["next"]
    return where_a_browser_goes(back_to) == where_a_browser_goes(
        answer.request.url.raw_path.decode("ascii")
    )


def where_a_browser_goes(target: str) -> tuple[str, str]:
    """The path (decoded) and the query of ``target`` once a browser resolved it: in the
    path, ``%2e`` is a dot, and dot segments are followed."""
    path, _, query = target.partition("?")
    url = httpx.URL(BASE).join(re.sub("%2e", ".", path, flags=re.IGNORECASE))
    return url.path, query


def stays_on_the_console(answer: httpx.Response) -> bool:
    """No redirect, or one to the console: no other host, nor what a browser would take
    for one (``/\\host`` is ``//host`` to a browser)."""
    location = answer.headers.get("location")
    if location is None:
        return True
    return httpx.URL(BASE).join(location).host == "console.test" and "\\" not in location


def keeps_the_page_from_a_stranger(answer: httpx.Response) -> bool:
    """The login form, a refusal (4xx: malformed, too large, no such route), or the router's
    redirect from a path with a trailing slash no route has to the same path without it
    (where the login form waits)."""
    if sent_to_the_login_form(answer):
        return sent_back_where_it_was(answer)
    if 400 <= answer.status_code < 500:
        return True
    asked = answer.request.url.path
    return (
        answer.status_code == 307
        and asked.endswith("/")
        and httpx.URL(answer.headers["location"]).path == asked.rstrip("/")
    )


# --- The tests ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def console() -> Console:
    return Console()


def test_every_route_the_console_serves_is_fuzzed(console: Console) -> None:
    served = served_routes(console.app)

    # The routers' routes were found, not only the routers that hold them.
    assert "GET /dead-letters/{group}/{letter_id}" in served
    assert sorted(served - FUZZED.keys()) == [], "served but not fuzzed: add them to FUZZED"
    assert sorted(FUZZED.keys() - served) == [], "fuzzed but no longer served"


@pytest.mark.parametrize("route", FORMS)
async def test_each_form_with_its_sessions_token_changes_what_the_fuzzing_sees(
    console: Console, route: str
) -> None:
    """So that "nothing changed" below is a check: the same forms, with the token, do."""
    effect = FUZZED[route].effect
    assert effect is not None, f"{route} is a form: say what it does in FUZZED"
    call = Call(
        segments=effect.segments,
        query=[],
        body=Form(effect.fields, THE_SESSIONS_TOKEN, "urlencoded"),
    )

    exchange = await console.exchange(route, call, logged_in=effect.logged_in)

    assert exchange.answer.status_code == 303
    assert exchange.after != exchange.before


def without_the_sessions_token(effect: Effect) -> st.SearchStrategy[Call]:
    """The form of ``effect`` as it is, but for its token, its encoding or, for a
    stranger's, its session cookie: anything but the session's token in its form."""
    return st.builds(
        Call,
        segments=st.just(effect.segments),
        query=st.just([]),
        body=st.builds(
            Form,
            fields=st.just(effect.fields),
            token=tokens,
            encoding=st.sampled_from(["urlencoded", "multipart", "json"]),
        ),
        cookie=st.just("kept") if effect.logged_in else st.sampled_from(COOKIES),
    ).filter(lambda call: not call.carries_the_sessions_token)


@pytest.mark.parametrize("route", FORMS)
@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
async def test_the_same_form_without_its_sessions_token_is_refused_and_changes_nothing(
    console: Console, route: str, data: st.DataObject
) -> None:
    effect = FUZZED[route].effect
    assert effect is not None
    call = data.draw(without_the_sessions_token(effect), label="call")

    exchange = await console.exchange(route, call, logged_in=effect.logged_in)

    assert 400 <= exchange.answer.status_code < 500
    assert exchange.after == exchange.before


@pytest.mark.parametrize("escaped", ["%2500", "%25ff", "50%25"])
async def test_a_stranger_is_sent_back_to_a_url_with_an_escaped_percent_sign_as_it_was(
    console: Console, escaped: str
) -> None:
    """Found by the fuzzing: the login form's way back was the path decoded (``%2500``
    became ``%00``), and led to another URL than the one asked for."""
    call = Call(segments={"group": "order-service", "letter_id": escaped}, query=[])

    exchange = await console.exchange(
        "GET /dead-letters/{group}/{letter_id}", call, logged_in=False
    )

    back_to = httpx.URL(exchange.answer.headers["location"]).params["next"]
    assert back_to == f"/dead-letters/order-service/{escaped}"


@pytest.mark.parametrize("logged_in", [False, True], ids=["logged out", "logged in"])
@pytest.mark.parametrize("route", list(FUZZED))
@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
async def test_no_request_gets_a_5xx_a_stranger_a_page_or_a_form_without_its_token_a_change(
    console: Console, route: str, logged_in: bool, data: st.DataObject
) -> None:
    fuzzed = FUZZED[route]
    call = data.draw(calls(route, logged_in=logged_in), label="call")

    exchange = await console.exchange(route, call, logged_in=logged_in)

    answer = exchange.answer
    note(f"{answer.request.method} {answer.request.url} -> {answer.status_code}")
    note(f"location: {answer.headers.get('location')}")
    event(
        f"answered {answer.status_code}",
        "with the token" if call.carries_the_sessions_token else "",
    )
    assert answer.status_code < 500, answer.text
    assert stays_on_the_console(answer)
    if not fuzzed.public:
        if logged_in:
            assert not sent_to_the_login_form(answer)
        else:
            assert keeps_the_page_from_a_stranger(answer)
    if not call.carries_the_sessions_token:
        assert exchange.after == exchange.before
        if fuzzed.form is not None:
            assert 400 <= answer.status_code < 500 or (
                not fuzzed.public and not logged_in and sent_to_the_login_form(answer)
            )
    if route == STATIC_ROUTE and answer.status_code == 200:
        assert answer.content in STATIC_FILES
