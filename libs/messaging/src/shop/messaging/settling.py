"""Making an outcome durable, the same on every transport: try until it is written, give a
message too large for the broker a form that fits, and stop loudly when writing keeps
failing, rather than stall behind a warning."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Final

import structlog

from shop.messaging import headers as h
from shop.messaging.deadletters import KEPT_PREFIX_BYTES, truncated_dead_letter
from shop.messaging.errors import MessageTooLarge, OutcomeNotWritten
from shop.messaging.outcome import DeadLetter, Failure, Retry

log = structlog.get_logger("shop.messaging")

_FIRST_PAUSE: Final = 0.1
"""Seconds before the second try to make an outcome durable; each pause doubles…"""
_LONGEST_PAUSE: Final = 5.0
"""…up to this."""

WriteRecord = Callable[[bytes, Mapping[str, str]], Awaitable[None]]
"""Writes one body with its headers (to a dead-letter topic or queue), until it is done."""


async def write_until_done(
    write: Callable[[], Awaitable[None]],
    *,
    within: float,
    what: str,
    transient: Callable[[Exception], bool],
    **context: str,
) -> None:
    """Call ``write`` until it succeeds, pausing longer after each failure that
    ``transient`` says may pass; after ``within`` seconds of them raise
    :class:`OutcomeNotWritten`. Any other error reaches the caller at once.

    :class:`MessageTooLarge` is never retried (the same message stays as large): it
    reaches the caller at once, to write a smaller form. Shutdown ends the tries by
    cancelling; the message then stays unsettled and is delivered again.
    """
    pause = _FIRST_PAUSE
    deadline = time.monotonic() + within
    while True:
        try:
            await write()
            return
        except MessageTooLarge:
            raise
        except Exception as error:
            if not transient(error):
                raise
            if time.monotonic() + pause > deadline:
                raise OutcomeNotWritten(
                    f"could not write {what} within {within:g} s: {error!r}"
                ) from error
            log.warning(
                "could not write the outcome of a message; trying again",
                outcome=what,
                error=repr(error),
                retry_in=pause,
                **context,
            )
        await asyncio.sleep(pause)
        pause = min(pause * 2, _LONGEST_PAUSE)


def too_large_to_retry(retry: Retry, error: MessageTooLarge) -> DeadLetter:
    """A retry the broker will not take (the message is larger than it accepts): give up
    on the message at once, saying why, rather than try to write the same bytes forever."""
    return DeadLetter(
        failure=Failure(
            "MessageTooLarge",
            f"could not be retried: {error}; it had failed with "
            f"{retry.failure.error_type}: {retry.failure.error_message}",
        ),
        attempts=retry.attempt,
        first_failure_at=retry.first_failure_at,
        last_failure_at=datetime.now(UTC),
    )


async def write_dead_letter(write: WriteRecord, body: bytes, stored: Mapping[str, str]) -> None:
    """Write a dead letter whole or, when the broker refuses its size, as a prefix of its
    body with the whole body's size and digest: shorter prefixes until one fits, and at
    last without the producer's headers (when they alone are too large), so that the dead
    letter and its reason are always kept."""
    try:
        await write(body, stored)
        return
    except MessageTooLarge:
        pass
    keep = min(KEPT_PREFIX_BYTES, len(body) // 2)  # a cut, whatever made it too large
    while True:
        try:
            await write(*truncated_dead_letter(body, stored, keep=keep))
            return
        except MessageTooLarge:
            if keep == 0:
                break
            keep //= 4
    # The producer's headers alone are too large: keep why it is a dead letter, and what
    # it was, without them.
    reason = {k: v for k, v in stored.items() if k in h.DEAD_LETTER_KEYS or k == h.MESSAGE_TYPE}
    await write(*truncated_dead_letter(body, reason, keep=0))
