"""A line for each delivery that failed: a warning for a retry, an error for a dead letter."""

from __future__ import annotations

import structlog

from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import DeadLetter, Outcome, Retry

log = structlog.get_logger("shop.messaging")


class Logging:
    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        outcome = await call_next(handling)
        if not isinstance(outcome, Retry | DeadLetter):
            return outcome
        fields = {
            "group": handling.group,
            "subscriber": handling.subscriber.name if handling.subscriber else None,
            "event_id": str(handling.envelope.event_id) if handling.envelope else None,
            "source": handling.delivery.source,
            "attempt": handling.delivery.attempt,
            "error_type": outcome.failure.error_type,
            "error": outcome.failure.error_message,
        }
        if isinstance(outcome, Retry):
            log.warning(
                "handler failed, will retry", delay_seconds=round(outcome.delay, 3), **fields
            )
        else:
            log.error("message dead-lettered", **fields)
        return outcome
