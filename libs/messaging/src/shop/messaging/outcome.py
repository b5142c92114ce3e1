"""What became of one delivery; the transport makes it durable (ack, delay, dead letter)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class Failure:
    """Why a try failed: the exception's type name and text."""

    error_type: str
    error_message: str

    @classmethod
    def of(cls, error: BaseException) -> Failure:
        return cls(type(error).__name__, str(error) or repr(error))


@dataclass(frozen=True, slots=True)
class Ack:
    """Done (``duplicate``: it had been done before, nothing happened this time)."""

    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class Retry:
    """Try again after ``delay`` seconds; ``attempt`` is the number of the failed try."""

    delay: float
    attempt: int
    failure: Failure
    first_failure_at: datetime


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """Give up: keep the message aside, with why, for a person to look at or redrive."""

    failure: Failure
    attempts: int
    first_failure_at: datetime
    last_failure_at: datetime


Outcome = Ack | Retry | DeadLetter
