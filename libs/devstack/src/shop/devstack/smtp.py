"""An SMTP sink (aiosmtpd) that keeps every message it receives so tests can read it back,
and, when given a folder, writes each one there as an ``.eml`` file a person can open.

Like a real provider it refuses unknown mailboxes: a recipient whose local part is
``bounce`` (or ``bounce+anything``) gets ``550 5.1.1``, so a permanent refusal can be shown
in tests and demos. And like a real provider on a bad day it can be slow and fail now and
then: :class:`ProviderFaults`, written to its folder by whoever wants them (``shopctl demo
--email-latency 0.3-3 --email-failure 0.2``), are read for each message."""

from __future__ import annotations

import asyncio
import email
import email.policy
import threading
import time
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller

from shop.devstack.errors import DevstackError
from shop.devstack.ports import free_port
from shop.simulators.mail import (
    FAULT_REPLY,
    HANG_AT_MOST,
    RATE_REPLY,
    Mishap,
    ProviderFaults,
    ProviderJournal,
    SendingQuota,
)


@dataclass(frozen=True)
class SmtpAddress:
    host: str
    port: int


@dataclass(frozen=True)
class ReceivedMail:
    """One message as the sink received it: SMTP envelope and parsed content."""

    mail_from: str
    rcpt_to: tuple[str, ...]
    raw: bytes
    message: EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"] or "")

    def text_body(self) -> str:
        part = self.message.get_body(preferencelist=("plain",))
        return "" if part is None else str(part.get_content())

    def html_body(self) -> str:
        part = self.message.get_body(preferencelist=("html",))
        return "" if part is None else str(part.get_content())

    def attachments(self) -> list[tuple[str, str, bytes]]:
        """(filename, content type, bytes) of each attachment."""
        found = []
        for part in self.message.iter_attachments():
            payload = part.get_payload(decode=True)
            data = payload if isinstance(payload, bytes) else b""
            found.append((part.get_filename() or "", part.get_content_type(), data))
        return found


BOUNCE_REPLY = "550 5.1.1 <{address}>: mailbox unavailable"


def is_bounce_address(address: str) -> bool:
    """A recipient the sink refuses as unknown: ``bounce@…`` or ``bounce+tag@…``."""
    local = address.rpartition("@")[0].lower()
    return local == "bounce" or local.startswith("bounce+")


class _Mailbox:
    """aiosmtpd handler: accepts every message for a known mailbox, stores it."""

    def __init__(self, mail_dir: Path | None) -> None:
        self.mail_dir = mail_dir
        self.received: list[ReceivedMail] = []
        self.refused = 0
        """Messages refused by the injected faults (the provider "down", or over quota)."""
        self.over_quota = 0
        """Of those, the messages beyond ``ProviderFaults.rate_limit``."""
        self._quota = SendingQuota()
        self.arrived = threading.Condition()
        self._spent_once: set[str | None] = set()

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Any, address: str, rcpt_options: list[str]
    ) -> str:
        if is_bounce_address(address):
            return BOUNCE_REPLY.format(address=address)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        raw = bytes(envelope.original_content or envelope.content)
        parsed = email.message_from_bytes(raw, policy=email.policy.default)
        faults = ProviderFaults.read(self.mail_dir)
        message_id = str(parsed["Message-ID"] or "").strip()
        if faults.hangs() or self._spends_once(faults, "hung"):
            self._note("hung", message_id)
            # Cancelled when the sender hangs up (aiosmtpd cancels the handler).
            await asyncio.sleep(HANG_AT_MOST)
            return FAULT_REPLY
        refusal = await faults.apply()
        over_quota = refusal is None and not self._within_quota(faults)
        if over_quota:
            refusal = RATE_REPLY
        if refusal is not None:
            with self.arrived:
                self.refused += 1
                self.over_quota += over_quota
            return refusal
        mail = ReceivedMail(
            mail_from=str(envelope.mail_from),
            rcpt_to=tuple(envelope.rcpt_tos),
            raw=raw,
            message=parsed,
        )
        with self.arrived:
            self.received.append(mail)
            number = len(self.received)
            self.arrived.notify_all()
        if self.mail_dir is not None:
            self.mail_dir.mkdir(parents=True, exist_ok=True)
            (self.mail_dir / f"{number:05d}.eml").write_bytes(raw)
        if faults.drops_reply() or self._spends_once(faults, "dropped reply"):
            # Taken, and the line cut before the "250": the sender cannot know it went.
            self._note("dropped reply", message_id)
            server.transport.abort()
        return "250 Message accepted for delivery"

    def _within_quota(self, faults: ProviderFaults) -> bool:
        return faults.rate_limit is None or self._quota.allows(faults.rate_limit)

    def _spends_once(self, faults: ProviderFaults, what: Mishap) -> bool:
        """Whether this message is the one that ``faults.once`` befalls: the first to come
        here since they were written (nothing is awaited between the look and the mark)."""
        if faults.once != what or faults.once_token in self._spent_once:
            return False
        self._spent_once.add(faults.once_token)
        return True

    def _note(self, what: Mishap, message_id: str) -> None:
        if self.mail_dir is not None:
            ProviderJournal(self.mail_dir).note(what, message_id)


class SmtpSink:
    """An SMTP server in a background thread of this process."""

    name = "smtp"

    def __init__(self, *, port: int | None = None, mail_dir: Path | None = None) -> None:
        self.port = port or free_port()
        self.mail_dir = mail_dir
        self._mailbox = _Mailbox(mail_dir)
        self._controller = Controller(
            self._mailbox, hostname="127.0.0.1", port=self.port, ready_timeout=10
        )
        self.address = SmtpAddress(host="127.0.0.1", port=self.port)

    def spawn(self) -> None:
        try:
            self._controller.start()
        except (OSError, RuntimeError, TimeoutError) as error:
            raise DevstackError(f"smtp sink: cannot listen on port {self.port}: {error}") from error

    def wait_ready(self) -> None:
        """Controller.start() returns once the server answers."""

    def start(self) -> SmtpAddress:
        self.spawn()
        return self.address

    def stop(self) -> None:
        if self._controller.loop.is_running():
            self._controller.stop()

    @property
    def messages(self) -> list[ReceivedMail]:
        with self._mailbox.arrived:
            return list(self._mailbox.received)

    @property
    def over_quota(self) -> int:
        """How many messages came beyond the quota (``ProviderFaults.rate_limit``)."""
        with self._mailbox.arrived:
            return self._mailbox.over_quota

    @property
    def refused(self) -> int:
        """How many messages the injected faults refused (each a try of its sender)."""
        with self._mailbox.arrived:
            return self._mailbox.refused

    def clear(self) -> None:
        """Forget every message and refusal, and the faults: a test starts with a sink
        that takes everything."""
        with self._mailbox.arrived:
            self._mailbox.received.clear()
            self._mailbox.refused = self._mailbox.over_quota = 0
        if self.mail_dir is not None:
            ProviderJournal(self.mail_dir).clear()
            ProviderFaults.clear(self.mail_dir)

    def wait_for(self, count: int, timeout: float = 10) -> list[ReceivedMail]:
        """Block until ``count`` messages have arrived; fail after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._mailbox.arrived:
            while len(self._mailbox.received) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(
                        f"expected {count} emails, got {len(self._mailbox.received)}"
                    )
                self._mailbox.arrived.wait(left)
            return list(self._mailbox.received)

    async def wait_for_async(self, count: int, within: float = 10) -> list[ReceivedMail]:
        """:meth:`wait_for` for async tests, without blocking their event loop."""
        return await asyncio.to_thread(self.wait_for, count, within)
