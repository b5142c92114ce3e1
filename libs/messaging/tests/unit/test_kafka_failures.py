"""The Kafka consumer hears of fetches that fail inside FastStream's consume loop (which
only logs them and tries again) and stops once they keep failing."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiokafka.errors import KafkaConnectionError

from shop.contracts import OrderCreated
from shop.messaging.context import MessageContext
from shop.messaging.errors import OutcomeNotWritten
from shop.messaging.naming import Naming
from shop.messaging.pipeline import Pipeline
from shop.messaging.settings import KafkaSettings
from shop.messaging.subscriber import Router
from shop.messaging.transports.base import ConsumerOptions
from shop.messaging.transports.kafka import KafkaConsumer
from shop.messaging.transports.kafka.client import KafkaClient
from shop.messaging.transports.kafka.underneath import FastStreamLog


@dataclass(eq=False)
class Subscriber:
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)


async def test_a_kafka_error_logged_from_a_subscribers_task_reaches_its_consumer() -> None:
    logger = FastStreamLog()
    heard: dict[str, list[Exception]] = {"mine": [], "other": []}
    mine, other = Subscriber(), Subscriber()
    logger.watch(mine, heard["mine"].append)
    logger.watch(other, heard["other"].append)

    async def consume_loop() -> None:
        logger.log(logging.ERROR, "Kafka error occurred", exc_info=KafkaConnectionError())
        logger.log(logging.INFO, "assigned to partitions")

    task = asyncio.create_task(consume_loop())
    mine.tasks.append(task)
    await task
    logger.log(logging.ERROR, "elsewhere", exc_info=KafkaConnectionError())  # no task of theirs
    assert [type(e) for e in heard["mine"]] == [KafkaConnectionError]
    assert heard["other"] == []


def consumer(outcome_timeout: float) -> KafkaConsumer:
    router = Router("order-service")

    @router.subscriber(OrderCreated, transactional=False)
    async def ignore(event: OrderCreated, context: MessageContext) -> None:
        pass

    return KafkaConsumer(
        KafkaClient(KafkaSettings()),
        Naming(),
        Pipeline(router),
        ConsumerOptions(outcome_timeout=outcome_timeout),
    )


def test_fetches_failing_for_the_outcome_timeout_stop_the_consumer() -> None:
    kafka = consumer(outcome_timeout=0.2)
    kafka._fetch_failed(KafkaConnectionError())
    time.sleep(0.1)
    kafka._fetch_failed(KafkaConnectionError())
    assert kafka._failure is None  # not for long enough yet
    time.sleep(0.15)
    kafka._fetch_failed(KafkaConnectionError())
    assert isinstance(kafka._failure, OutcomeNotWritten)
    assert "could not fetch" in str(kafka._failure)


def test_a_fetch_failure_long_after_the_last_one_starts_a_new_stretch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [1_000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    kafka = consumer(outcome_timeout=60)
    kafka._fetch_failed(KafkaConnectionError())
    now[0] += 50
    kafka._fetch_failed(KafkaConnectionError())  # apart: the first stretch ended
    now[0] += 14
    kafka._fetch_failed(KafkaConnectionError())
    assert kafka._failure is None
    now[0] += 14
    kafka._fetch_failed(KafkaConnectionError())  # 28 s of failures in a row: not yet 60
    assert kafka._failure is None
    for _ in range(3):
        now[0] += 14
        kafka._fetch_failed(KafkaConnectionError())
    assert isinstance(kafka._failure, OutcomeNotWritten)
