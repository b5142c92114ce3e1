"""moto's SQS race, shown on its own queues, and the lock that ends it; then what a send
and a receive cost on a deep queue, and the guard that skips moto's counting.

Two deletes and a send meet on one queue: the first delete is held inside its rebuild of
the message list while the others run. moto alone loses the sent message and brings the
second deleted one back; with ``serialise_queue_writes`` the others wait, and the queue
ends as SQS would leave it. The first test pins the race itself: when an upgrade of moto
fixes it, that test fails, and the guard can go.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator

import pytest
from moto.sqs.models import Message, Queue, SQSBackend, sqs_backends

from shop.devstack import moto_server
from shop.devstack.moto_server import (
    count_queues_only_when_asked,
    is_serialised,
    serialise_queue_writes,
    skips_counts,
)

pytestmark = pytest.mark.unit

ACCOUNT = "123456789012"
REGION = "ap-southeast-3"
SLOW = "slow-delete"


@pytest.fixture
def backend() -> Iterator[SQSBackend]:
    sqs = sqs_backends[ACCOUNT][REGION]
    sqs.create_queue("race")
    yield sqs
    sqs_backends[ACCOUNT].reset()


@pytest.fixture
def restores_moto(monkeypatch: pytest.MonkeyPatch) -> None:
    """Puts moto's own methods back after a test that wraps them."""
    for owner, names in moto_server._WRAPPED.items():
        for name in names:
            monkeypatch.setattr(owner, name, getattr(owner, name))
    monkeypatch.setattr(SQSBackend, "receive_message", SQSBackend.receive_message)
    monkeypatch.setattr(SQSBackend, "send_message", SQSBackend.send_message)
    for name in moto_server._COUNTS:
        monkeypatch.setattr(Queue, name, getattr(Queue, name))


