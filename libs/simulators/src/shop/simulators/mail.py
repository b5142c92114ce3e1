"""An e-mail provider on a bad day: slow, and refusing some messages with a transient
error. The faults are a file in the development SMTP sink's folder, which the sink reads for
each message: ``shopctl demo --email-latency … --email-failure …`` writes it, the sink
(:mod:`shop.devstack.smtp`) applies it."""

from __future__ import annotations

import asyncio
import json
import random
from dataclasses import dataclass
from pathlib import Path

FAULT_REPLY = "451 4.3.0 temporary failure, try again later"
"""What a message gets when the injected faults say it fails: a transient refusal."""


@dataclass(frozen=True)
class ProviderFaults:
    """How slow and how unreliable the sink is, as a provider having a bad day: each
    message waits a random time within ``latency`` (seconds) and is refused with a
    transient ``451`` with probability ``failure_rate``. Kept as a file in the sink's
    folder, so another process can set and clear them while the sink runs."""

    latency: tuple[float, float] = (0.0, 0.0)
    failure_rate: float = 0.0

    FILE = "provider-faults.json"

    def __post_init__(self) -> None:
        low, high = self.latency
        if not 0 <= low <= high:
            raise ValueError(f"latency must be 0 <= low <= high, not {self.latency}")
        if not 0 <= self.failure_rate <= 1:
            raise ValueError(f"failure_rate must be within 0..1, not {self.failure_rate}")

    def write(self, mail_dir: Path) -> None:
        mail_dir.mkdir(parents=True, exist_ok=True)
        body = {"latency": list(self.latency), "failure_rate": self.failure_rate}
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
            return cls(latency=(float(low), float(high)), failure_rate=float(body["failure_rate"]))
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
