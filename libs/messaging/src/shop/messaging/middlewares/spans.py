"""The CONSUMER span of each delivery, current while it is handled (so that what the
handler publishes and logs belongs to its trace), with the outcome recorded on it."""

from __future__ import annotations

from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Outcome
from shop.messaging.tracing.spans import consuming, record_outcome


class Spans:
    def __init__(self, system: str | None) -> None:
        self.system = system
        """The transport's name, for the spans."""

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        with consuming(
            handling.delivery, handling.envelope, group=handling.group, system=self.system
        ) as span:
            outcome = await call_next(handling)
            record_outcome(span, outcome, subscriber_id=handling.subscriber_id)
        return outcome
