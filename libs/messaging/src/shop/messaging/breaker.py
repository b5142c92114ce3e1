"""A circuit breaker per external provider: after ``threshold`` consecutive failures to
reach it, calls stop (the messages that need it wait in place, holding their slots, so
their consumer takes no more); after a pause one call goes through as a probe, and its
success lets everything go again, its failure doubles the pause (up to a ceiling).

States: closed → open (threshold reached) → half-open (the pause ended; one probe out) →
closed (the probe reached the provider) or open again (it did not). A probe that ends
without telling (cancelled, or failed for a reason of its own) leaves the breaker open
with its pause over, so that the next message probes. A provider that says when to come
back (a 429 or 503 with ``Retry-After``) opens it at once, for that long."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

import structlog
from pydantic import BaseModel, Field

log = structlog.get_logger("shop.messaging")


class BreakerState(enum.IntEnum):
    """As the metrics show it (``messaging_breaker_state``)."""

    CLOSED = 0
    HALF_OPEN = 1
    OPEN = 2


class BreakerSettings(BaseModel):
    threshold: int = Field(default=5, ge=1)
    """Consecutive failures to reach a provider that open its breaker. Each of them is an
    ordinary failed try (it spends the message's attempt); none after."""
    pause: float = Field(default=5.0, gt=0)
    """Seconds the breaker stays open before its first probe (scaled by ``time_scale``)."""
    longest_pause: float = Field(default=30.0, gt=0)
    """The ceiling of the pause, doubled after each failed probe: how late, at most, the
    shop notices a provider that came back (then sends what waited, well within a
    minute)."""
    longest_retry_after: float = Field(default=600.0, gt=0)
    """The longest a provider's ``Retry-After`` holds its messages (seconds, not scaled):
    a provider that asks for a day is asked again after this."""


Transition = Callable[[str, BreakerState], None]
"""Told the provider and the new state at each change (the metrics)."""


class Contact:
    """Whether the call under way reached its provider, as its handler says, and whether
    it was cut while waiting on the provider."""

    __slots__ = ("answered", "hung")

    def __init__(self) -> None:
        self.answered = False
        self.hung = False


_contact: ContextVar[Contact | None] = ContextVar("shop_provider_contact", default=None)


def provider_answered() -> None:
    """Say, from a handler, that its provider answered this call (it took the e-mail, or
    refused this one alone). Only such a call closes a breaker: a handler that returns
    without reaching the provider (a duplicate, an e-mail found sent already) tells
    nothing of it. Outside a subscriber that names a provider, it does nothing."""
    contact = _contact.get()
    if contact is not None:
        contact.answered = True


def provider_has_answered() -> bool:
    """Whether the handling under way has said its provider answered."""
    contact = _contact.get()
    return contact is not None and contact.answered


@contextlib.contextmanager
def calling_provider() -> Iterator[None]:
    """Around a handler's call to its provider: cut there (at the handler's timeout), the
    call counts as the provider not answering, towards its breaker. Cut anywhere else (a
    slow database, say), it says nothing of the provider."""
    contact = _contact.get()
    try:
        yield
    except asyncio.CancelledError:
        if contact is not None:
            contact.hung = True
        raise


@contextlib.contextmanager
def watching_contact() -> Iterator[Contact]:
    """The :class:`Contact` of the call made inside (see :func:`provider_answered`)."""
    contact = Contact()
    token = _contact.set(contact)
    try:
        yield contact
    finally:
        _contact.reset(token)


class CircuitBreaker:
    def __init__(
        self,
        provider: str,
        settings: BreakerSettings,
        *,
        time_scale: float = 1.0,
        on_transition: Transition | None = None,
    ) -> None:
        self.provider = provider
        self.threshold = settings.threshold
        self._first_pause = settings.pause * time_scale
        self._longest_pause = settings.longest_pause * time_scale
        self._longest_retry_after = settings.longest_retry_after
        self._pause = self._first_pause
        self._on_transition = on_transition
        self.state = BreakerState.CLOSED
        self._failures = 0
        self._probe_at = 0.0
        self._changed = asyncio.Condition()

    async def admit(self) -> bool:
        """Return once a call may go: at once while closed; while open, when the pause is
        over, as the one probe (True: the caller must report how it went). Callers wait
        meanwhile."""
        async with self._changed:
            while True:
                if self.state is BreakerState.CLOSED:
                    return False
                if self.state is BreakerState.OPEN:
                    wait = self._probe_at - time.monotonic()
                    if wait <= 0:
                        self._to(BreakerState.HALF_OPEN)
                        return True
                    # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a
                    # cancellation that comes as the condition is notified.
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait):
                            await self._changed.wait()
                    continue
                await self._changed.wait()  # half-open: a probe is out

    async def reached(self) -> None:
        """A call reached the provider (whatever it answered): close."""
        async with self._changed:
            self._failures = 0
            self._pause = self._first_pause
            if self.state is not BreakerState.CLOSED:
                self._to(BreakerState.CLOSED)

    async def unreachable(self, *, probe: bool) -> None:
        """A call did not reach the provider: one more failure; open at the threshold,
        or again (a longer pause) when it was the probe."""
        async with self._changed:
            self._failures += 1
            if probe:
                self._pause = min(self._pause * 2, self._longest_pause)
                self._open()
            elif self.state is BreakerState.CLOSED and self._failures >= self.threshold:
                self._open()

    async def told_to_wait(self, seconds: float, *, probe: bool) -> None:
        """The provider said when to ask again (``Retry-After``): open until then (at most
        ``longest_retry_after``), whatever the count of failures, and no sooner than the
        pause: a provider that says "now" (0, a date past, a clock behind) again and again
        is asked ever more slowly, as after any failed probe."""
        async with self._changed:
            if probe:
                self._pause = min(self._pause * 2, self._longest_pause)
            wait = min(max(seconds, self._pause), self._longest_retry_after)
            self._probe_at = time.monotonic() + wait
            self._to(BreakerState.OPEN)

    async def untold(self, *, probe: bool) -> None:
        """A call ended without telling whether the provider is there; the probe's next
        call probes again."""
        if not probe:
            return
        async with self._changed:
            if self.state is BreakerState.HALF_OPEN:
                self._probe_at = time.monotonic()
                self._to(BreakerState.OPEN)

    def _open(self) -> None:
        self._probe_at = time.monotonic() + self._pause
        self._to(BreakerState.OPEN)

    def _to(self, state: BreakerState) -> None:
        log.warning(
            "circuit breaker " + state.name.lower().replace("_", "-"),
            provider=self.provider,
            failures=self._failures,
            next_probe_in=round(max(0.0, self._probe_at - time.monotonic()), 3),
        )
        self.state = state
        self._changed.notify_all()
        if self._on_transition is not None:
            self._on_transition(self.provider, state)
