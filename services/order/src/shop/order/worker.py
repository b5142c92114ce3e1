"""``python -m shop.order.worker``: consume PaymentReceived and relay the outbox."""

from __future__ import annotations

import asyncio

from shop.order.bootstrap import build_worker
from shop.order.settings import OrderSettings


def main() -> None:
    asyncio.run(build_worker(OrderSettings(process="worker")).run())


if __name__ == "__main__":
    main()
