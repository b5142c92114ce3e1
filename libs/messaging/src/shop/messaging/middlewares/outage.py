"""A failure that says what the handler needs is away (the service's database restarting)
tried again in place: the message keeps its attempts for failures of its own, and a
restart sends nothing round the bus. An outage that outlasts the policy's
``outage_attempts`` tries is a failure like any other."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import structlog

from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Outcome
from shop.messaging.retry import RetryPolicy

log = structlog.get_logger("shop.messaging")


class Outage:
    def __init__(
        self, policies: Mapping[str, RetryPolicy], is_outage: Callable[[BaseException], bool]
    ) -> None:
        self.policies = policies
        """Each subscriber's, by message type."""
        self.is_outage = is_outage

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        subscriber, envelope = handling.routed()
        policy = self.policies[subscriber.message_type]
        tries = 1
        while True:
            try:
                return await call_next(handling)
            except Exception as error:
                if not self.is_outage(error) or tries >= policy.outage_attempts:
                    raise
                delay = policy.outage_delay(tries)
                log.warning(
                    "what the handler needs is away; trying again in place",
                    group=handling.group,
                    subscriber=subscriber.name,
                    event_id=str(envelope.event_id),
                    attempt=handling.delivery.attempt,
                    tries=tries,
                    delay_seconds=round(delay, 3),
                    error=str(error),
                )
                await asyncio.sleep(delay)
                tries += 1
