"""Delivery for the shop's services: a service declares "publish this event in this
transaction" (:func:`add`) and "handle this event with this function"
(:meth:`Router.subscriber`); outbox relay, inbox, retries, dead letters, transports and
graceful shutdown live here, once, with the same semantics on every transport."""

from shop.messaging.context import MessageContext
from shop.messaging.deadletter_table import PostgresDeadLetterStore
from shop.messaging.deadletters import DeadLetterFilter, DeadLetters, StoredDeadLetter
from shop.messaging.errors import (
    NoSubscriber,
    PermanentError,
    ProviderUnavailable,
    PublishError,
    TransientError,
)
from shop.messaging.health import OperatorRoute
from shop.messaging.naming import Naming
from shop.messaging.outbox import OutboxItem, add, add_on_connection
from shop.messaging.relay import Relay, RelaySettings
from shop.messaging.retry import RetryPolicy
from shop.messaging.settings import KafkaSettings, MessagingSettings, SqsSettings
from shop.messaging.subscriber import Router, Subscriber
from shop.messaging.transports import create_transport
from shop.messaging.worker import Job, Worker

__all__ = [
    "DeadLetterFilter",
    "DeadLetters",
    "Job",
    "KafkaSettings",
    "MessageContext",
    "MessagingSettings",
    "Naming",
    "NoSubscriber",
    "OperatorRoute",
    "OutboxItem",
    "PermanentError",
    "PostgresDeadLetterStore",
    "ProviderUnavailable",
    "PublishError",
    "Relay",
    "RelaySettings",
    "RetryPolicy",
    "Router",
    "SqsSettings",
    "StoredDeadLetter",
    "Subscriber",
    "TransientError",
    "Worker",
    "add",
    "add_on_connection",
    "create_transport",
]
