"""The consumer side of a pact: each message it states, as pact renders it from the matchers'
examples, goes through the consumer's own pipeline and handler."""

from __future__ import annotations

import asyncio

from pact import Pact

from shop.messaging import Router

from .delivery import deliver


def feed(pact: Pact, router: Router) -> None:
    """Deliver every message of ``pact`` to ``router``'s consumer; fail naming each message
    it would not acknowledge, and why (a field its decoder refuses, a handler's error)."""

    def handle(body: str | bytes | None, metadata: dict[str, object]) -> None:
        assert body is not None, "the pact states a message without a body"
        raw = body if isinstance(body, bytes) else str(body).encode()
        # pact calls this synchronously; each message gets a loop of its own.
        asyncio.run(deliver(router, raw))

    errors = pact.verify(handle, "Async", raises=False)
    assert not errors, "\n".join(f"{error.description}: {error.error}" for error in errors)
