"""``python -m shop.order.api``: serve the HTTP API (SIGTERM: finish requests, then exit)."""

from __future__ import annotations

import uvicorn

from shop.order.bootstrap import build_app
from shop.order.settings import OrderSettings


def main() -> None:
    settings = OrderSettings()
    uvicorn.run(
        build_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=20,
    )


if __name__ == "__main__":
    main()
