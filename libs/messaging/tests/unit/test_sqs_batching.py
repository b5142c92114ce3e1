"""How a relay's batch is cut into SNS PublishBatch calls."""

from __future__ import annotations

from shop.messaging.transports.sqs.batching import (
    BATCH_BYTES,
    topic_batches,
    waves,
    wire_size,
)


def test_a_keys_messages_go_one_wave_after_the_other() -> None:
    assert waves(["a", "b", "a", "c", "a", "b"]) == [[0, 1, 3], [2, 5], [4]]


def test_a_batch_holds_one_topic_and_at_most_ten_messages() -> None:
    indexes = list(range(25))
    topics = {i: "created" if i % 2 else "paid" for i in indexes}
    batches = list(topic_batches(indexes, topics, dict.fromkeys(indexes, 100)))
    assert [len(batch) for batch in batches] == [10, 3, 10, 2]
    assert all(len({topics[i] for i in batch}) == 1 for batch in batches)
    assert sorted(i for batch in batches for i in batch) == indexes


def test_a_batch_stays_within_what_one_call_may_carry_in_all() -> None:
    # Ten receipts of 30 KiB each are 300 KiB: SNS refuses such a call whole, and again on
    # every retry, so their keys would never move.
    indexes = list(range(10))
    sizes = dict.fromkeys(indexes, 30 * 1024)
    batches = list(topic_batches(indexes, dict.fromkeys(indexes, "receipt"), sizes))
    assert all(sum(sizes[i] for i in batch) <= BATCH_BYTES for batch in batches)
    assert [len(batch) for batch in batches] == [8, 2]


def test_a_message_over_the_limit_goes_alone_so_its_refusal_is_its_own() -> None:
    sizes = {0: 1000, 1: BATCH_BYTES + 1, 2: 1000}
    batches = list(topic_batches([0, 1, 2], dict.fromkeys(sizes, "t"), sizes))
    assert batches == [[0], [1], [2]]


def test_a_messages_size_counts_its_body_and_attributes_in_bytes() -> None:
    attributes = {"shop-key": {"DataType": "String", "StringValue": "order-1"}}
    assert wire_size("héllo", attributes) == 6 + len("shop-key") + len("String") + 7
