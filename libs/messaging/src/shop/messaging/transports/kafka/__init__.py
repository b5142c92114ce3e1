"""Kafka: a topic per message type, one consumer group per consumer.

A failed message goes to one of its consumer's delay topics (named after the nominal
delay, so each topic's messages fall due in roughly the order they arrive) and comes back
when due; a message given up on goes to the consumer's dead-letter topic. Offsets are
committed only up to the first message whose outcome is not yet durable.

One job per module, the same modules as every transport package: ``wire`` (records and
headers), ``client`` (every aiokafka call), ``topology`` (group and topic names),
``transport``, ``consumer`` and ``deadletters``.
"""

from shop.messaging.transports.kafka.consumer import KafkaConsumer
from shop.messaging.transports.kafka.deadletters import KafkaDeadLetterCourier
from shop.messaging.transports.kafka.topology import delay_seconds, group_id
from shop.messaging.transports.kafka.transport import KafkaTransport
from shop.messaging.transports.kafka.wire import KafkaRecord

__all__ = [
    "KafkaConsumer",
    "KafkaDeadLetterCourier",
    "KafkaRecord",
    "KafkaTransport",
    "delay_seconds",
    "group_id",
]
