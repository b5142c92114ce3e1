"""Typed integration events and commands: the only thing that crosses a service boundary."""

from shop.contracts.base import Command, Contract, Event
from shop.contracts.codec import (
    MAX_MESSAGE_BYTES,
    ContractError,
    InvalidMessage,
    UndecodableMessage,
    UnknownMessageType,
    decode,
    decode_as,
    encode,
)
from shop.contracts.envelope import Envelope, wrap
from shop.contracts.orders import (
    CancelUnpaidOrder,
    OrderCancelled,
    OrderCreated,
    OrderLine,
    OrderPaid,
    OrderPaymentReversed,
)
from shop.contracts.payments import (
    ExpirePayment,
    PaymentExpired,
    PaymentFailed,
    PaymentReceived,
    PaymentReversed,
    ProcessPayment,
    RefundPayment,
    ReversalKind,
)
from shop.contracts.registry import ALL_CONTRACTS, lookup
from shop.contracts.topics import (
    ConsumerGroup,
    consumer_queue,
    dead_letter_queue,
    delay_topic,
    message_topic,
)

__all__ = [
    "ALL_CONTRACTS",
    "MAX_MESSAGE_BYTES",
    "CancelUnpaidOrder",
    "Command",
    "ConsumerGroup",
    "Contract",
    "ContractError",
    "Envelope",
    "Event",
    "ExpirePayment",
    "InvalidMessage",
    "OrderCancelled",
    "OrderCreated",
    "OrderLine",
    "OrderPaid",
    "OrderPaymentReversed",
    "PaymentExpired",
    "PaymentFailed",
    "PaymentReceived",
    "PaymentReversed",
    "ProcessPayment",
    "RefundPayment",
    "ReversalKind",
    "UndecodableMessage",
    "UnknownMessageType",
    "consumer_queue",
    "dead_letter_queue",
    "decode",
    "decode_as",
    "delay_topic",
    "encode",
    "lookup",
    "message_topic",
    "wrap",
]
