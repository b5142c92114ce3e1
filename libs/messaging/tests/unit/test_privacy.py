"""Customers' addresses masked wherever an operator reads in passing: the first character
and the domain are kept, the rest is not."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import TypeAdapter

from shop.contracts.base import EmailAddress
from shop.messaging import headers as h
from shop.messaging.deadletters import dead_letter_headers
from shop.messaging.message import Delivery
from shop.messaging.outcome import DeadLetter, Failure
from shop.messaging.privacy import FORGOTTEN_EMAIL, mask_email, mask_emails, names_address


@pytest.mark.parametrize(
    ("address", "masked"),
    [
        ("jane.doe@example.com", "j***@example.com"),
        ("a@b.example", "a***@b.example"),
        ("Budi+shop@mail.example.co.id", "B***@mail.example.co.id"),
        ("nobody", "***"),
        ("@example.com", "***"),
    ],
)
def test_an_address_keeps_its_first_character_and_its_domain(address: str, masked: str) -> None:
    assert mask_email(address) == masked


def test_every_address_in_a_text_is_masked_and_the_rest_is_left_as_it_was() -> None:
    reply = (
        "the provider refused the e-mail to ayu@example.com: "
        "550 5.1.1 <ayu@example.com>: Recipient address rejected (ask postmaster@mx.example)"
    )
    assert mask_emails(reply) == (
        "the provider refused the e-mail to a***@example.com: "
        "550 5.1.1 <a***@example.com>: Recipient address rejected (ask p***@mx.example)"
    )
    assert mask_emails("421 4.7.0 try again later") == "421 4.7.0 try again later"


def test_a_dead_letter_keeps_the_reason_with_the_address_masked() -> None:
    now = datetime.now(UTC)
    refusal = Failure("PermanentError", "550 <bounce@example.com>: no such mailbox")
    stored = dead_letter_headers(
        "notification-service",
        Delivery(b"{}", {h.MESSAGE_TYPE: "order.created"}, "shop-order-created"),
        DeadLetter(refusal, 1, now, now),
    )
    assert stored[h.DEAD_LETTER_ERROR_MESSAGE] == "550 <b***@example.com>: no such mailbox"
    assert "bounce@example.com" not in repr(stored)


def test_the_address_of_a_forgotten_customer_passes_the_contracts_check() -> None:
    # The events that still name a forgotten customer's order must stay valid.
    assert TypeAdapter(EmailAddress).validate_python(FORGOTTEN_EMAIL) == FORGOTTEN_EMAIL


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("to=AYU.LESTARI@EXAMPLE.COM; cc=budi@example.com", True),
        ("<ayu.lestari@example.com>", True),
        ('"ayu.lestari@example.com".', True),
        ("ana.ayu.lestari@example.com", False),
        ("ayu.lestari@example.com.au", False),
        ("ayu.lestari@example.community", False),
    ],
)
def test_an_address_is_named_only_whole(text: str, named: bool) -> None:
    assert names_address(text, "ayu.lestari@example.com") is named
