"""Each outcome told to the observers (the metrics, tests), with how long it took."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Outcome


@dataclasses.dataclass(frozen=True, slots=True)
class OutcomeRecord:
    """What observers (metrics, tests) learn of each handled delivery."""

    group: str
    subscriber: str | None
    message_type: str | None
    attempt: int
    outcome: Outcome
    seconds: float


OutcomeObserver = Callable[[OutcomeRecord], None]


class Observing:
    def __init__(self, observers: Sequence[OutcomeObserver]) -> None:
        self.observers = list(observers)

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        started = time.perf_counter()
        outcome = await call_next(handling)
        record = OutcomeRecord(
            group=handling.group,
            subscriber=handling.subscriber.name if handling.subscriber else None,
            message_type=handling.envelope.type if handling.envelope else None,
            attempt=handling.delivery.attempt,
            outcome=outcome,
            seconds=time.perf_counter() - started,
        )
        for observer in self.observers:
            observer(record)
        return outcome
