"""What goes wrong when operating the shop, said in one line: the command line prints the
message as it is and exits 1."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


class OpsError(Exception):
    """An operation that could not be done, with the one-line reason."""


class Unreachable(OpsError):
    """A part of the running shop did not answer at all."""

    def __init__(self, what: str, where: str) -> None:
        super().__init__(f"cannot reach {what} at {where}: is `make run` running?")
        self.what = what
        self.where = where


def redacted(url: str) -> str:
    """``url`` without its password, fit for a message."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=f"{user}{host}"))
