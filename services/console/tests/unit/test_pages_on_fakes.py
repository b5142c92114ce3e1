"""The pages wired by ``bootstrap`` to fakes: what each shows, the confirmation before a
redrive or a purge, the message after it, and the refusals as pages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx
import pytest

from shop.console.bootstrap import build_app
from shop.console.ports import LetterQuery
from shop.console.settings import ConsoleSettings
from shop.ops.errors import Unreachable
from shop.ops.timeline import TimelineEntry
from shop.ops.traces import Span, as_traces

from .browsing import csrf_of, log_in
from .fakes import ADMIN, MAIL, NOW, ORDER, ORDER_ID, PASSWORD, SETTINGS, FakeShop, letter


@pytest.fixture
def shop() -> FakeShop:
    return FakeShop()


@asynccontextmanager
async def logged_in(settings: ConsoleSettings, shop: FakeShop) -> AsyncIterator[httpx.AsyncClient]:
    app = build_app(settings, sources=shop.sources())
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://console.test"
    ) as client:
        await log_in(client, ADMIN, PASSWORD)
        yield client


@pytest.fixture
async def client(shop: FakeShop) -> AsyncIterator[httpx.AsyncClient]:
    async with logged_in(SETTINGS, shop) as client:
        yield client


async def test_the_start_page_is_the_orders(client: httpx.AsyncClient) -> None:
    answer = await client.get("/")

    assert (answer.status_code, answer.headers["location"]) == (303, "/orders")


async def test_orders_are_found_by_number_and_link_to_their_page(
    client: httpx.AsyncClient,
) -> None:
    found = await client.get("/orders", params={"q": "7kq4"})
    missing = await client.get("/orders", params={"q": "SK-NONE"})

    assert f'href="/orders/{ORDER_ID}"' in found.text
    assert "250,000 IDR" in found.text
    assert "No order has the id or a number containing" in missing.text


async def test_an_order_page_shows_its_status_and_its_timeline_in_order(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.timeline = [
        TimelineEntry(NOW, "order-service", "order placed", "SK-7KQ4-M2XD"),
        TimelineEntry(
            NOW + timedelta(seconds=1), "order-service", "order.created published", "event 1"
        ),
        TimelineEntry(
            NOW + timedelta(seconds=3),
            "notification-service",
            "e-mail sent: order_confirmation",
            "to a***@example.com",
        ),
    ]

    page = await client.get(f"/orders/{ORDER_ID}")

    assert page.status_code == 200
    assert ORDER.number in page.text
    assert 'class="status status-paid"' in page.text
    placed = page.text.index("order placed")
    published = page.text.index("order.created published")
    emailed = page.text.index("e-mail sent: order_confirmation")
    assert placed < published < emailed


def span(span_id: str, parent: str | None, name: str, at: float, **fields: Any) -> Span:
    start = NOW + timedelta(seconds=at)
    defaults: dict[str, Any] = {
        "trace_id": "ab" * 16,
        "span_id": span_id,
        "parent_span_id": parent,
        "name": name,
        "kind": "INTERNAL",
        "service": "order-service",
        "process_kind": "api",
        "pid": 1,
        "start": start,
        "end": start + timedelta(milliseconds=12),
        "status": "UNSET",
        "status_message": None,
        "attributes": {},
    }
    return Span(**{**defaults, **fields})


async def test_an_order_page_shows_its_traces_in_call_order_and_marks_failures(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.traces = as_traces(
        [
            span("1" * 16, None, "POST /v1/orders", 0, kind="SERVER"),
            span("2" * 16, "1" * 16, "send order.created", 0.2, kind="PRODUCER", pid=2),
            span(
                "3" * 16,
                "2" * 16,
                "process order.created",
                0.5,
                kind="CONSUMER",
                service="notification-service",
                process_kind="worker",
                pid=3,
                status="ERROR",
                status_message="SMTPServerDisconnected",
            ),
        ]
    )

    page = await client.get(f"/orders/{ORDER_ID}")

    assert page.status_code == 200
    assert f"Trace <code>{'ab' * 16}</code>" in page.text
    assert "3 spans in 3 processes" in page.text
    request, send, process = (
        page.text.index(name)
        for name in ("POST /v1/orders", "send order.created", "process order.created")
    )
    assert request < send < process
    assert 'class="depth-2"><span class="kind">consumer</span> process order.created' in page.text
    assert "error: SMTPServerDisconnected" in page.text
    assert "+500 ms" in page.text


async def test_an_order_page_without_a_trace_folder_has_no_trace_section(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get(f"/orders/{ORDER_ID}")

    assert page.status_code == 200
    assert "Traces" not in page.text


async def test_an_order_whose_timeline_cannot_be_read_still_shows_its_status(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.timeline_failure = Unreachable("payment-service's database", "db")

    page = await client.get(f"/orders/{ORDER_ID}")

    assert page.status_code == 200
    assert 'class="status status-paid"' in page.text
    assert "The timeline could not be read: cannot reach payment-service&#39;s database" in (
        page.text
    )


async def test_an_unknown_order_is_a_404_page_and_a_malformed_id_a_422_page(
    client: httpx.AsyncClient,
) -> None:
    unknown = await client.get("/orders/6f1d4a7e-0000-4000-8000-000000000000")
    malformed = await client.get("/orders/not-an-id")

    assert unknown.status_code == 404
    assert "has no order" in unknown.text
    assert malformed.status_code == 422
    assert "text/html" in malformed.headers["content-type"]


async def test_the_outbox_page_shows_each_services_backlog(client: httpx.AsyncClient) -> None:
    page = await client.get("/outbox")

    assert page.status_code == 200
    assert "order-service" in page.text
    assert "1 min 15 s" in page.text
    assert 'class="attention"' in page.text


async def test_the_consumers_page_shows_counts_and_lag(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.letters.append(letter())

    page = await client.get("/consumers")

    assert page.status_code == 200
    assert "shop-order-created" in page.text
    assert 'href="/dead-letters?group=notification-service"' in page.text
    assert '<span class="attention">smtp open</span>' in page.text


async def test_a_worker_or_a_broker_that_does_not_answer_leaves_the_rest_on_the_page(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.unreachable_workers = ["cannot reach payment-service's worker at x"]
    shop.operations.lag_failure = Unreachable("the Kafka broker", "127.0.0.1:9")

    page = await client.get("/consumers")

    assert page.status_code == 200
    assert "cannot reach payment-service&#39;s worker at x" in page.text
    assert "The lag could not be read: cannot reach the Kafka broker at 127.0.0.1:9" in page.text
    assert "notification-service" in page.text


async def test_a_part_that_cannot_be_reached_is_a_503_page_naming_it(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.failure = Unreachable("order-service's database", "postgresql://db/order")

    page = await client.get("/outbox")

    assert page.status_code == 503
    assert "cannot reach order-service&#39;s database at postgresql://db/order" in page.text


async def test_the_dead_letter_list_filters_and_links_each_letter(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.letters += [
        letter("0-1"),
        letter(
            "0-2",
            group="order-service",
            message_type="payment.received",
            error_type="ValidationError",
            error_message="amount is negative",
        ),
    ]

    everything = await client.get("/dead-letters")
    filtered = await client.get(
        "/dead-letters", params={"group": "order-service", "text": "NEGATIVE"}
    )

    assert 'href="/dead-letters/notification-service/0-1"' in everything.text
    assert 'href="/dead-letters/order-service/0-2"' in everything.text
    assert 'href="/dead-letters/notification-service/0-1"' not in filtered.text
    assert 'href="/dead-letters/order-service/0-2"' in filtered.text
    assert '<option value="order-service" selected>' in filtered.text
    for field in ("group", "message_type", "error_type", "text"):
        assert f'<label for="{field}">' in everything.text


async def test_the_dead_letter_list_shows_a_page_and_links_the_next_by_its_cursor(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.page_size = 2
    shop.operations.letters += [letter(f"0-{n}") for n in range(3)]

    first = await client.get("/dead-letters")
    second = await client.get("/dead-letters", params={"cursor": "notification-service/2"})
    foreign = await client.get("/dead-letters", params={"cursor": "../../etc/passwd"})

    assert "2 dead letters on this page" in first.text
    assert 'href="/dead-letters/notification-service/0-2"' not in first.text
    assert "cursor=notification-service/2" in first.text
    assert 'href="/dead-letters/notification-service/0-2"' in second.text
    assert "Next page" not in second.text
    assert foreign.status_code == 422


async def test_a_malformed_dead_letter_is_listed_and_shown_with_what_was_wrong(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    bad = replace(letter("0-3"), problems=("x-dead-letter-attempts='x' is not a whole number",))
    shop.operations.letters += [letter("0-1"), bad]

    listed = await client.get("/dead-letters")
    shown = await client.get("/dead-letters/notification-service/0-3")

    assert 'href="/dead-letters/notification-service/0-1"' in listed.text
    assert listed.text.count(">malformed</span>") == 1
    assert "x-dead-letter-attempts=&#39;x&#39; is not a whole number" in shown.text


async def test_a_dead_letter_shows_its_payload_pretty_its_headers_error_and_times(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.letters.append(letter("0-17"))

    page = await client.get("/dead-letters/notification-service/0-17")

    assert page.status_code == 200
    assert "&#34;type&#34;: &#34;order.created&#34;," in page.text  # indented JSON, escaped
    assert "x-correlation-id" in page.text
    assert "the e-mail provider refused the address" in page.text
    assert "2025-03-14 09:30:05 UTC" in page.text
    assert 'href="/dead-letters/notification-service/0-17/redrive"' in page.text


async def test_a_body_that_is_not_json_is_shown_as_it_is(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.letters.append(letter("0-3", body=b"\xff\xfe<not json>", message_type=None))

    page = await client.get("/dead-letters/notification-service/0-3")

    assert "(binary," in page.text
    assert "\\xff\\xfe&lt;not json&gt;" in page.text


async def test_a_redrive_asks_first_then_sends_the_letter_back_and_says_so(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.letters.append(letter("0-17"))

    confirmation = await client.get("/dead-letters/notification-service/0-17/redrive")
    assert confirmation.status_code == 200
    assert shop.operations.redriven == []
    assert "goes back to <strong>notification-service</strong> alone" in confirmation.text

    done = await client.post(
        "/dead-letters/notification-service/0-17/redrive",
        data={"csrf_token": csrf_of(confirmation)},
    )
    assert (done.status_code, done.headers["location"]) == (303, "/dead-letters")
    assert shop.operations.redriven == [("notification-service", "0-17")]
    after = await client.get("/dead-letters")
    assert "Redriven: dead letter 0-17 (order.created) went back to notification-service" in (
        after.text
    )
    assert "No dead letters" in after.text


async def test_redriving_a_letter_already_gone_is_a_404_page(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    page = await client.get("/dead-letters")

    gone = await client.post(
        "/dead-letters/notification-service/0-99/redrive", data={"csrf_token": csrf_of(page)}
    )

    assert gone.status_code == 404
    assert "has no dead letter" in gone.text


async def test_a_truncated_letter_offers_no_redrive(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.letters.append(letter("0-5", truncated=True))

    page = await client.get("/dead-letters/notification-service/0-5")

    assert "cannot be redriven" in page.text
    assert "/0-5/redrive" not in page.text
    assert "/0-5/purge" in page.text


async def test_a_purge_asks_first_then_removes_the_letter(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.letters.append(letter("0-17"))

    confirmation = await client.get("/dead-letters/notification-service/0-17/purge")
    assert "for good" in confirmation.text
    done = await client.post(
        "/dead-letters/notification-service/0-17/purge",
        data={"csrf_token": csrf_of(confirmation)},
    )

    assert done.status_code == 303
    assert shop.operations.purged == [("notification-service", "0-17")]
    assert (
        "Purged: dead letter 0-17 of notification-service deleted from notification-service"
        "&#39;s store, body and all (1 deleted)." in (await client.get("/dead-letters")).text
    )


async def page_once_ended(client: httpx.AsyncClient, job_page: str) -> httpx.Response:
    """The job's page once it no longer says it is running (as a browser refreshing it)."""
    for _ in range(200):
        page = await client.get(job_page)
        if "Redrive running" not in page.text:
            return page
        await asyncio.sleep(0.01)
    raise AssertionError(f"{job_page} still running")


