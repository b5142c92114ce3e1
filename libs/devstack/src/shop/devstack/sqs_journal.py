"""A journal of what moto's SQS did to each message: one JSON line for each message added to
a queue (sent, delivered by SNS, or moved to a dead-letter queue by a redrive), handed out by
a receive, hidden or shown by a visibility change, or deleted.

A message that a consumer never handled and never dead-lettered is otherwise a mystery: the
consumer logs nothing for a message it handled well, and moto logs requests, not messages.
With the journal, a ``grep`` of an event's id finds the ``add`` line of its message in each
queue it reached (the ``shop-headers`` attribute carries the event id), and a ``grep`` of
that message's id tells who received it how often, and what took it off. Each line::

    {"at": 1765140000.12, "op": "add", "queue": "shop-payment", "id": "…", "attributes": {…}}
    {"at": …, "op": "receive", "queue": …, "id": …, "count": 1, "visibility": 30}
    {"at": …, "op": "visibility", "queue": …, "id": …, "seconds": 0, "handle": "current"}
    {"at": …, "op": "delete", "queue": …, "id": …, "handle": "stale"}

``handle`` says what the receipt handle was: the message's latest (``current``), an earlier
one (``stale``: moto accepts any handle a message ever had, where SQS acts only on the
latest), one of a message deleted already (``deleted``: moto answers as if it deleted it
again), or none a receive handed out (``unknown``); the last two name no message (``id`` is
null). ``refused`` names the error of a delete or visibility change moto refused. Purges,
deleted queues and expired messages are not journaled. Each server starts a fresh file.

Like :mod:`shop.devstack.moto_server`, it wraps moto's backend classes; install it before
that module's lock, so that each line is written under the lock, in the order of the changes.
``tests/unit/test_sqs_journal.py`` runs it on moto's own backend: an upgrade that changes
what it wraps fails there.
"""

from __future__ import annotations

import contextlib
import functools
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from moto.sqs.models import Message, Queue, SQSBackend


class _Journal:
    """The file, and which message each receipt handle belongs to: a delete or a visibility
    change names its message without scanning the queue (under the server's one lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._file: TextIO | None = None
        self._holder: dict[str, str] = {}
        """Message id by receipt handle, for the messages not deleted yet."""
        self._handles: dict[str, list[str]] = {}
        """Each such message's receipt handles, the latest last."""

    def open(self, path: Path) -> None:
        with self._lock:
            self._close()
            self._file = path.open("w", encoding="utf-8", buffering=1)

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = None
        self._holder.clear()
        self._handles.clear()

    def write(self, op: str, queue: str, message_id: str | None, **fields: Any) -> None:
        entry = {"at": round(time.time(), 3), "op": op, "queue": queue, "id": message_id}
        line = json.dumps({**entry, **fields})
        with self._lock:
            if self._file is None:
                return
            try:
                self._file.write(line + "\n")
            except OSError as error:
                # A diagnostic must never fail the call it records: moto has made the change.
                print(f"sqs journal: {error}; no longer journaling", file=sys.stderr)
                self._close()

    def received(self, message: Message) -> None:
        receipt_handle = message.receipt_handle
        assert receipt_handle is not None  # set by the receive that handed it out
        with self._lock:
            self._holder[receipt_handle] = message.id
            self._handles.setdefault(message.id, []).append(receipt_handle)

    def holder(self, queue: Queue, receipt_handle: str) -> tuple[str | None, str]:
        """The id of the message ``receipt_handle`` belongs to, and what the handle is."""
        with self._lock:
            message_id = self._holder.get(receipt_handle)
            if message_id is not None:
                latest = self._handles[message_id][-1] == receipt_handle
                return message_id, "current" if latest else "stale"
        if receipt_handle in queue.deleted_messages:
            return None, "deleted"
        return None, "unknown"

    def deleted(self, message_id: str | None) -> None:
        with self._lock:
            for receipt_handle in self._handles.pop(message_id or "", []):
                self._holder.pop(receipt_handle, None)


_JOURNAL = _Journal()


def keep_journal(path: Path) -> None:
    """Journal every queue's messages into ``path`` (a fresh file, a line flushed at a
    time). The methods are wrapped once per process; a second call starts a new file."""
    _JOURNAL.open(path)
    if is_journaling():
        return
    wrappers: list[tuple[type, str, Callable[[Any], Any]]] = [
        (Queue, "add_message", _journaled_add),
        (Queue, "delete_message", _journaled_delete),
        (SQSBackend, "change_message_visibility", _journaled_visibility),
        (SQSBackend, "receive_message", _journaled_receive),
    ]
    for owner, name, journaled in wrappers:
        setattr(owner, name, journaled(getattr(owner, name)))
    Queue.add_message.__shop_journaled__ = True  # type: ignore[attr-defined]


def is_journaling() -> bool:
    return getattr(Queue.add_message, "__shop_journaled__", False)


def stop_journal() -> None:
    """Close the journal (the methods stay wrapped and write nothing more)."""
    _JOURNAL.close()


@contextlib.contextmanager
def _journaled_call(op: str, queue: str, message_id: str | None, **fields: Any) -> Iterator[None]:
    """Journal ``op`` once it is done; a call moto refused, with its error's name."""
    try:
        yield
    except Exception as error:
        _JOURNAL.write(op, queue, message_id, **fields, refused=type(error).__name__)
        raise
    _JOURNAL.write(op, queue, message_id, **fields)


def _journaled_add(add: Callable[[Queue, Message], None]) -> Callable[[Queue, Message], None]:
    @functools.wraps(add)
    def add_message(queue: Queue, message: Message) -> None:
        add(queue, message)
        attributes = {
            name: value.get("StringValue") for name, value in message.message_attributes.items()
        }
        _JOURNAL.write("add", queue.name, message.id, attributes=attributes)

    return add_message


def _journaled_delete(delete: Callable[[Queue, str], None]) -> Callable[[Queue, str], None]:
    @functools.wraps(delete)
    def delete_message(queue: Queue, receipt_handle: str) -> None:
        message_id, handle = _JOURNAL.holder(queue, receipt_handle)
        with _journaled_call("delete", queue.name, message_id, handle=handle):
            delete(queue, receipt_handle)
        _JOURNAL.deleted(message_id)

    return delete_message


def _journaled_visibility(change: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(change)
    def change_message_visibility(
        backend: SQSBackend, queue_name: str, receipt_handle: str, visibility_timeout: int
    ) -> None:
        queue = backend.get_queue(queue_name)
        message_id, handle = _JOURNAL.holder(queue, receipt_handle)
        seconds = int(visibility_timeout)
        with _journaled_call("visibility", queue_name, message_id, seconds=seconds, handle=handle):
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
            _JOURNAL.received(message)
            _JOURNAL.write(
                "receive",
                queue_name,
                message.id,
                count=message.approximate_receive_count,
                visibility=visibility_timeout,
            )
        return received

    return receive_message
