"""Names of the headers (Kafka) and message attributes (SQS) this library writes.

Dead-letter metadata sits beside the original headers under these constant keys, so a
dead letter keeps the original message byte for byte and says why it is there.
"""

from __future__ import annotations

from typing import Final

MESSAGE_TYPE: Final = "x-message-type"
"""``order.created``: lets a consumer route or refuse a message without decoding it."""
EVENT_ID: Final = "x-event-id"
CORRELATION_ID: Final = "x-correlation-id"
TRACEPARENT: Final = "traceparent"
"""W3C Trace Context of the span that sent the message: the message's only trace context
(shop.messaging.tracing.propagation writes and reads it)."""
TRACESTATE: Final = "tracestate"
"""W3C Trace Context's vendor entries, beside a ``traceparent`` whose trace has some."""

ATTEMPT: Final = "x-attempt"
"""How many times this consumer has tried the message already (absent: never)."""
FIRST_FAILURE_AT: Final = "x-first-failure-at"
DUE_AT: Final = "x-due-at"
"""Epoch milliseconds before which a delayed (retried) message must not be handled."""
ORIGIN: Final = "x-origin"
"""The topic or queue a retried or redriven message first came from."""

# Dead-letter metadata: why a message is a dead letter. The consumer key names the consumer
# that gave up on it by its group (``order-service``): a redrive goes back to it alone.
DEAD_LETTER_CONSUMER: Final = "x-dead-letter-consumer"
DEAD_LETTER_SOURCE: Final = "x-dead-letter-source"
DEAD_LETTER_ERROR_TYPE: Final = "x-dead-letter-error-type"
DEAD_LETTER_ERROR_MESSAGE: Final = "x-dead-letter-error-message"
DEAD_LETTER_ATTEMPTS: Final = "x-dead-letter-attempts"
DEAD_LETTER_FIRST_FAILURE_AT: Final = "x-dead-letter-first-failure-at"
DEAD_LETTER_LAST_FAILURE_AT: Final = "x-dead-letter-last-failure-at"
DEAD_LETTER_BODY_SIZE: Final = "x-dead-letter-body-size"
"""Only on a dead letter too large to keep whole: the size in bytes of the whole body, of
which the stored body is a prefix."""
DEAD_LETTER_BODY_SHA256: Final = "x-dead-letter-body-sha256"
"""Beside the body size: the hex SHA-256 of the whole body, to match it with its source."""

DEAD_LETTER_RESOLVES: Final = "x-dead-letter-resolves"
"""On a marker record an earlier version appended to a Kafka dead-letter topic when it
redrove or purged a letter (the topic was then the store): no longer written, and passed
over by the collector."""

DEAD_LETTER_KEYS: Final = frozenset(
    {
        DEAD_LETTER_CONSUMER,
        DEAD_LETTER_SOURCE,
        DEAD_LETTER_ERROR_TYPE,
        DEAD_LETTER_ERROR_MESSAGE,
        DEAD_LETTER_ATTEMPTS,
        DEAD_LETTER_FIRST_FAILURE_AT,
        DEAD_LETTER_LAST_FAILURE_AT,
        DEAD_LETTER_BODY_SIZE,
        DEAD_LETTER_BODY_SHA256,
    }
)
DELIVERY_KEYS: Final = frozenset({ATTEMPT, FIRST_FAILURE_AT, DUE_AT, ORIGIN})
"""Written by the retry machinery of one consumer; stripped before a redrive."""


def original_headers(headers: dict[str, str]) -> dict[str, str]:
    """The headers the producer wrote, without what retries and dead-lettering added."""
    return {
        name: value
        for name, value in headers.items()
        if name not in DEAD_LETTER_KEYS and name not in DELIVERY_KEYS
    }
