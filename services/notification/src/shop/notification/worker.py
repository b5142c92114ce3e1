"""``python -m shop.notification.worker``: send the order e-mails."""

from __future__ import annotations

import asyncio

from shop.notification.bootstrap import build_worker
from shop.notification.settings import NotificationSettings


def main() -> None:
    asyncio.run(build_worker(NotificationSettings(process="worker")).run())


if __name__ == "__main__":
    main()
