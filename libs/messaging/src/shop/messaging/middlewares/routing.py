"""The subscriber of the envelope's type, which must carry the contract it handles."""

from __future__ import annotations

from shop.messaging.errors import NoSubscriber, PermanentError
from shop.messaging.middlewares.chain import Handling, Next
from shop.messaging.outcome import Outcome
from shop.messaging.subscriber import Router


class Routing:
    def __init__(self, router: Router) -> None:
        self.router = router

    async def __call__(self, handling: Handling, call_next: Next) -> Outcome:
        if handling.undecodable is not None:
            raise handling.undecodable
        envelope = handling.envelope
        assert envelope is not None  # decoded, or undecodable
        subscriber = self.router.for_type(envelope.type)
        if subscriber is None:
            raise NoSubscriber(self.router.group, envelope.type)
        if not isinstance(envelope.payload, subscriber.contract):
            raise PermanentError(
                f"{subscriber.name} handles {subscriber.contract.contract_id()}, "
                f"not {envelope.type}.v{envelope.version}"
            )
        handling.subscriber = subscriber
        return await call_next(handling)
