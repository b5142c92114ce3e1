"""Customers' e-mail addresses kept out of what operators read in passing: logs, and the
error messages that travel with retries and dead letters. An address is masked to its
first character and its domain (``j***@example.com``): enough to tell a typo in the
domain from a refused mailbox, not enough to write to the customer.

Also the address a customer who asked to be forgotten is left with: a valid address (the
events that still name the order must pass the contracts' check) in a domain reserved
for examples (RFC 2606), which delivers nowhere."""

from __future__ import annotations

import re
from typing import Final

FORGOTTEN_EMAIL: Final = "forgotten@forgotten.example"
"""What replaces a forgotten customer's address wherever a service keeps it."""

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
