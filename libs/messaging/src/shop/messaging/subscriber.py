"""Registration of handlers: ``@router.subscriber(OrderCreated)`` on a plain async function.

A router belongs to one consumer, named by its group (one Kafka consumer group, one SQS
queue). Each subscriber names the contract it handles and how failures of its handler are
retried.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from shop.contracts import Contract
from shop.messaging.retry import DEFAULT_MAX_ATTEMPTS, DEFAULT_OUTAGE_ATTEMPTS, RetryPolicy

if TYPE_CHECKING:
    from shop.messaging.context import MessageContext

ContractT = TypeVar("ContractT", bound=Contract)
Handler = Callable[[ContractT, "MessageContext"], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Subscriber:
    """One handler of one contract in one consumer."""

    contract: type[Contract]
    handler: Handler[Any]
    name: str
    retry: RetryPolicy
    transactional: bool
    max_in_flight: int
    timeout: float | None = None
    """Seconds its handler may take before it is given up on and the message retried;
    None: the worker's ``handler_timeout``."""
    provider: str | None = None
    """The external provider its handler calls, through that provider's circuit breaker
    (see :mod:`shop.messaging.breaker`); None: none."""

    @property
    def message_type(self) -> str:
        return self.contract.message_type


class Router:
    """The subscribers of one consumer (``group``), by message type."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._by_type: dict[str, Subscriber] = {}

    def subscriber(
        self,
        contract: type[ContractT],
        *,
        name: str | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        outage_attempts: int = DEFAULT_OUTAGE_ATTEMPTS,
        base_delay: float = 2.0,
        max_delay: float = 300.0,
        transactional: bool = True,
        max_in_flight: int = 16,
        timeout: float | None = None,
        provider: str | None = None,
    ) -> Callable[[Handler[ContractT]], Handler[ContractT]]:
        """Register the decorated function as the handler of ``contract``.

        ``transactional``: the handler gets a database session whose transaction also
        records the message in the inbox, so a redelivery has no second effect. Handlers
        with effects outside the database set it to False and keep their own unique record.

        ``timeout``: how long one handling may take (None: the worker's
        ``handler_timeout``); a handler still running then is cancelled and the message
        retried, so that one that hangs holds neither its key nor a slot for ever.

        ``provider``: the external provider the handler calls (``"smtp"``): its
        :class:`~shop.messaging.errors.ProviderUnavailable` failures open that provider's
        circuit breaker, which holds the messages in place until the provider is back.
        """

        def register(handler: Handler[ContractT]) -> Handler[ContractT]:
            self.add(
                Subscriber(
                    contract=contract,
                    handler=handler,
                    name=name or handler.__name__,
                    retry=RetryPolicy(
                        max_attempts, base_delay, max_delay, outage_attempts=outage_attempts
                    ),
                    transactional=transactional,
                    max_in_flight=max_in_flight,
                    timeout=timeout,
                    provider=provider,
                )
            )
            return handler

        return register

    def add(self, subscriber: Subscriber) -> None:
        # Versions of one type share a topic; one subscriber per type keeps routing simple.
        if subscriber.message_type in self._by_type:
            raise ValueError(f"{self.group}: {subscriber.message_type!r} already has a subscriber")
        self._by_type[subscriber.message_type] = subscriber

    def for_type(self, message_type: str) -> Subscriber | None:
        return self._by_type.get(message_type)

    def __iter__(self) -> Iterator[Subscriber]:
        return iter(self._by_type.values())

    def __len__(self) -> int:
        return len(self._by_type)

    @property
    def max_attempts(self) -> int:
        """The most tries any subscriber allows (the SQS queue's maxReceiveCount); an
        outage's tries happen in place and take none of them."""
        return max((s.retry.max_attempts for s in self), default=DEFAULT_MAX_ATTEMPTS)
