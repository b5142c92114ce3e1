"""Why the Kafka transport reaches under FastStream (``transports/kafka/underneath.py``),
pinned against the installed FastStream: should an upgrade change what one of these shows,
the reach-under it justifies may go (or must change), and this fails first."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.structs import ConsumerRecord
from faststream.kafka.message import KafkaAckableMessage, KafkaMessage
from faststream.kafka.parser import AioKafkaParser

from shop.messaging.transports.kafka.underneath import record_as_it_came, record_itself


class RecordingConsumer:
    def __init__(self) -> None:
        self.commits: list[tuple[Any, ...]] = []

    async def commit(self, *offsets: Any) -> None:
        self.commits.append(offsets)

    def seek(self, partition: Any, offset: int) -> None:
        raise AssertionError("not expected")


def record(headers: list[tuple[str, bytes | None]], value: bytes = b"{}") -> Any:
    return ConsumerRecord(
        topic="t",
        partition=0,
        offset=7,
        timestamp=1,
        timestamp_type=0,
        key=b"k",
        value=value,
        checksum=None,
        serialized_key_size=1,
        serialized_value_size=len(value),
        headers=headers,
    )


async def test_faststreams_acknowledgement_commits_the_members_whole_position() -> None:
    # No offsets given: everything fetched is committed, finished or not. So messages are
    # never acknowledged and the transport commits up to its oldest unfinished one.
    consumer = RecordingConsumer()
    message = KafkaAckableMessage(raw_message=record([]), body=b"{}", consumer=consumer)
    await message.ack()
    assert consumer.commits == [()]


@pytest.mark.parametrize(
    "header", [("x-null", None), ("x-bytes", b"\xff\xfe")], ids=["null", "not-utf8"]
)
async def test_faststreams_parser_cannot_read_a_record_with_an_odd_header(
    header: tuple[str, bytes | None],
) -> None:
    # Its consume loop then skips the record, and a later commit passes it: a message lost.
    parser = AioKafkaParser(msg_class=KafkaMessage, regex=None)
    with pytest.raises((AttributeError, UnicodeDecodeError)):
        await parser.parse_message(record([header]))


async def test_the_transports_parser_keeps_such_a_record_as_it_came() -> None:
    raw = record([("x-null", None), ("x-bytes", b"\xff\xfe")], value=b"{not json")
    message = await record_as_it_came(raw)
    assert message.raw_message is raw
    assert await record_itself(message) is raw
