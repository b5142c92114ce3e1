"""Names of topics, queues and consumer groups: defined here once for every transport.

Names use only lowercase letters, digits and hyphens, which Kafka topics, SNS topics and
SQS queues all accept, so one name serves every transport.
"""

from __future__ import annotations

import re
from enum import StrEnum

from shop.contracts.base import Contract

NAME_PREFIX = "shop"
_VALID_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,79}$")


class ConsumerGroup(StrEnum):
    """A consuming service: one Kafka consumer group, one SQS queue each."""

    ORDER = "order-service"
    PAYMENT = "payment-service"
    NOTIFICATION = "notification-service"


def _checked(name: str) -> str:
    if not _VALID_NAME.match(name):
        raise ValueError(f"{name!r} is not a valid topic or queue name")
    return name


def message_topic(contract: type[Contract] | str) -> str:
    """Topic that carries one message type (all its versions), e.g. ``shop-order-created``.

    Versions share a topic so that consumers of v1 and v2 see one ordered stream per key.
    """
    message_type = contract if isinstance(contract, str) else contract.message_type
    return _checked(f"{NAME_PREFIX}-{message_type.replace('.', '-').replace('_', '-')}")


def consumer_queue(group: ConsumerGroup | str) -> str:
    """The SQS queue of one consuming service, e.g. ``shop-notification-service``."""
    return _checked(f"{NAME_PREFIX}-{group}")


def dead_letter_queue(group: ConsumerGroup | str) -> str:
    """Where one consuming service's dead letters go (SQS queue or Kafka topic)."""
    return _checked(f"{NAME_PREFIX}-{group}-dlq")


def delay_topic(group: ConsumerGroup | str, delay_seconds: int) -> str:
    """A Kafka delay topic of one consumer group, holding messages due after a delay.

    The name itself keeps ``-retry-`` (``shop-order-service-retry-8s``): topics of that
    name exist already.
    """
    return _checked(f"{NAME_PREFIX}-{group}-retry-{delay_seconds}s")
