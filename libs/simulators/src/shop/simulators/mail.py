"""An e-mail provider on a bad day: slow, refusing some messages with a transient error,
taking some and hanging up before its reply (the sender cannot tell whether it went), and
hanging on some without ever answering. The faults are a file in the development SMTP
sink's folder, which the sink reads for each message: ``shopctl demo --email-latency …
--email-failure …`` writes it, the sink (:mod:`shop.devstack.smtp`) applies it, and notes
each reply it dropped and each message it hung on in a journal beside it."""

from __future__ import annotations

import asyncio
import json
import random
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, get_args

FAULT_REPLY = "451 4.3.0 temporary failure, try again later"
"""What a message gets when the injected faults say it fails: a transient refusal."""
RATE_REPLY = "451 4.7.0 sending rate exceeded, slow down"
"""What a message beyond the provider's quota (``ProviderFaults.rate_limit``) gets."""
HANG_AT_MOST: Final = 600.0
"""How long the sink hangs on a message before refusing it, if its sender waits that long."""
Mishap = Literal["dropped reply", "hung"]
"""What the sink does to a message on purpose, and notes in its journal."""


@dataclass(frozen=True)
class ProviderFaults:
    """How slow and how unreliable the sink is, as a provider having a bad day: each
    message waits a random time within ``latency`` (seconds) and is refused with a
    transient ``451`` with probability ``failure_rate``; of the rest, a share
    ``drop_reply_rate`` is taken and the connection dropped before the reply, and a share
    ``hang_rate`` is never answered (until the sender hangs up). ``once``: that mishap
    befalls the next message taken, and that one alone, however long the faults stay
    written. Kept as a file in the sink's folder, so another process can set and clear
    them while the sink runs."""

    latency: tuple[float, float] = (0.0, 0.0)
    failure_rate: float = 0.0
    drop_reply_rate: float = 0.0
    hang_rate: float = 0.0
    rate_limit: float | None = None
    """At most this many messages a second, as a provider's sending quota (a token bucket
    holding one second's worth); each one beyond is refused with ``451 4.7.0``."""
    once: Mishap | None = None
    once_token: str | None = field(default=None, compare=False)
    """Which writing of ``once`` this is: the sink spends each token on one message."""

    FILE = "provider-faults.json"

    def __post_init__(self) -> None:
        low, high = self.latency
        if not 0 <= low <= high:
            raise ValueError(f"latency must be 0 <= low <= high, not {self.latency}")
        for name in ("failure_rate", "drop_reply_rate", "hang_rate"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be within 0..1, not {getattr(self, name)}")

    def write(self, mail_dir: Path) -> None:
        mail_dir.mkdir(parents=True, exist_ok=True)
        body = {
            "latency": list(self.latency),
            "failure_rate": self.failure_rate,
            "drop_reply_rate": self.drop_reply_rate,
            "hang_rate": self.hang_rate,
            "rate_limit": self.rate_limit,
            "once": self.once,
            # A fresh token for a new mishap; faults read back and written again keep theirs,
            # so that a spent one is not armed again.
            "once_token": (self.once_token or uuid.uuid4().hex) if self.once else None,
        }
        temporary = mail_dir / f".{self.FILE}.tmp"
        temporary.write_text(json.dumps(body))
        temporary.replace(mail_dir / self.FILE)  # whole, never half-written

    @classmethod
    def clear(cls, mail_dir: Path) -> None:
        (mail_dir / cls.FILE).unlink(missing_ok=True)

    @classmethod
    def read(cls, mail_dir: Path | None) -> ProviderFaults:
        """The faults in ``mail_dir``; none when there is no such file (or it is unreadable,
        so that a bad file never stops mail)."""
        if mail_dir is None:
            return cls()
        try:
            body = json.loads((mail_dir / cls.FILE).read_text())
            low, high = body.get("latency", (0.0, 0.0))
            return cls(
                latency=(float(low), float(high)),
                failure_rate=float(body["failure_rate"]),
                drop_reply_rate=float(body.get("drop_reply_rate", 0.0)),
                hang_rate=float(body.get("hang_rate", 0.0)),
                rate_limit=_rate(body.get("rate_limit")),
                once=_mishap(body.get("once")),
                once_token=body.get("once_token"),
            )
        except (OSError, ValueError, KeyError, TypeError):
            return cls()

    async def apply(self) -> str | None:
        """Wait as long as the faults say; the refusal to answer with, if this one fails."""
        low, high = self.latency
        if high > 0:
            await asyncio.sleep(random.uniform(low, high))
        if self.failure_rate and random.random() < self.failure_rate:
            return FAULT_REPLY
        return None

    def hangs(self) -> bool:
        """Whether this message is one the provider never answers."""
        return bool(self.hang_rate) and random.random() < self.hang_rate

    def drops_reply(self) -> bool:
        """Whether this message, once taken, has its connection dropped before the reply."""
        return bool(self.drop_reply_rate) and random.random() < self.drop_reply_rate


@dataclass(frozen=True)
class JournalEntry:
    what: Mishap
    message_id: str
    at: float
    """Wall-clock time."""


@dataclass(frozen=True)
class ProviderJournal:
    """What the sink did to messages on purpose, one JSON line each, in its folder: the
    record a check needs to tell a duplicate the provider caused from one the shop did."""

    mail_dir: Path

    FILE = "provider-journal.jsonl"

    def note(self, what: Mishap, message_id: str) -> None:
        self.mail_dir.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"what": what, "message_id": message_id, "at": time.time()})
        with (self.mail_dir / self.FILE).open("a") as journal:
            journal.write(line + "\n")

    def clear(self) -> None:
        (self.mail_dir / self.FILE).unlink(missing_ok=True)

    def read(self) -> list[JournalEntry]:
        path = self.mail_dir / self.FILE
        if not path.exists():
            return []
        return [
            JournalEntry(entry["what"], entry["message_id"], float(entry["at"]))
            for entry in map(json.loads, path.read_text().splitlines())
        ]


def _mishap(value: object) -> Mishap | None:
    if value is None:
        return None
    if value not in get_args(Mishap):
        raise ValueError(f"no such mishap: {value!r}")
    return value  # type: ignore[return-value]


def _rate(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


class SendingQuota:
    """A provider's quota of ``rate`` messages a second: a token bucket that holds one
    second's worth, so a sender keeping to the rate (a burst of one) is never refused."""

    def __init__(self) -> None:
        self._tokens = 0.0
        self._rate = 0.0
        self._at = time.monotonic()

    def allows(self, rate: float) -> bool:
        """Whether one more message may go now at ``rate`` a second (and take it)."""
        now = time.monotonic()
        if rate != self._rate:  # a new quota starts full
            self._rate, self._tokens = rate, rate
        self._tokens = min(rate, self._tokens + (now - self._at) * rate)
        self._at = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True
