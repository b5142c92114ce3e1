"""The order e-mails: what each one says, in both of its parts, and that no product name or
reason can inject markup into the HTML part."""

from __future__ import annotations

from typing import Any

import pytest
from jinja2 import DictLoader, UndefinedError

from shop.contracts import OrderCancelled, OrderCreated, OrderPaid
from shop.contracts.examples import examples
from shop.contracts.orders import OrderFacts
from shop.notification.domain.emails import EMAILS
from shop.notification.domain.rendering import (
    EmailRenderer,
    RenderedEmail,
    ShopIdentity,
    template_environment,
)

SHOP = ShopIdentity(
    name="Glow Lab",
    address="Jl. Kemang Raya 12, Jakarta Selatan 12730",
    support_email="help@glowlab.example",
    website="https://glowlab.example",
)
HOSTILE_NAME = '<b>Bright</b> & "Clear" Toner'


def render(kind: str, event: OrderFacts, renderer: EmailRenderer | None = None) -> RenderedEmail:
    [email] = [email for email in EMAILS if email.kind == kind]
    return (renderer or EmailRenderer(SHOP)).render(email, event)


def example(contract: type[OrderFacts], **changes: Any) -> OrderFacts:
    """The contracts' example event, changed and validated again."""
    event = examples()[contract]
    return contract.model_validate({**event.model_dump(), **changes})


KINDS = [
    ("order_confirmation", OrderCreated, "Order SK-7KQ4-M2XD confirmed"),
    ("payment_receipt", OrderPaid, "Receipt for order SK-7KQ4-M2XD"),
    ("order_cancellation", OrderCancelled, "Order SK-7KQ4-M2XD cancelled"),
]


@pytest.mark.parametrize(("kind", "contract", "subject"), KINDS)
def test_each_email_has_its_subject(kind: str, contract: type[OrderFacts], subject: str) -> None:
    assert render(kind, example(contract)).subject == subject


@pytest.mark.parametrize(("kind", "contract", "subject"), KINDS)
def test_both_parts_show_the_order_its_lines_and_total(
    kind: str, contract: type[OrderFacts], subject: str
) -> None:
    email = render(kind, example(contract))
    for part in (email.text, email.html):
        assert "SK-7KQ4-M2XD" in part
        assert "Niacinamide 10% Serum 30 ml" in part
        assert "Sunscreen SPF 50 PA++++ 50 ml" in part
        assert "Rp 89.000" in part  # unit price of the serum
        assert "Rp 178.000" in part  # two serums
        assert "Rp 72.000" in part
        assert "Rp 250.000" in part
        assert "2 December 2026, 16:30 WIB" in part
        assert "help@glowlab.example" in part
        assert "Jl. Kemang Raya 12, Jakarta Selatan 12730" in part
    assert f"<title>{subject}</title>" in email.html


@pytest.mark.parametrize(("kind", "contract", "subject"), KINDS)
def test_the_html_part_is_a_whole_document_with_nothing_to_fetch(
    kind: str, contract: type[OrderFacts], subject: str
) -> None:
    html = render(kind, example(contract)).html
    assert html.startswith("<!DOCTYPE html>")
    assert html.rstrip().endswith("</html>")
    for external in ("<img", "<link", "<script", "src=", "url("):
        assert external not in html


@pytest.mark.parametrize(("kind", "contract", "subject"), KINDS)
def test_the_text_part_has_no_markup(kind: str, contract: type[OrderFacts], subject: str) -> None:
    text = render(kind, example(contract)).text
    assert "<" not in text
    assert "&amp;" not in text
    assert text.startswith("Hello,")


def test_the_confirmation_says_that_payment_is_awaited() -> None:
    email = render("order_confirmation", example(OrderCreated))
    assert "waiting for your payment" in email.text
    assert "waiting for your payment" in email.html


def test_the_receipt_names_the_payment_and_the_attached_invoice() -> None:
    email = render("payment_receipt", example(OrderPaid))
    for part in (email.text, email.html):
        assert "received your payment" in part
        assert "PAY-88231" in part
        assert "invoice is attached" in part


def test_the_cancellation_gives_the_reason_and_promises_a_refund() -> None:
    email = render("order_cancellation", example(OrderCancelled))
    for part in (email.text, email.html):
        assert "cancelled by the customer" in part
        assert "If you have already paid for this order, the refund of Rp 250.000 follows" in part


@pytest.mark.parametrize(("kind", "contract", "subject"), KINDS)
def test_a_product_name_cannot_inject_markup(
    kind: str, contract: type[OrderFacts], subject: str
) -> None:
    line = {"sku": "TONER-1", "name": HOSTILE_NAME, "quantity": 1, "unit_price": 65000}
    email = render(kind, example(contract, lines=[line], total=65000))
    assert "&lt;b&gt;Bright&lt;/b&gt; &amp; &#34;Clear&#34; Toner" in email.html
    assert "<b>Bright" not in email.html
    # The plain-text part is not HTML: escaping it would show the customer "&amp;".
    assert HOSTILE_NAME in email.text


def test_a_cancellation_reason_cannot_inject_markup() -> None:
    reason = "<script>alert(1)</script>"
    email = render("order_cancellation", example(OrderCancelled, reason=reason))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in email.html
    assert "<script>" not in email.html
    assert reason in email.text


def test_a_misspelt_template_variable_fails_the_render() -> None:
    templates = {
        "order_confirmation.txt.j2": "Order {{ event.order_numbr }}",
        "order_confirmation.html.j2": "<p>Order {{ event.order_number }}</p>",
    }
    renderer = EmailRenderer(SHOP, template_environment(DictLoader(templates)))
    with pytest.raises(UndefinedError, match="order_numbr"):
        render("order_confirmation", example(OrderCreated), renderer)


def test_every_template_of_the_package_compiles() -> None:
    environment = template_environment()
    names = environment.list_templates()
    assert {"base.html.j2", "payment_receipt.txt.j2", "order_cancellation.html.j2"} <= set(names)
    for name in names:
        environment.get_template(name)


def test_an_order_in_another_currency_is_refused() -> None:
    with pytest.raises(ValueError, match="Rupiah only"):
        render("payment_receipt", example(OrderPaid, currency="USD"))
