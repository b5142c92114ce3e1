"""A journal of what moto's SQS did to each message: one JSON line for each message added to
a queue (sent, delivered by SNS, or moved to a dead-letter queue by a redrive), handed out by
a receive, hidden or shown by a visibility change, or deleted.

A message that a consumer never handled and never dead-lettered is otherwise a mystery: the
consumer logs nothing for a message it handled well, and moto logs requests, not messages.
With the journal, one ``grep`` of a message's id (or of its event's id, which its
``shop-headers`` attribute carries) tells whether it reached its queue, who received it how
often, and what took it off. Each line::

    {"at": 1765140000.12, "op": "add", "queue": "shop-payment", "id": "…", "attributes": {…}}
    {"at": …, "op": "receive", "queue": …, "id": …, "count": 1, "visibility": 30}
    {"at": …, "op": "visibility", "queue": …, "id": …, "seconds": 0, "handle": "current"}
    {"at": …, "op": "delete", "queue": …, "id": …, "handle": "stale"}

``handle`` says whether the receipt handle was the message's latest one: moto accepts any
handle a message ever had, where SQS acts only on the latest. An ``id`` of null is a handle
that matched no message (moto then refuses the call).

Like :mod:`shop.devstack.moto_server`, it wraps moto's backend classes; install it before
that module's lock, so that each line is written under the lock, in the order of the changes.
``tests/unit/test_sqs_journal.py`` pins what it wraps.
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Final, TextIO

from moto.sqs.models import Message, Queue, SQSBackend

_WRITING: Final = threading.Lock()
_journal: TextIO | None = None


def keep_journal(path: Path) -> None:
    """Journal every queue's messages into ``path`` (appended, a line flushed at a time);
    once per process: a second call changes nothing."""
    global _journal  # noqa: PLW0603 - one journal per server process
    if _journal is not None:
        return
    _journal = path.open("a", encoding="utf-8", buffering=1)
    wrappers: list[tuple[type, str, Callable[[Any], Any]]] = [
        (Queue, "add_message", _journaled_add),
        (Queue, "delete_message", _journaled_delete),
        (SQSBackend, "change_message_visibility", _journaled_visibility),
        (SQSBackend, "receive_message", _journaled_receive),
    ]
    for owner, name, journaled in wrappers:
        setattr(owner, name, journaled(getattr(owner, name)))


def stop_journal() -> None:
    """Close the journal (the methods stay wrapped and write nothing more)."""
    global _journal  # noqa: PLW0603
    with _WRITING:
        if _journal is not None:
            _journal.close()
        _journal = None


def _write(op: str, queue: str, message_id: str | None, **fields: Any) -> None:
    line = json.dumps(
        {"at": round(time.time(), 3), "op": op, "queue": queue, "id": message_id, **fields}
    )
    with _WRITING:
        if _journal is not None and not _journal.closed:
            _journal.write(line + "\n")


@contextlib.contextmanager
def _refusal_written(op: str, queue: str, message_id: str | None, **fields: Any) -> Iterator[None]:
    """Journal ``op`` once it is done; a call moto refused, with its error's name."""
    try:
        yield
    except Exception as error:
        _write(op, queue, message_id, **fields, refused=type(error).__name__)
        raise
    _write(op, queue, message_id, **fields)


def _holder(messages: Iterable[Message], receipt_handle: str) -> tuple[str | None, str]:
    """The id of the message ``receipt_handle`` belongs to, and whether it is its latest."""
    for message in messages:
        if message.had_receipt_handle(receipt_handle):
            latest = message.receipt_handle == receipt_handle
            return message.id, "current" if latest else "stale"
    return None, "unknown"


def _journaled_add(add: Callable[[Queue, Message], None]) -> Callable[[Queue, Message], None]:
    @functools.wraps(add)
    def add_message(queue: Queue, message: Message) -> None:
        add(queue, message)
        attributes = {
            name: value.get("StringValue") for name, value in message.message_attributes.items()
        }
        _write("add", queue.name, message.id, attributes=attributes)

    return add_message


def _journaled_delete(delete: Callable[[Queue, str], None]) -> Callable[[Queue, str], None]:
    @functools.wraps(delete)
    def delete_message(queue: Queue, receipt_handle: str) -> None:
        message_id, handle = _holder(queue._messages, receipt_handle)
        with _refusal_written("delete", queue.name, message_id, handle=handle):
            delete(queue, receipt_handle)

    return delete_message


def _journaled_visibility(change: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(change)
    def change_message_visibility(
        backend: SQSBackend, queue_name: str, receipt_handle: str, visibility_timeout: int
    ) -> None:
        queue = backend.get_queue(queue_name)
        message_id, handle = _holder(queue._messages, receipt_handle)
        seconds = int(visibility_timeout)
        with _refusal_written("visibility", queue_name, message_id, seconds=seconds, handle=handle):
            change(backend, queue_name, receipt_handle, visibility_timeout)

    return change_message_visibility


def _journaled_receive(receive: Callable[..., list[Message]]) -> Callable[..., list[Message]]:
    @functools.wraps(receive)
    def receive_message(
        backend: SQSBackend,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        *rest: Any,
    ) -> list[Message]:
        received = receive(
            backend, queue_name, count, wait_seconds_timeout, visibility_timeout, *rest
        )
        for message in received:
            _write(
                "receive",
                queue_name,
                message.id,
                count=message.approximate_receive_count,
                visibility=visibility_timeout,
            )
        return received

    return receive_message
