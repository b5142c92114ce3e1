"""moto's server with its SQS queues made safe for concurrent requests, and sends and
receives that cost the same however deep their queue.

moto's server answers each request on a thread of its own, but its SQS queues change their
message lists without a lock: ``Queue.delete_message`` rebuilds the list from a copy, so a
message SNS adds to the queue meanwhile is lost, and a message another request deletes
meanwhile comes back; two receives can hand out one message at once. A real SQS does none
of this, and under the shop's load it lost messages and delivered deleted ones again.

This module runs ``moto.server`` with every change to a queue's messages under one lock.
A long poll holds it only while it looks: it waits for a message outside it. And moto
counts every message of a queue (three times) each time it sends to it, and each time it
hands out one of its messages: that is skipped (see :func:`count_queues_only_when_asked`).
It reaches under moto's public API (its backend classes), so
``tests/unit/test_moto_server.py`` pins the methods it wraps and shows the race and the
counting still there without it: an upgrade that changes either fails that test, loudly.
"""

from __future__ import annotations

import argparse
import functools
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from moto.server import main as moto_main
from moto.sqs.models import Queue, SQSBackend

from shop.devstack.sqs_journal import keep_journal

QUEUE_WRITES: Final = threading.RLock()
"""Held by every change to a queue's messages (the server's one SQS lock)."""

_WRAPPED: Final = {
    Queue: ("add_message", "delete_message"),
    SQSBackend: ("change_message_visibility", "purge_queue"),
}
"""The methods that change a queue's messages; ``receive_message`` is wrapped apart."""


def _under_lock(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def locked(*args: Any, **kwargs: Any) -> Any:
        with QUEUE_WRITES:
            return method(*args, **kwargs)

    return locked


def _polling_outside_lock(receive: Callable[..., Any]) -> Callable[..., Any]:
    """``receive_message`` that looks under the lock and waits for a message outside it:
    a long poll holding the lock would hold up every send it waits for."""

    @functools.wraps(receive)
    def receive_message(
        self: SQSBackend, queue_name: str, count: int, wait_seconds_timeout: int, *rest: Any
    ) -> Any:
        # rest: the visibility timeout and the attribute names, passed on as they came
        deadline = time.monotonic() + wait_seconds_timeout
        while True:
            with QUEUE_WRITES:
                found = receive(self, queue_name, count, 0, *rest)
            left = deadline - time.monotonic()
            if found or left <= 0:
                return found
            # Woken by a send; a message whose visibility ends is seen at the next look.
            self.get_queue(queue_name).wait_for_messages(min(1, left))  # type: ignore[arg-type]

    receive_message.__shop_serialised__ = True  # type: ignore[attr-defined]
    return receive_message


def serialise_queue_writes() -> None:
    """Wrap moto's SQS methods (once; a second call changes nothing)."""
    if is_serialised():
        return
    for owner, names in _WRAPPED.items():
        for name in names:
            setattr(owner, name, _under_lock(getattr(owner, name)))
    SQSBackend.receive_message = _polling_outside_lock(SQSBackend.receive_message)  # type: ignore[method-assign]


def is_serialised() -> bool:
    return getattr(SQSBackend.receive_message, "__shop_serialised__", False)


_COUNTS: Final = (
    "approximate_number_of_messages",
    "approximate_number_of_messages_delayed",
    "approximate_number_of_messages_not_visible",
)
"""The queue's properties that look at every message of it."""
_UNCOUNTED: Final = ("send_message", "receive_message")
"""The calls that read the queue's attributes, never its counts."""

_not_counting = threading.local()


def _without_counts(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def uncounted(*args: Any, **kwargs: Any) -> Any:
        before = getattr(_not_counting, "now", False)
        _not_counting.now = True
        try:
            return method(*args, **kwargs)
        finally:
            _not_counting.now = before

    uncounted.__shop_uncounted__ = True  # type: ignore[attr-defined]
    return uncounted


def _zero_while_not_counting(count: property) -> property:
    def counted(queue: Queue) -> int:
        return 0 if getattr(_not_counting, "now", False) else int(count.fget(queue))  # type: ignore[misc]

    return property(counted)


def count_queues_only_when_asked() -> None:
    """Sends and receives no longer count the queue's messages (once; a second call
    changes nothing).

    ``SQSBackend.send_message`` reads ``queue.attributes`` for one setting (content-based
    deduplication), and ``receive_message`` reads them for the retention period once for
    each message it hands out; that property counts the queue's messages three ways,
    looking at each. So a send cost as much as its queue was deep and a receive of ten
    thirty times that, under the one queue lock: a deep queue (e-mails waiting out a slow
    provider) held up every send to every queue. While a send or a receive runs (on this
    request's thread) the counts read 0; everywhere else they are counted as before."""
    if skips_counts():
        return
    for name in _COUNTS:
        setattr(Queue, name, _zero_while_not_counting(getattr(Queue, name)))
    for name in _UNCOUNTED:
        setattr(SQSBackend, name, _without_counts(getattr(SQSBackend, name)))


def skips_counts() -> bool:
    return getattr(SQSBackend.send_message, "__shop_uncounted__", False)


def main(argv: list[str] | None = None) -> None:
    """``python -m shop.devstack.moto_server [--journal PATH]`` and ``moto.server``'s
    arguments: with ``--journal``, what SQS does to each message is journaled there
    (:mod:`shop.devstack.sqs_journal`)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--journal", type=Path)
    known, moto_args = options.parse_known_args(sys.argv[1:] if argv is None else argv)
    if known.journal is not None:
        keep_journal(known.journal)  # first: its lines are then written under the lock
    serialise_queue_writes()
    count_queues_only_when_asked()
    moto_main(moto_args)


if __name__ == "__main__":
    main()
