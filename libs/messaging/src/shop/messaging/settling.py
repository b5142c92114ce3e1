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

from shop.messaging.deadletters import KEPT_PREFIX_BYTES, truncated_dead_letter
from shop.messaging.errors import MessageTooLarge, OutcomeNotWritten
from shop.messaging.outcome import DeadLetter, Failure, Retry

log = structlog.get_logger("shop.messaging")

_BACKOFF: Final = (0.1, 5.0)
"""First and longest pause between tries to make an outcome durable."""

WriteRecord = Callable[[bytes, Mapping[str, str]], Awaitable[None]]
"""Writes one body with its headers (to a dead-letter topic or queue), until it is done."""


async def write_until_done(
    write: Callable[[], Awaitable[None]],
    *,
    within: float,
    what: str,
    retry_on: tuple[type[Exception], ...],
    **context: str,
) -> None:
    """Call ``write`` until it succeeds, pausing longer after each failure of a kind in
    ``retry_on``; after ``within`` seconds of failures raise :class:`OutcomeNotWritten`.

    :class:`MessageTooLarge` is never retried (the same message stays as large): it
    reaches the caller at once, to write a smaller form. Shutdown ends the tries by
    cancelling; the message then stays unsettled and is delivered again.
    """
    pause, longest = _BACKOFF
    deadline = time.monotonic() + within
    while True:
        try:
            await write()
            return
        except MessageTooLarge:
            raise
        except retry_on as error:
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
        pause = min(pause * 2, longest)


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
    body with the whole body's size and digest: shorter prefixes until one fits, so that
    the dead letter and its reason are always kept."""
    try:
        await write(body, stored)
        return
    except MessageTooLarge:
        pass
    keep = KEPT_PREFIX_BYTES
    while True:
        try:
            await write(*truncated_dead_letter(body, stored, keep=keep))
            return
        except MessageTooLarge:
            if keep == 0:
                raise  # even the headers alone are too large: a bug, not a message
            keep //= 4
