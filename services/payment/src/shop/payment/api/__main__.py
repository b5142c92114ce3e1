"""``python -m shop.payment.api``: serve the webhooks (SIGTERM: finish requests, then exit)."""

from __future__ import annotations

import uvicorn

from shop.payment.bootstrap import build_app
from shop.payment.settings import PaymentSettings


def main() -> None:
    settings = PaymentSettings(process="api")
    uvicorn.run(
        build_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=20,
    )


if __name__ == "__main__":
    main()
