"""notification-service's ports in memory: a mail provider that accepts everything, and the
record of what was sent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from shop.notification.domain.kinds import NotificationKey
from shop.notification.ports import Email


class AcceptingProvider:
    def __init__(self) -> None:
        self.sent: list[Email] = []

    async def send(self, email: Email) -> None:
        self.sent.append(email)


class SentLog:
    def __init__(self) -> None:
        self.marks: dict[NotificationKey, dict[str, Any]] = {}

    @asynccontextmanager
    async def sending(self, key: NotificationKey) -> AsyncIterator[SentLog]:
        yield self

    async def already_sent(self, key: NotificationKey) -> bool:
        return key in self.marks

    async def mark_sent(self, key: NotificationKey, **facts: Any) -> bool:
        if key in self.marks:
            return False
        self.marks[key] = facts
        return True
