"""``python -m shop.console.api``: serve the console (SIGTERM: finish requests, then exit)."""

from __future__ import annotations

import uvicorn
from fastapi import FastAPI

from shop.console.bootstrap import build_app
from shop.console.settings import ConsoleSettings


def server_config(app: FastAPI, settings: ConsoleSettings) -> uvicorn.Config:
    # No proxy stands in front of the console: operators reach it through a port-forward,
    # which connects from the pod's loopback, an address uvicorn would otherwise trust to
    # name the client in X-Forwarded-For; the login throttle keys on the client's address.
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level="warning",
        timeout_graceful_shutdown=10,
        proxy_headers=False,
    )


def main() -> None:
    settings = ConsoleSettings()
    uvicorn.Server(server_config(build_app(settings), settings)).run()


if __name__ == "__main__":
    main()
