"""What every consumer needs of a message's wire form, as pact matchers: the envelope the
shop's pipeline decodes before any handler runs, and the types of the fields inside.

A consumer decodes with the contract's strict decoder (``shop.contracts.decode``), which
refuses a message that lacks a required field or carries one of the wrong type: so every
field it requires is one the consumer relies on, read by its handler or not.
"""

from __future__ import annotations

from typing import Any, Final

from pact import match

from shop.contracts import Contract

AWARE_MOMENT: Final = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:\d{2})$"
"""An ISO 8601 moment with its offset: the contracts refuse a time without its zone."""
CURRENCY_CODE: Final = r"^[A-Z]{3}$"
EMAIL_ADDRESS: Final = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"

EVENT_ID: Final = "3d5e8f10-2b4c-4d6e-8f01-23456789abcd"
ORDER_ID: Final = "6f1c2a4e-8d3b-4c1a-9e2f-0a1b2c3d4e5f"
PAYMENT_ID: Final = "0b7e9d2c-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
OCCURRED_AT: Final = "2026-12-02T09:30:00Z"


def moment(example: str) -> Any:
    """A point in time, with its offset."""
    return match.regex(example, regex=AWARE_MOMENT)


def envelope(contract: type[Contract], payload: dict[str, Any], *, key: str) -> dict[str, Any]:
    """``payload`` inside the envelope, as the consumer's pipeline decodes it: the exact type
    and version its subscriber is registered for, the ``event_id`` it deduplicates by, and the
    fields the decoder requires. ``causation_id`` and ``traceparent`` are optional and no
    consumer's behaviour depends on them, so no pact states them."""
    return {
        "event_id": match.uuid(EVENT_ID),
        "type": contract.message_type,
        "version": contract.message_version,
        "occurred_at": moment(OCCURRED_AT),
        "key": match.str(key),
        "correlation_id": match.str(EVENT_ID),
        "payload": payload,
    }
