"""Customers' e-mail addresses kept out of what operators read in passing: logs, and the
error messages that travel with retries and dead letters. An address is masked to its
first character and its domain (``j***@example.com``): enough to tell a typo in the
domain from a refused mailbox, not enough to write to the customer.

Also the address a customer who asked to be forgotten is left with: a valid address (the
events that still name the order must pass the contracts' check) in a domain reserved
for examples (RFC 2606), which delivers nowhere."""

from __future__ import annotations

import json
import re
from typing import Any, Final

FORGOTTEN_EMAIL: Final = "forgotten@forgotten.example"
"""What replaces a forgotten customer's address wherever a service keeps it."""

FORGOTTEN_CUSTOMER: Final = "forgotten:"
"""The prefix of a forgotten order's customer id, followed by the order's own id: no
identity provider issues such a subject, and no two forgotten orders share one."""

MASK: Final = "***"

# Loose on purpose: what looks like an address in free text (an SMTP reply, an error) is
# masked, valid or not; a false positive costs a few characters of a message.
_ADDRESS: Final = re.compile(r"[\w.!#$%&'*+/=?^`{|}~-]+@[\w-]+(?:\.[\w-]+)+")


def mask_email(address: str) -> str:
    """``jane.doe@example.com`` as ``j***@example.com``; anything without an ``@`` as
    ``***`` (it may still be an address, mistyped)."""
    local, at, domain = address.rpartition("@")
    if not at or not local:
        return MASK
    return f"{local[0]}{MASK}@{domain}"


def mask_emails(text: str) -> str:
    """``text`` with every e-mail address in it masked (:func:`mask_email`)."""
    return _ADDRESS.sub(lambda found: mask_email(found.group(0)), text)


def names_address(text: str, email: str) -> bool:
    """Whether ``text`` names ``email`` (any case) as a whole address, whatever is around
    it (``to=``, quotes, brackets): ``ana.ayu@x.com`` and ``ayu@x.com.au`` do not name
    ``ayu@x.com``."""
    whole = rf"(?<![\w.+-]){re.escape(email)}(?![\w-]|\.[\w-])"
    return re.search(whole, text, flags=re.IGNORECASE) is not None


def forgotten_in_message(body: bytes, email: str) -> bytes | None:
    """The message ``body`` (a contract's JSON envelope) with its customer forgotten, when
    its payload names ``email`` (any case): the address becomes :data:`FORGOTTEN_EMAIL`
    and the customer's id one of the order's own, so that it is still the contract it was
    (sent or redriven as it is now). None when it names someone else, or no one, or is not
    an envelope: a contract names its customer in one field, compared whole, never searched
    for in the text, so that ``a@example.com`` never touches ``ana@example.com``'s."""
    try:
        document: Any = json.loads(body)
    except ValueError:
        return None
    payload = document.get("payload") if isinstance(document, dict) else None
    if not isinstance(payload, dict):
        return None
    named = payload.get("customer_email")
    if not isinstance(named, str) or named.lower() != email.lower():
        return None
    payload["customer_email"] = FORGOTTEN_EMAIL
    if "customer_id" in payload:
        payload["customer_id"] = f"{FORGOTTEN_CUSTOMER}{payload.get('order_id', '')}"
    return json.dumps(document, ensure_ascii=False, separators=(",", ":")).encode()