async def test_redriving_every_matching_letter_keeps_the_filter_and_the_rate(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.letters += [
        letter("0-1"),
        letter("0-2", error_type="TimeoutError"),
        letter("0-3", truncated=True),
    ]

    confirmation = await client.get(
        "/dead-letters/redrive-matching", params={"error_type": "PermanentError"}
    )
    assert "Redrive 1 dead letter?" in confirmation.text
    assert "1 kept truncated cannot be redriven" in confirmation.text
    done = await client.post(
        "/dead-letters/redrive-matching",
        data={"csrf_token": csrf_of(confirmation), "error_type": "PermanentError"},
    )

    # It runs in the background; its page follows it, refreshing until it ends.
    assert done.status_code == 303
    job_page = done.headers["location"]
    assert job_page.startswith("/dead-letters/redrives/")
    page = await page_once_ended(client, job_page)
    assert shop.operations.redriven == [("notification-service", "0-1")]
    assert shop.operations.redrive_rates == [SETTINGS.redrive_per_second]
    assert "Redrive done" in page.text
    assert "every dead letter with error PermanentError" in page.text
    assert "Redrove 1 dead letter to their consumers." in page.text
    assert 'http-equiv="refresh"' not in page.text


async def test_a_running_redrive_refreshes_its_page_and_a_failed_one_says_why(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.letters.append(letter("0-1"))
    release = asyncio.Event()
    redrive = shop.operations.redrive_matching

    async def slow_then_unreachable(query: LetterQuery, *, per_second: float) -> int:
        await release.wait()
        raise Unreachable("the broker", "kafka")

    shop.operations.redrive_matching = slow_then_unreachable  # type: ignore[method-assign]
    form = await client.get("/dead-letters/redrive-matching")
    started = await client.post(
        "/dead-letters/redrive-matching", data={"csrf_token": csrf_of(form)}
    )
    running = await client.get(started.headers["location"])
    again = await client.post("/dead-letters/redrive-matching", data={"csrf_token": csrf_of(form)})
    shown = await client.get(again.headers["location"])
    release.set()
    failed = await page_once_ended(client, started.headers["location"])
    shop.operations.redrive_matching = redrive  # type: ignore[method-assign]

    assert "Redrive running" in running.text
    assert '<meta http-equiv="refresh" content="2">' in running.text
    # One at a time: a second click starts nothing and shows the running one.
    assert again.headers["location"] == started.headers["location"]
    assert "Nothing started: a redrive is running already" in shown.text
    assert "Redrive failed" in failed.text
    assert "The redrive stopped: cannot reach the broker" in failed.text
    assert (await client.get("/dead-letters/redrives/unknown-job")).status_code == 404


async def test_the_asyncapi_pages_show_channels_operations_and_payload_fields(
    client: httpx.AsyncClient,
) -> None:
    index = await client.get("/asyncapi")
    document = await client.get("/asyncapi/order-service")
    raw = await client.get("/asyncapi/order-service/document.json")
    unknown = await client.get("/asyncapi/nobody")

    assert 'href="/asyncapi/order-service"' in index.text
    assert "shop-order-created" in document.text
    assert "<code>payload.order_number</code>" in document.text
    assert "Human-readable order number." in document.text
    assert raw.json()["asyncapi"] == "3.0.0"
    assert unknown.status_code == 404


async def test_captured_mails_are_listed_with_their_html_sandboxed_and_their_pdf(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.mails.append(MAIL)

    listed = await client.get("/mail")
    page = await client.get("/mail/00001.eml")
    html = await client.get("/mail/00001.eml/html")
    pdf = await client.get("/mail/00001.eml/pdf/0")

    assert 'href="/mail/00001.eml"' in listed.text
    frame = page.text[page.text.index("<iframe") :].split(">", 1)[0]
    assert 'src="/mail/00001.eml/html"' in frame
    assert " sandbox" in frame
    assert "script-src" not in html.headers["content-security-policy"]
    assert "sandbox" in html.headers["content-security-policy"]
    assert pdf.headers["content-type"] == "application/pdf"
    assert pdf.content == MAIL.pdfs[0].content
    assert 'filename="invoice-SK-7KQ4-M2XD.pdf"' in pdf.headers["content-disposition"]


async def test_captured_mails_do_not_exist_outside_development(shop: FakeShop) -> None:
    shop.operations.mails.append(MAIL)
    settings = SETTINGS.model_copy(update={"environment": "test"})

    async with logged_in(settings, shop) as client:
        page = await client.get("/mail")
        orders = await client.get("/orders")

    assert page.status_code == 404
    assert 'href="/mail"' not in orders.text


async def test_every_page_has_a_skip_link_and_keeps_itself_out_of_caches_and_frames(
    client: httpx.AsyncClient,
) -> None:
    page = await client.get("/dead-letters")

    assert page.text.index('class="skip-link" href="#content"') < page.text.index("<nav")
    assert 'id="content"' in page.text
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert "<script" not in page.text


async def test_the_reconciliation_page_says_none_ran_then_runs_one_and_shows_its_drift(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    page = await client.get("/reconciliation")
    assert page.status_code == 200
    assert "No reconciliation has run" in page.text

    done = await client.post("/reconciliation", data={"csrf_token": csrf_of(page)})
    assert (done.status_code, done.headers["location"]) == (303, "/reconciliation")

    shown = await client.get("/reconciliation")
    assert "Reconciled 12 payments" in shown.text
    assert "settlement_missed" in shown.text
    assert "/orders/6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f" in shown.text


async def test_reconciling_needs_the_forms_csrf_token(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    refused = await client.post("/reconciliation", data={})
    assert refused.status_code == 403
    assert shop.operations.reconciled is None


async def test_a_payment_worker_that_does_not_answer_is_said_on_the_reconciliation_page(
    client: httpx.AsyncClient, shop: FakeShop
) -> None:
    shop.operations.failure = Unreachable("payment-service's worker", "http://127.0.0.1:9")

    page = await client.get("/reconciliation")

    assert page.status_code == 200
    assert "could not be read: cannot reach payment-service&#39;s worker" in page.text
