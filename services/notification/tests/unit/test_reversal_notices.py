"""The notice of each reversal of an order's payment: which one a reversal gets, and what it
says in both parts, with its amounts as the receipt writes them."""

from __future__ import annotations

from typing import Any

import pytest

from shop.contracts import OrderPaymentReversed
from shop.contracts.examples import examples
from shop.contracts.payments import ReversalKind
from shop.notification.domain.rendering import EmailRenderer, RenderedEmail, ShopIdentity
from shop.notification.domain.reversals import ReversalNotice, reversal_of

SHOP = ShopIdentity(
    name="Glow Lab",
    address="Jl. Kemang Raya 12, Jakarta Selatan 12730",
    support_email="help@glowlab.example",
    website="https://glowlab.example",
)


def reversed_payment(**changes: Any) -> OrderPaymentReversed:
    """The contracts' example (a partial refund of Rp 100.000 of a Rp 250.000 order)."""
    event = examples()[OrderPaymentReversed]
    return OrderPaymentReversed.model_validate({**event.model_dump(), **changes})


FULL_REFUND = reversed_payment(status="refunded", amount=250000, reversed_total=250000)
PARTIAL_REFUND = reversed_payment(status="partially_refunded", amount=100000, reversed_total=100000)
LAST_PART = reversed_payment(status="refunded", amount=150000, reversed_total=250000)
LATE_PAYMENT = reversed_payment(status="cancelled", amount=250000, reversed_total=250000)
CHARGEBACK = reversed_payment(
    kind=ReversalKind.CHARGEBACK, status="charged_back", amount=250000, reversed_total=250000
)
PARTIAL_CHARGEBACK = reversed_payment(
    kind=ReversalKind.CHARGEBACK, status="charged_back", amount=72000, reversed_total=72000
)
VOID = reversed_payment(
    kind=ReversalKind.VOID, status="cancelled", amount=250000, reversed_total=250000
)

EVERY_NOTICE = [
    (FULL_REFUND, ReversalNotice.REFUND, "Refund for order SK-7KQ4-M2XD"),
    (PARTIAL_REFUND, ReversalNotice.PARTIAL_REFUND, "Partial refund for order SK-7KQ4-M2XD"),
    (LAST_PART, ReversalNotice.PARTIAL_REFUND, "Refund for order SK-7KQ4-M2XD completed"),
    (
        LATE_PAYMENT,
        ReversalNotice.LATE_PAYMENT_REFUND,
        "Your payment for cancelled order SK-7KQ4-M2XD refunded",
    ),
    (CHARGEBACK, ReversalNotice.CHARGEBACK, "Payment for order SK-7KQ4-M2XD reversed by your bank"),
    (
        VOID,
        ReversalNotice.VOID,
        "Card payment for order SK-7KQ4-M2XD cancelled, nothing charged",
    ),
]


def render(event: OrderPaymentReversed) -> RenderedEmail:
    return EmailRenderer(SHOP).payment_reversal(event)


def says(email: RenderedEmail, *phrases: str) -> None:
    for part in (email.text, email.html.replace("<strong>", "").replace("</strong>", "")):
        for phrase in phrases:
            assert phrase in part, f"{phrase!r} not in:\n{part}"


@pytest.mark.parametrize(("event", "notice", "subject"), EVERY_NOTICE)
def test_each_reversal_gets_its_notice_and_subject(
    event: OrderPaymentReversed, notice: ReversalNotice, subject: str
) -> None:
    assert reversal_of(event).notice is notice
    email = render(event)
    assert email.subject == subject
    assert f"<title>{subject}</title>" in email.html


@pytest.mark.parametrize(("event", "notice", "subject"), EVERY_NOTICE)
def test_both_parts_show_the_order_the_reversal_and_the_lines(
    event: OrderPaymentReversed, notice: ReversalNotice, subject: str
) -> None:
    email = render(event)
    says(
        email,
        "SK-7KQ4-M2XD",
        "2 December 2026, 16:30 WIB",
        "Niacinamide 10% Serum 30 ml",
        "Rp 178.000",
        "Total",
        "Rp 250.000",
        "help@glowlab.example",
    )
    assert email.text.startswith("Hello,")
    assert "<" not in email.text
    assert email.html.startswith("<!DOCTYPE html>")
    assert email.html.rstrip().endswith("</html>")


def test_a_full_refund_names_the_payment_refunded() -> None:
    says(render(FULL_REFUND), "We have refunded your payment of Rp 250.000 for order SK-7KQ4-M2XD")


def test_a_partial_refund_names_its_amount_and_what_was_refunded_so_far() -> None:
    email = render(PARTIAL_REFUND)
    says(
        email,
        "We have refunded Rp 100.000 of your payment for order SK-7KQ4-M2XD; "
        "Rp 100.000 has been refunded so far.",
    )
    assert "in full" not in email.text


def test_the_part_that_completes_a_refund_says_so() -> None:
    says(
        render(LAST_PART),
        "We have refunded Rp 150.000 of your payment",
        "Rp 250.000 has been refunded so far",
        "your payment has been refunded in full",
    )


def test_a_late_payment_for_a_cancelled_order_is_refunded_in_full() -> None:
    says(
        render(LATE_PAYMENT),
        "arrived after the order was cancelled, so we have refunded it in full",
        "Rp 250.000 is on its way back to you",
        "Nothing will be shipped",
    )


def test_a_chargeback_puts_the_order_on_hold() -> None:
    says(
        render(CHARGEBACK),
        "Your bank has reversed your payment of Rp 250.000 for order SK-7KQ4-M2XD",
        "on hold",
        "it will not ship",
    )


def test_a_chargeback_of_part_of_the_payment_names_that_part() -> None:
    says(render(PARTIAL_CHARGEBACK), "Your bank has reversed Rp 72.000 of your payment")


def test_a_chargeback_of_a_cancelled_order_puts_nothing_on_hold() -> None:
    email = render(CHARGEBACK.model_copy(update={"status": "cancelled"}))
    says(email, "had already been cancelled")
    assert "on hold" not in email.text


def test_a_void_says_nothing_was_charged() -> None:
    says(
        render(VOID),
        "Your card payment of Rp 250.000 for order SK-7KQ4-M2XD was cancelled before it was "
        "taken: nothing was charged",
    )


def test_a_reference_cannot_inject_markup() -> None:
    email = render(reversed_payment(reference="<b>RF</b>&1"))
    assert "&lt;b&gt;RF&lt;/b&gt;&amp;1" in email.html
    assert "<b>RF" not in email.html
    assert "<b>RF</b>&1" in email.text


def test_a_reversal_in_another_currency_is_refused() -> None:
    with pytest.raises(ValueError, match="Rupiah only"):
        render(reversed_payment(currency="USD"))
