"""``python -m shop.console.api``: serve the console (SIGTERM: finish requests, then exit)."""

from __future__ import annotations

import uvicorn

from shop.console.bootstrap import build_app
from shop.console.settings import ConsoleSettings


def main() -> None:
    settings = ConsoleSettings()
    uvicorn.run(
        build_app(settings),
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=10,
    )


if __name__ == "__main__":
    main()
