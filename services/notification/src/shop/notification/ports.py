"""The service's port to an e-mail provider: what an e-mail is, how it is sent, and the two
ways sending can fail. Adapters (SMTP, the fault-injecting wrapper) live in ``adapters/``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Attachment:
    filename: str
    content_type: str
    """``type/subtype``, e.g. ``application/pdf``."""
    data: bytes


@dataclass(frozen=True, slots=True)
class Email:
    """One e-mail to one customer, with a plain-text and an HTML part."""

    to: str
    subject: str
    text: str
    html: str
    message_id: str
    """Stable for an (order, kind): a rare duplicate is recognisable downstream."""
    attachments: tuple[Attachment, ...] = ()


class EmailRejected(Exception):
    """The provider refused this e-mail for good (an unknown mailbox, say): sending it again
    cannot help, so it goes to the dead letters."""


class EmailUnavailable(Exception):
    """The provider could not take the e-mail now (timeout, busy, connection lost): retry."""


class EmailSender(Protocol):
    async def send(self, email: Email) -> None:
        """Hand ``email`` to the provider; return once it accepted it. Raises
        :class:`EmailRejected` or :class:`EmailUnavailable`."""