def _race(backend: SQSBackend, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Delete A (held mid-rebuild), meanwhile delete B and send C; the bodies left."""
    for body in ("A", "B"):
        backend.send_message("race", body)
    handles = {m.body: m.receipt_handle for m in backend.receive_message("race", 10, 0, 30)}
    inside, go_on = threading.Event(), threading.Event()
    compare = Message.had_receipt_handle
    looks_at_a: list[None] = []

    def held_in_slow_delete(message: Message, receipt_handle: str) -> bool:
        # Its first look at A checks the handle; its second is in the rebuild.
        if threading.current_thread().name == SLOW and message.body == "A":
            looks_at_a.append(None)
            if len(looks_at_a) == 2:
                inside.set()
                go_on.wait(5)
        return compare(message, receipt_handle)

    monkeypatch.setattr(Message, "had_receipt_handle", held_in_slow_delete)
    slow = threading.Thread(target=backend.delete_message, args=("race", handles["A"]), name=SLOW)
    others = [
        threading.Thread(target=backend.delete_message, args=("race", handles["B"])),
        threading.Thread(target=backend.send_message, args=("race", "C")),
    ]
    slow.start()
    assert inside.wait(5)
    for other in others:
        other.start()
        other.join(0.3)  # done at once without the lock; held up behind it with it
    go_on.set()
    for thread in (slow, *others):
        thread.join(5)
    return sorted(m.body for m in backend.get_queue("race")._messages)


def test_moto_alone_loses_a_sent_message_and_revives_a_deleted_one(
    backend: SQSBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not is_serialised()
    assert _race(backend, monkeypatch) == ["B"], "moto fixed its race: drop the guard"


def test_with_the_guard_the_queue_ends_as_sqs_would_leave_it(
    backend: SQSBackend, monkeypatch: pytest.MonkeyPatch, restores_moto: None
) -> None:
    serialise_queue_writes()
    serialise_queue_writes()  # a second call wraps nothing twice
    assert is_serialised()
    assert _race(backend, monkeypatch) == ["C"]


def test_a_long_poll_waits_outside_the_lock_and_wakes_for_a_send(
    backend: SQSBackend, restores_moto: None
) -> None:
    serialise_queue_writes()
    received: list[str] = []
    poll = threading.Thread(
        target=lambda: received.extend(m.body for m in backend.receive_message("race", 1, 5, 30))
    )
    poll.start()
    poll.join(0.3)
    sender = threading.Thread(target=backend.send_message, args=("race", "late"))
    sender.start()
    sender.join(1)
    assert not sender.is_alive(), "the send waited for the long poll"
    poll.join(2)
    assert received == ["late"]


def test_the_methods_the_guard_wraps_are_still_there_with_their_parameters() -> None:
    for owner, names in moto_server._WRAPPED.items():
        for name in names:
            assert callable(getattr(owner, name)), f"moto has no {owner.__name__}.{name}"
    assert list(inspect.signature(SQSBackend.receive_message).parameters) == [
        "self", "queue_name", "count", "wait_seconds_timeout", "visibility_timeout",
        "message_attribute_names",
    ]  # fmt: skip
    assert "_messages" in vars(Queue("probe", ACCOUNT, REGION))
    assert callable(Queue.wait_for_messages)
    for name in moto_server._COUNTS:
        assert isinstance(getattr(Queue, name), property), f"moto has no Queue.{name}"


# -- a send's and a receive's cost ------------------------------------------------------
#
# moto's send_message reads the queue's ``attributes`` for one setting (content-based
# deduplication), and that property counts the queue's messages three ways, looking at
# each: every send costs as much as the queue is deep, and a deep queue (e-mails waiting
# out a slow provider) slowed every publish to it, quadratically.

DEPTH = 200


@pytest.fixture
def deep_queue(backend: SQSBackend) -> SQSBackend:
    for n in range(DEPTH):
        backend.send_message("race", f"waiting-{n}")
    return backend


def _looks(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """One entry each time a message is looked at (whether it is delayed)."""
    looks: list[None] = []
    delayed = Message.delayed

    def counted(message: Message) -> bool:
        looks.append(None)
        return delayed.fget(message)  # type: ignore[attr-defined, no-any-return]

    monkeypatch.setattr(Message, "delayed", property(counted))
    return looks


def _messages_looked_at_by_one_send(backend: SQSBackend, monkeypatch: pytest.MonkeyPatch) -> int:
    looks = _looks(monkeypatch)
    backend.send_message("race", "one more")
    return len(looks)


def _messages_looked_at_by_one_receive_of_ten(
    backend: SQSBackend, monkeypatch: pytest.MonkeyPatch
) -> int:
    """A receive looks through the queue once for visible messages; moto then reads the
    queue's attributes (its retention period) once for each message it hands out."""
    looks = _looks(monkeypatch)
    assert len(backend.receive_message("race", 10, 0, 30)) == 10
    return len(looks)


def test_moto_alone_looks_at_every_message_of_a_queue_to_send_or_receive_one(
    deep_queue: SQSBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not skips_counts()
    looked_at = _messages_looked_at_by_one_send(deep_queue, monkeypatch)
    assert looked_at >= DEPTH, "moto's send no longer counts the queue: drop the guard"
    looked_at = _messages_looked_at_by_one_receive_of_ten(deep_queue, monkeypatch)
    assert looked_at >= 10 * DEPTH, "moto's receive no longer counts the queue: drop the guard"


def test_with_the_guard_sends_and_receives_count_nothing_and_the_counts_stay_right(
    deep_queue: SQSBackend, monkeypatch: pytest.MonkeyPatch, restores_moto: None
) -> None:
    count_queues_only_when_asked()
    count_queues_only_when_asked()  # a second call wraps nothing twice
    assert skips_counts()
    assert _messages_looked_at_by_one_send(deep_queue, monkeypatch) == 0
    assert _messages_looked_at_by_one_receive_of_ten(deep_queue, monkeypatch) <= DEPTH + 1
    attributes = deep_queue.get_queue("race").attributes
    assert attributes["ApproximateNumberOfMessages"] == DEPTH + 1 - 10
    assert attributes["ApproximateNumberOfMessagesNotVisible"] == 10
