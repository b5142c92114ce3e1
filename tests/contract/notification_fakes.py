"""notification-service's ports in memory: a mail provider that accepts everything, and the
record of what was sent."""

from __future__ import annotations

import uuid
from typing import Any

from shop.notification.domain.kinds import NotificationKind
from shop.notification.ports import Email


class AcceptingProvider:
    def __init__(self) -> None:
        self.sent: list[Email] = []

    async def send(self, email: Email) -> None:
        self.sent.append(email)


class SentLog:
    def __init__(self) -> None:
        self.marks: dict[tuple[uuid.UUID, NotificationKind], dict[str, Any]] = {}

    async def already_sent(self, order_id: uuid.UUID, kind: NotificationKind) -> bool:
        return (order_id, kind) in self.marks

    async def mark_sent(self, order_id: uuid.UUID, kind: NotificationKind, **facts: Any) -> bool:
        if (order_id, kind) in self.marks:
            return False
        self.marks[(order_id, kind)] = facts
        return True
