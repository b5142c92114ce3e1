"""HTTP to the shop's public endpoints (its APIs, its workers' health ports), with a refused
connection said in one line."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Final

import httpx

from shop.ops.errors import OpsError, Unreachable

TIMEOUT: Final = httpx.Timeout(10.0, connect=5.0)


@contextmanager
def reaching(what: str, url: str) -> Iterator[None]:
    """Turn a connection that fails inside the block into :class:`Unreachable`."""
    try:
        yield
    except (httpx.ConnectError, httpx.ConnectTimeout) as error:
        raise Unreachable(what, url) from error
    except httpx.TimeoutException as error:
        raise OpsError(f"{what} at {url} did not answer in time") from error
    except httpx.TransportError as error:
        raise OpsError(f"{what} at {url}: {error}") from error


TRIES_WHEN_BUSY: Final = 3
"""How many times a request a service answers 503 with ``Retry-After`` is sent in all:
the database away or too slow for a moment (a restart, a lock held) passes in seconds."""
LONGEST_WAIT: Final = 2.0
"""The longest ``Retry-After`` waited for here, in seconds: an operator or a test waits."""


def busy(reply: httpx.Response) -> bool:
    """Whether ``reply`` says to send the same request again shortly."""
    return reply.status_code == 503 and "retry-after" in reply.headers


async def asked_again_when_busy(
    send: Callable[[], Awaitable[httpx.Response]],
    *,
    also_when: tuple[type[Exception], ...] = (),
) -> httpx.Response:
    """``send()``, sent again while the answer is :func:`busy` (after the wait it asks,
    at most :data:`LONGEST_WAIT`), or it raises one of ``also_when``, up to
    :data:`TRIES_WHEN_BUSY` tries; the last answer, or error, as it is. Only for a request
    that may be sent twice: a read, or a change that carries its Idempotency-Key."""
    for tries_left in range(TRIES_WHEN_BUSY - 1, -1, -1):
        try:
            reply = await send()
        except also_when:
            if not tries_left:
                raise
            await asyncio.sleep(0.1)
            continue
        if not busy(reply) or not tries_left:
            return reply
        await asyncio.sleep(_wait_asked(reply))
    raise AssertionError("unreachable: the last try returns or raises")


def _wait_asked(reply: httpx.Response) -> float:
    try:
        return min(max(float(reply.headers["retry-after"]), 0.0), LONGEST_WAIT)
    except ValueError:  # an HTTP date: the shop's services send seconds
        return LONGEST_WAIT
