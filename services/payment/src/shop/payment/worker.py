"""``python -m shop.payment.worker``: open, settle and expire payments; relay the outbox."""

from __future__ import annotations

import asyncio

from shop.payment.bootstrap import build_worker
from shop.payment.settings import PaymentSettings


def main() -> None:
    asyncio.run(build_worker(PaymentSettings(process="worker")).run())


if __name__ == "__main__":
    main()
