"""SNS and SQS: a topic per message type; each consumer has its own queue, subscribed with
raw delivery to the topics of the types it handles, and a dead-letter queue.

A retry is ``ChangeMessageVisibility``: the failed message stays in its queue, hidden for
the retry delay, and its ``ApproximateReceiveCount`` is the attempt number. The queue's
``RedrivePolicy`` (``maxReceiveCount`` = the most attempts any subscriber allows) is only a
safety net for messages that crash their worker every time; the pipeline dead-letters
explicitly on its last attempt, with the reason.

One job per module, the same modules as every transport package: ``wire`` (attributes and
received messages), ``client`` (every SNS and SQS call), ``topology`` (queues, policies),
``transport``, ``consumer`` and ``deadletters``.
"""

from shop.messaging.transports.sqs.consumer import SqsConsumer
from shop.messaging.transports.sqs.deadletters import MOVED_BY_SQS, SqsDeadLetterCourier
from shop.messaging.transports.sqs.topology import SqsQueues
from shop.messaging.transports.sqs.transport import SqsTransport
from shop.messaging.transports.sqs.wire import (
    HEADERS_ATTRIBUTE,
    KEY_ATTRIBUTE,
    TYPE_ATTRIBUTE,
    SqsMessage,
    delivery_of,
    message_attributes,
)

__all__ = [
    "HEADERS_ATTRIBUTE",
    "KEY_ATTRIBUTE",
    "MOVED_BY_SQS",
    "TYPE_ATTRIBUTE",
    "SqsConsumer",
    "SqsDeadLetterCourier",
    "SqsMessage",
    "SqsQueues",
    "SqsTransport",
    "delivery_of",
    "message_attributes",
]
