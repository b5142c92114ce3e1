"""The console in a real browser: Debian's Chromium, headless, driven by Playwright, on the
console served by uvicorn and reading the real parts (the services' databases, Kafka, a
worker consuming as notification-service). An operator logs in (a wrong password first),
finds the dead letter this test made, redrives it with the keyboard alone, sees it succeed,
and reads the order's timeline. Screenshots of the pages land in ``.artifacts/console/``.

The browser is the system's (``apt-get install chromium``, which ``make test`` does when
it is missing): Playwright's own browser downloads are not used. Without it the test fails,
saying so; it never skips."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path
from typing import Final

import pytest
import uvicorn
from fastapi import FastAPI
from playwright.async_api import Page, async_playwright, expect

from shop.console.bootstrap import build_app
from shop.devstack.ports import free_port
from shop.messaging import MessagingSettings
from shop.messaging.testing import eventually, running, wait_until
from shop.ops.deadletters import DeadLetterEntry, list_dead_letters

from .conftest import (
    ADMIN,
    OPERATOR_TOKEN,
    PASSWORD,
    PlacedOrder,
    console_settings,
    internal_routes,
    ops_settings,
)
from .consumer import REFUSAL, RefusingConsumer

pytestmark = pytest.mark.browser

CHROMIUM: Final = Path(os.environ.get("SHOP_TEST_CHROMIUM", "/usr/bin/chromium"))
SCREENSHOTS: Final = Path(__file__).resolve().parents[4] / ".artifacts" / "console"
INVOICE: Final = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"


@pytest.fixture
def chromium() -> Path:
    """Debian's Chromium; asked for first, so that its absence fails the test before any
    server starts."""
    if not CHROMIUM.is_file():
        pytest.fail(
            f"no Chromium at {CHROMIUM}: the browser tests drive Debian's chromium package "
            "(`make test` installs it; by hand: apt-get install -y chromium), or set "
            "SHOP_TEST_CHROMIUM to another Chromium's executable",
            pytrace=False,
        )
    return CHROMIUM


@asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[str]:
    """``app`` served by uvicorn on a free port of this machine, for the block."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    )
    task = asyncio.create_task(server.serve())
    try:
        await wait_until(lambda: server.started or task.done(), what="the console to listen")
        if task.done():
            await task  # says why it could not start
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


def captured_email(folder: Path, order: PlacedOrder) -> None:
    """An e-mail as the development SMTP sink keeps it: one ``.eml`` file."""
    message = EmailMessage()
    message["To"] = order.customer_email
    message["From"] = "Skincare Shop <orders@shop.test>"
    message["Subject"] = f"Your order {order.number}"
    message["Date"] = format_datetime(order.event.placed_at)
    message.set_content(f"Thank you for your order {order.number}.")
    message.add_alternative(
        f"<html><body><h1 style='font-family:serif;color:#7a3e48'>Thank you</h1>"
        f"<p>Your order <b>{order.number}</b> is on its way to being packed.</p></body></html>",
        subtype="html",
    )
    message.add_attachment(
        INVOICE, maintype="application", subtype="pdf", filename=f"invoice-{order.number}.pdf"
    )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "00001.eml").write_bytes(bytes(message))


async def shoot(page: Page, name: str) -> None:
    await page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


async def tab_until(page: Page, selector: str, *, within: int = 40) -> list[str]:
    """Press Tab until the element matching ``selector`` has the focus; what had it on the
    way (its id, or its tag and text), in order. Fails when Tab never gets there."""
    visited = []
    for _ in range(within):
        await page.keyboard.press("Tab")
        visited.append(
            await page.evaluate(
                "() => { const e = document.activeElement; "
                "return e.id || `${e.tagName.toLowerCase()}:${e.textContent.trim()}`; }"
            )
        )
        if await page.evaluate(f"() => document.activeElement.matches({selector!r})"):
            return visited
    raise AssertionError(f"Tab never reached {selector} (it went through {visited})")


async def focus_is_visible(page: Page) -> bool:
    return bool(
        await page.evaluate(
            "() => { const s = getComputedStyle(document.activeElement); "
            "return s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 2; }"
        )
    )


async def log_in_after_a_refusal(page: Page, console: str) -> None:
    """A stranger is sent to the login form; a wrong password is refused, the right one
    opens the page that was asked for."""
    await page.goto(f"{console}/dead-letters")
    assert "/login?next=%2Fdead-letters" in page.url
    await page.get_by_label("User name").fill(ADMIN)
    await page.get_by_label("Password").fill("not the password")
    async with page.expect_response(f"{console}/login") as refusal:
        await page.get_by_role("button", name="Log in").click()
    assert (await refusal.value).status == 401
    await expect(page.get_by_role("alert")).to_contain_text("do not match")
    await shoot(page, "01-login-refused")

    await page.get_by_label("Password").fill(PASSWORD)
    await page.get_by_label("Password").press("Enter")
    await page.wait_for_url(f"{console}/dead-letters")


