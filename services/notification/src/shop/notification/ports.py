"""What notification-service's use case needs from the world, as Protocols: an e-mail
provider (what an e-mail is, how it is sent, and the two ways sending can fail) and the
record of what was sent. Adapters (SMTP, the fault-injecting wrapper, Postgres) live in
``adapters/``; unit tests implement them with fakes."""

from __future__ import annotations

import uuid
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Final, Protocol

from shop.notification.domain.kinds import NotificationKey


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
    """Stable for an e-mail (:meth:`NotificationKey.message_id`): a rare duplicate is
    recognisable downstream."""
    attachments: tuple[Attachment, ...] = ()


class EmailRejected(Exception):
    """The provider refused this e-mail for good (an unknown mailbox, say): sending it again
    cannot help, so it goes to the dead letters."""


class EmailDeferred(Exception):
    """The provider put off this e-mail alone (a full mailbox, greylisting): send it again
    later. The provider answered: it is there for the others."""


EMAIL_PROVIDER: Final = "smtp"
"""The provider's name for its circuit breaker, its metrics and its logs."""


class EmailUnavailable(Exception):
    """The provider could not take the e-mail now (timeout, busy, connection lost, a 4xx
    deferral): retry, and after a few in a row wait for it (its circuit breaker).
    ``too_fast``: it refused for the sender's rate, and the worker slows down."""

    def __init__(self, reason: str, *, too_fast: bool = False) -> None:
        super().__init__(reason)
        self.too_fast = too_fast


class EmailSender(Protocol):
    async def send(self, email: Email) -> None:
        """Hand ``email`` to the provider; return once it accepted it. Raises
        :class:`EmailRejected`, :class:`EmailDeferred` or :class:`EmailUnavailable`."""


class SendingElsewhere(Exception):
    """Another delivery of the same e-mail is sending it at this moment: try again once it
    is done (it will then be recorded, or free to send)."""


class RecordOfSent(Protocol):
    """The record of the e-mails sent. Checked and written by a sender only through
    :meth:`SentLog.sending`, which holds the e-mail for it: outside it, another delivery
    may be sending the same e-mail between the check and the record."""

    async def already_sent(self, key: NotificationKey) -> bool: ...

    async def mark_sent(
        self,
        key: NotificationKey,
        *,
        recipient: str,
        message_id: str,
        event_id: uuid.UUID,
    ) -> bool:
        """Record the sending; False when it was recorded already."""
        ...


class SentLog(RecordOfSent, Protocol):
    """Which e-mails have been sent: at most one per :class:`NotificationKey` (per order and
    kind, and per reversal for the reversal notices)."""

    def sending(self, key: NotificationKey) -> AbstractAsyncContextManager[RecordOfSent]:
        """Held by one delivery at a time while it checks, sends and records the e-mail of
        ``key`` (two deliveries of one event may be handled at once: a Kafka partition
        moved to another consumer mid-send, a copy published twice on SQS); raises
        :class:`SendingElsewhere` while another holds it. The record it gives is read and
        written under the hold; a holder that dies lets go."""
        ...
