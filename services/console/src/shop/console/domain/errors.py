"""Every error of the console's own rules, in one module."""

from __future__ import annotations


class ConsoleError(Exception):
    """Base of the console's errors."""


class MalformedPasswordHash(ConsoleError, ValueError):
    """A configured password hash that cannot be read."""


class NotFound(ConsoleError, LookupError):
    """What a page asks for does not exist (an order, a dead letter, a document, an e-mail)."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what