async def redrive_with_the_keyboard(
    page: Page, console: str, letter: DeadLetterEntry, consumer: RefusingConsumer
) -> None:
    """From the dead-letter list to the redrive's success with Tab and Enter alone: the
    skip link, the filter's fields in order, the letter's link, its redrive button, the
    confirmation; the focus visible at each step."""
    letter_page = f"{console}/dead-letters/notification-service/{letter.id}"
    await expect(page.get_by_role("link", name=f"Dead letter {letter.id} of")).to_be_visible()
    await expect(page.get_by_text(REFUSAL)).to_be_visible()
    await shoot(page, "02-dead-letters")

    assert await tab_until(page, ".skip-link") == ["a:Skip to content"]
    assert await focus_is_visible(page)
    await page.keyboard.press("Enter")
    visited = await tab_until(page, f'a[href="/dead-letters/notification-service/{letter.id}"]')
    assert visited[:5] == ["group", "message_type", "error_type", "text", "button:Filter"]
    assert await focus_is_visible(page)
    await page.keyboard.press("Enter")
    await page.wait_for_url(letter_page)
    await expect(page.get_by_role("heading", name=f"Dead letter {letter.id}")).to_be_visible()
    await expect(page.locator("pre.payload")).to_contain_text(str(letter.key))
    await shoot(page, "03-dead-letter")

    await tab_until(page, 'a[href$="/redrive"]')
    assert await focus_is_visible(page)
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{letter_page}/redrive")
    await shoot(page, "04-confirm-redrive")
    consumer.refusing = False  # what made it fail is mended: the redrive will succeed
    await tab_until(page, "form.confirm button[type=submit]")
    assert await focus_is_visible(page)
    await page.keyboard.press("Enter")
    await page.wait_for_url(f"{console}/dead-letters")
    await expect(page.get_by_role("status")).to_contain_text(
        f"Redriven: dead letter {letter.id} (order.created) went back to notification-service"
    )
    await shoot(page, "05-redriven")


async def follow_the_order(page: Page, console: str, order: PlacedOrder) -> None:
    """The order found by its number, and its timeline across the services."""
    await page.goto(f"{console}/orders")
    await page.get_by_label("Order id or number").fill(order.number)
    await page.get_by_label("Order id or number").press("Enter")
    await shoot(page, "07-orders")
    await page.get_by_role("link", name=order.number).click()
    await page.wait_for_url(f"{console}/orders/{order.id}")
    timeline = page.locator("ol.timeline")
    for what in (
        "order placed",
        "order.created added to the outbox",
        "order.created published",
        "e-mail sent: order_confirmation",
    ):
        await expect(timeline).to_contain_text(what)
    await shoot(page, "08-order-timeline")


async def read_the_email(page: Page, console: str, order: PlacedOrder) -> None:
    """The captured e-mail's HTML in its sandboxed frame, and its invoice downloaded."""
    await page.goto(f"{console}/mail")
    await shoot(page, "12-emails")
    await page.get_by_role("link", name=f"Your order {order.number}").click()
    frame = page.frame_locator("iframe.mail")
    await expect(frame.get_by_role("heading", name="Thank you")).to_be_visible()
    await shoot(page, "13-email")
    async with page.expect_download() as download:
        await page.get_by_role("link", name=f"invoice-{order.number}.pdf").click()
    saved = Path(str(await (await download.value).path()))
    assert await asyncio.to_thread(saved.read_bytes) == INVOICE


async def test_an_operator_finds_redrives_and_follows_a_dead_letter_in_the_browser(
    chromium: Path,
    *,
    service_databases: dict[str, str],
    internal_apis: dict[str, str],
    placed_order: PlacedOrder,
    messaging: MessagingSettings,
    tmp_path: Path,
) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    captured_email(tmp_path / "mail", placed_order)
    consumer = RefusingConsumer()
    health_port = free_port()
    # The consumer's worker stands in for notification-service's: it serves its internal API.
    notification_routes, engine = internal_routes("notification", service_databases["notification"])
    ops = ops_settings(
        internal_apis | {"notification": f"http://127.0.0.1:{health_port}"},
        messaging,
        mail_dir=tmp_path / "mail",
    )
    app = build_app(console_settings(environment="development"), ops)
    worker = consumer.worker(
        messaging,
        service_databases,
        health_port=health_port,
        routes=notification_routes,
        operator_token=OPERATOR_TOKEN,
    )

    async with (
        running(worker),
        serving(app) as console,
        async_playwright() as playwright,
    ):

        async def dead_lettered() -> bool:
            return len(await list_dead_letters(ops)) == 1

        await eventually(dead_lettered, within=90, what="the order's dead letter")
        (letter,) = await list_dead_letters(ops)
        browser = await playwright.chromium.launch(executable_path=str(chromium), headless=True)
        page = await browser.new_page(viewport={"width": 1280, "height": 860})

        await log_in_after_a_refusal(page, console)
        await redrive_with_the_keyboard(page, console, letter, consumer)

        async def emailed() -> bool:
            return consumer.sent == [placed_order.id]

        await eventually(emailed, within=60, what="the redriven message to be handled")
        await page.reload()
        await expect(page.get_by_text("No dead letters")).to_be_visible()
        await page.goto(f"{console}/consumers")
        group = page.get_by_role("rowheader", name="notification-service", exact=True)
        processed = page.locator("tr", has=group).first.locator("td").first
        await expect(processed).to_have_text("1")
        await shoot(page, "06-consumers")

        await follow_the_order(page, console, placed_order)
        for name, path in (
            ("09-outbox", "/outbox"),
            ("10-asyncapi", "/asyncapi"),
            ("11-asyncapi-order-service", "/asyncapi/order-service"),
        ):
            await page.goto(f"{console}{path}")
            await shoot(page, name)
        await read_the_email(page, console, placed_order)

        await page.get_by_role("button", name="Log out").click()
        await page.wait_for_url(f"{console}/login")
        await page.goto(f"{console}/orders")
        assert "/login?next=%2Forders" in page.url
        await browser.close()
    await engine.dispose()
