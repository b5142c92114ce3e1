"""Any other failure is transient by design: retried after the subscriber's backoff, or a
dead letter once its attempts are spent."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.middlewares.dead_letters import dead_letter
from shop.messaging.outcome import Failure, Outcome, Retry
from shop.messaging.retry import RetryPolicy


class Retries:
    def __init__(self, policies: Mapping[str, RetryPolicy]) -> None:
        self.policies = policies
        """Each subscriber's, by message type."""

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        try:
            return await call_next(handling)
        except Exception as error:
            envelope, delivery = handling.envelope, handling.delivery
            policy = (self.policies.get(envelope.type) if envelope else None) or RetryPolicy()
            if policy.gives_up_after(delivery.attempt):
                return dead_letter(delivery, error)
            return Retry(
                delay=policy.delay(delivery.attempt),
                attempt=delivery.attempt,
                failure=Failure.of(error),
                first_failure_at=delivery.first_failure_at or datetime.now(UTC),
            )
