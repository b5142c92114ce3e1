"""Handing a message to a service's worker code, as its pipeline does: decode and validate
the body against the contract, route it to the subscriber of its type, run the handler in the
message's context (so that what it publishes names the message as its cause), and settle
on an outcome.

One thing is left out: the inbox row that a transactional subscriber writes in the handler's
transaction needs Postgres, and deduplication is no part of a message's shape. The handlers
get the service's fakes instead, which ignore the session.
"""

from __future__ import annotations

import dataclasses

from shop.messaging import Router
from shop.messaging.message import Delivery
from shop.messaging.outcome import Ack, Outcome
from shop.messaging.pipeline import Pipeline


class NotAcknowledged(AssertionError):
    """The consumer would not acknowledge the message: it would retry or dead-letter it."""

    def __init__(self, consumer: str, outcome: Outcome) -> None:
        failure = getattr(outcome, "failure", None)
        why = f"{failure.error_type}: {failure.error_message}" if failure else repr(outcome)
        super().__init__(f"{consumer} does not acknowledge the message ({why})")
        self.outcome = outcome


async def deliver(router: Router, body: bytes) -> None:
    """Run ``body`` through the pipeline of ``router``'s consumer; raise
    :class:`NotAcknowledged` unless the outcome is an acknowledgement."""
    pipeline = Pipeline(_without_inbox(router))
    outcome = await pipeline.process(Delivery(body=body, headers={}, source="pact"))
    if not isinstance(outcome, Ack):
        raise NotAcknowledged(router.group, outcome)


def _without_inbox(router: Router) -> Router:
    bare = Router(router.group)
    for subscriber in router:
        bare.add(dataclasses.replace(subscriber, transactional=False))
    return bare
