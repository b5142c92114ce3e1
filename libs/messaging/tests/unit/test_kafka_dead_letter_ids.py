"""A Kafka dead letter's id on the broker names the record for good, not only within one
life of its topic: a dead-letter topic deleted and created again (by an operator, or a
development broker started afresh beside a database that kept its letters) numbers its
records from offset 0 again, and a new letter taken for one already kept would be dropped
as collected twice."""

from __future__ import annotations

from collections.abc import Sequence

from shop.messaging import headers as h
from shop.messaging.naming import Naming
from shop.messaging.transports.kafka.deadletters import KafkaDeadLetterCourier
from shop.messaging.transports.kafka.wire import KafkaRecord

GROUP = "notification-service"


class OneRecordAtATime:
    """A dead-letter topic's reader that hands out the records it is given, one a fetch."""

    def __init__(self, records: Sequence[KafkaRecord]) -> None:
        self.records = list(records)

    async def fetch(self, limit: int, *, wait_ms: int) -> list[KafkaRecord]:
        return [self.records.pop(0)] if self.records else []

    async def commit_past(self, records: Sequence[KafkaRecord]) -> None:
        pass

    def rewind_to(self, records: Sequence[KafkaRecord]) -> None:
        pass


class Client:
    def __init__(self, reader: OneRecordAtATime) -> None:
        self.reader = reader

    def topic_reader(self, group: str, topic: str) -> OneRecordAtATime:
        return self.reader


def letter_record(offset: int, timestamp: int) -> KafkaRecord:
    headers = {h.DEAD_LETTER_CONSUMER: GROUP, h.DEAD_LETTER_ERROR_TYPE: "PermanentError"}
    return KafkaRecord(
        "shop-notification-service-dead-letters", 0, offset, timestamp, None, b"{}", headers
    )


async def test_a_record_at_an_offset_a_former_topic_used_is_another_letter() -> None:
    before, after = letter_record(5, 1_796_000_000_000), letter_record(5, 1_796_500_000_000)
    courier = KafkaDeadLetterCourier(Client(OneRecordAtATime([before, after])), Naming())  # type: ignore[arg-type]

    [first] = await courier.fetch(GROUP, 100)
    [second] = await courier.fetch(GROUP, 100)

    assert first.letter.transport_id != second.letter.transport_id
