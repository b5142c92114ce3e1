"""The journal of what moto's SQS does to each message, on moto's own backend: each add,
receive, visibility change and delete is a line, with whether its receipt handle was the
message's latest, and a call moto refused says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from moto.sqs.exceptions import ReceiptHandleIsInvalid
from moto.sqs.models import Queue, SQSBackend, sqs_backends

from shop.devstack import moto_server, sqs_journal

pytestmark = pytest.mark.unit

ACCOUNT = "123456789012"
REGION = "ap-southeast-3"


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """moto's backend journaled into a file, as the devstack's server runs it (the lock
    too); moto's own methods and a closed journal after."""
    for owner, names in {
        Queue: ("add_message", "delete_message"),
        SQSBackend: ("change_message_visibility", "receive_message", "purge_queue"),
    }.items():
        for name in names:
            monkeypatch.setattr(owner, name, getattr(owner, name))
    path = tmp_path / "sqs-journal.jsonl"
    sqs_journal.keep_journal(path)
    sqs_journal.keep_journal(path)  # a second call wraps nothing twice
    moto_server.serialise_queue_writes()
    yield path
    sqs_journal.stop_journal()
    sqs_backends[ACCOUNT].reset()


@pytest.fixture
def backend(journal: Path) -> SQSBackend:
    sqs = sqs_backends[ACCOUNT][REGION]
    sqs.create_queue("payments-dlq")
    dead_letters = sqs.get_queue("payments-dlq")
    sqs.create_queue(
        "payments",
        RedrivePolicy=json.dumps(
            {"deadLetterTargetArn": dead_letters.queue_arn, "maxReceiveCount": 2}
        ),
    )
    return sqs


def lines(journal: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in journal.read_text().splitlines()]


def shorn(entry: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in entry.items() if name != "at"}


def test_each_thing_done_to_a_message_is_a_line_naming_it(
    backend: SQSBackend, journal: Path
) -> None:
    sent = backend.send_message(
        "payments",
        "{}",
        message_attributes={"shop-key": {"DataType": "String", "StringValue": "order-1"}},
    )
    [first] = backend.receive_message("payments", 10, 0, 30, [])
    backend.change_message_visibility("payments", first.receipt_handle, 0)
    [second] = backend.receive_message("payments", 10, 0, 30, [])
    backend.delete_message("payments", first.receipt_handle)  # moto takes an old handle

    assert [shorn(entry) for entry in lines(journal)] == [
        {"op": "add", "queue": "payments", "id": sent.id, "attributes": {"shop-key": "order-1"}},
        {"op": "receive", "queue": "payments", "id": sent.id, "count": 1, "visibility": 30},
        {"op": "visibility", "queue": "payments", "id": sent.id, "seconds": 0, "handle": "current"},
        {"op": "receive", "queue": "payments", "id": sent.id, "count": 2, "visibility": 30},
        {"op": "delete", "queue": "payments", "id": sent.id, "handle": "stale"},
    ]
    assert second.id == sent.id


def test_a_call_moto_refuses_is_a_line_with_its_error(backend: SQSBackend, journal: Path) -> None:
    with pytest.raises(ReceiptHandleIsInvalid):
        backend.change_message_visibility("payments", "no-such-handle", 10)
    assert [shorn(entry) for entry in lines(journal)] == [
        {
            "op": "visibility",
            "queue": "payments",
            "id": None,
            "seconds": 10,
            "handle": "unknown",
            "refused": "ReceiptHandleIsInvalid",
        },
    ]


def test_a_message_moto_moves_to_its_dead_letter_queue_is_added_there(
    backend: SQSBackend, journal: Path
) -> None:
    sent = backend.send_message("payments", "{}")
    for _ in range(2):  # received as often as maxReceiveCount, never settled
        [received] = backend.receive_message("payments", 10, 0, 30, [])
        backend.change_message_visibility("payments", received.receipt_handle, 0)
    assert backend.receive_message("payments", 10, 0, 30, []) == []

    moved = [entry for entry in lines(journal) if entry["queue"] == "payments-dlq"]
    assert [(entry["op"], entry["id"]) for entry in moved] == [("add", sent.id)]


def test_a_second_delete_of_a_deleted_message_is_told_apart(
    backend: SQSBackend, journal: Path
) -> None:
    backend.send_message("payments", "{}")
    [received] = backend.receive_message("payments", 10, 0, 30, [])
    backend.delete_message("payments", received.receipt_handle)
    backend.delete_message("payments", received.receipt_handle)  # moto answers as if it did

    deletes = [shorn(entry) for entry in lines(journal) if entry["op"] == "delete"]
    assert deletes == [
        {"op": "delete", "queue": "payments", "id": received.id, "handle": "current"},
        {"op": "delete", "queue": "payments", "id": None, "handle": "deleted"},
    ]


def test_a_journal_that_cannot_be_written_fails_no_call_and_says_so_once(
    backend: SQSBackend, journal: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    def full(self: Any, line: str) -> int:
        raise OSError(28, "No space left on device")

    class FullFile:
        write = full
        close = staticmethod(lambda: None)

    monkeypatch.setattr(sqs_journal._JOURNAL, "_file", FullFile())
    backend.send_message("payments", "{}")
    backend.send_message("payments", "{}")

    assert len(backend.receive_message("payments", 10, 0, 30, [])) == 2
    assert capsys.readouterr().err.count("no longer journaling") == 1
