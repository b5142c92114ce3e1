"""The list of e-mails (``domain/emails.py``) is all a new e-mail needs besides its
templates: each entry has a handler of its own, named after it, and both templates."""

from __future__ import annotations

import pytest

from shop.contracts import OrderCreated
from shop.messaging.asyncapi import unwired
from shop.notification.domain.emails import EMAILS, OrderEmail
from shop.notification.domain.kinds import PER_REVERSAL, NotificationKind
from shop.notification.domain.rendering import template_environment
from shop.notification.domain.reversals import ReversalNotice
from shop.notification.handlers import build_router


def test_each_email_is_sent_by_a_handler_of_its_own_for_its_event() -> None:
    router = build_router(unwired("Notifier"), max_attempts=3, max_in_flight=4)
    assert {s.name: s.contract for s in router} == {e.handler: e.event for e in EMAILS}
    assert all(s.provider == "smtp" and not s.transactional for s in router)


def test_each_kind_is_an_email_and_each_email_has_both_templates() -> None:
    assert {email.kind for email in EMAILS} == set(NotificationKind)
    environment = template_environment()
    names = [e.kind.value for e in EMAILS if e.kind not in PER_REVERSAL]
    names += [notice.value for notice in ReversalNotice]  # a reversal's, by its notice
    for name in names:
        for part in ("txt", "html"):
            environment.get_template(f"{name}.{part}.j2")


def test_an_email_with_an_invoice_must_be_of_a_paid_order() -> None:
    with pytest.raises(ValueError, match="invoice"):
        OrderEmail(
            NotificationKind.ORDER_CONFIRMATION,
            OrderCreated,
            handler="send_order_confirmation",
            subject="Order {number} confirmed",
            invoice=True,
        )
