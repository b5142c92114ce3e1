"""How a handler tells the pipeline what a failure means.

Any exception a handler raises is transient unless it says otherwise: retrying is the safe
default, because a message dead-lettered too early needs a person, while one retried too
often only costs time.
"""

from __future__ import annotations


class MessagingError(Exception):
    """Base of every error this library raises on its own account."""


class PermanentError(Exception):
    """Retrying cannot help (a business rule refuses the message): dead-letter it at once."""


class TransientError(Exception):
    """Worth retrying later (a dependency is down or slow). Same as any unexpected error;
    raise it to make the intent explicit."""


class NoSubscriber(PermanentError):
    """The consumer received a message type that none of its subscribers handles."""

    def __init__(self, consumer: str, message_type: str) -> None:
        super().__init__(f"consumer {consumer!r} has no subscriber for {message_type!r}")
        self.consumer = consumer
        self.message_type = message_type


class PublishError(MessagingError):
    """The transport could not publish some messages of a batch; they stay in the outbox.

    ``failed`` holds the indexes (in the batch) of the messages that may not have been
    published; every other message of the batch was.
    """

    def __init__(self, failed: set[int], cause: BaseException) -> None:
        super().__init__(f"{len(failed)} message(s) not published: {cause!r}")
        self.failed = failed
        self.cause = cause


class MessageTooLarge(MessagingError):
    """The broker refuses a message of this size (Kafka's request limit, SQS's 256 KiB)."""


class OutcomeNotWritten(MessagingError):
    """A consumer could not make an outcome durable within its outcome timeout.

    The consumer stops and the worker exits non-zero, to be restarted: a consumer that
    went on would hold back everything behind the message (Kafka commits no offset past
    it) or let it be handled again and again, behind nothing but a warning.
    """


class ProviderUnavailable(TransientError):
    """An external provider (the SMTP relay, a gateway's API) did not take the call: it is
    down, refusing for now or not answering. Consecutive ones open the provider's circuit
    breaker (:mod:`shop.messaging.breaker`), which holds its messages in place, their
    attempts unspent, until a probe finds it back.

    ``retry_after``: the provider said when to ask again (a 429 or 503 with
    ``Retry-After``): its breaker opens at once, for that long. ``too_fast``: it refused
    for the shop's rate (a 429, an SMTP 4.7.0): its rate limit slows down, and the try
    counts as an ordinary failure, the provider being there."""

    def __init__(
        self,
        provider: str,
        reason: str,
        *,
        retry_after: float | None = None,
        too_fast: bool = False,
    ) -> None:
        super().__init__(f"{provider} unavailable: {reason}")
        self.provider = provider
        self.retry_after = retry_after
        self.too_fast = too_fast
