"""How long one of a service's statements may run, wait for a lock, or leave a transaction
open: set on every connection as it opens (in the startup packet, not a statement more per
checkout), so that a request waiting on another's lock fails fast instead of hanging, and
its caller is told to try again (:func:`shop.database.driver.timed_out`)."""

from __future__ import annotations

from typing import Self
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, model_validator


class DatabaseTimeouts(BaseModel):
    """Each in seconds; 0 turns that one off (Postgres' own default)."""

    model_config = ConfigDict(frozen=True)

    lock_seconds: float = Field(default=2.0, ge=0)
    """A row lock a checkout waits for (another checkout of the same product, a payment
    being applied to the same order) is held for milliseconds; one held for seconds is a
    stuck transaction, and waiting longer only piles requests up behind it."""
    statement_seconds: float = Field(default=15.0, ge=0)
    """Every statement of the services is an indexed read or a bounded batch; one that runs
    this long is a defect or an overloaded database, and a caller has long given up."""
    idle_in_transaction_seconds: float = Field(default=300.0, ge=0)
    """A transaction left open doing nothing (a process frozen mid-request) is ended, and
    with it the locks it holds. Longer than anything a service does inside a transaction
    that is not a statement: notification-service sends an e-mail inside its hold, for as
    long as a handler's timeout (``messaging.handler_timeout``, 120 s) allows."""
    pool_seconds: float = Field(default=3.0, gt=0)
    """How long a request waits for one of the pool's connections (every one busy, as
    when requests pile up behind a lock) before it is answered 503 to try again, instead
    of SQLAlchemy's 30 s: a caller has given up long before. Not a server setting."""

    @model_validator(mode="after")
    def lock_within_statement(self) -> Self:
        if self.statement_seconds and self.lock_seconds > self.statement_seconds:
            # The statement's timeout would always fire first: the lock's would never say
            # what the wait was for.
            raise ValueError("lock_seconds must not exceed statement_seconds")
        return self

    def server_settings(self) -> dict[str, str]:
        """The settings as Postgres takes them at connection time (milliseconds)."""
        return {
            "lock_timeout": _milliseconds(self.lock_seconds),
            "statement_timeout": _milliseconds(self.statement_seconds),
            "idle_in_transaction_session_timeout": _milliseconds(self.idle_in_transaction_seconds),
        }

    def dsn(self, url: str) -> str:
        """``url`` with the settings in its query, for the connections a library opens with
        asyncpg itself (the relay's, the cleanups'): asyncpg sends the query parameters it
        does not know as server settings. Those already in ``url`` are kept."""
        parts = urlsplit(url)
        query = dict(parse_qsl(parts.query))
        for name, value in self.server_settings().items():
            query.setdefault(name, value)
        return urlunsplit(parts._replace(query=urlencode(query)))


def _milliseconds(seconds: float) -> str:
    return str(round(seconds * 1000))
