"""A failure that no retry can mend (a body that is no contract, a permanent error) made a
dead letter at once."""

from __future__ import annotations

from datetime import UTC, datetime

from shop.contracts import ContractError
from shop.messaging.errors import PermanentError
from shop.messaging.message import Delivery
from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import DeadLetter, Failure, Outcome


class DeadLetters:
    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        try:
            return await call_next(handling)
        except (ContractError, PermanentError) as error:
            return dead_letter(handling.delivery, error)


def dead_letter(delivery: Delivery, error: BaseException) -> DeadLetter:
    now = datetime.now(UTC)
    return DeadLetter(
        failure=Failure.of(error),
        attempts=delivery.attempt,
        first_failure_at=delivery.first_failure_at or now,
        last_failure_at=now,
    )
