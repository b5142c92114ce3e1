"""HTTP to the shop's public endpoints (its APIs, its workers' health ports), with a refused
connection said in one line."""

from __future__ import annotations

from collections.abc import Iterator
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
