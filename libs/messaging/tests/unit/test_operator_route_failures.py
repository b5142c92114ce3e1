"""An operator route that fails unexpectedly is still answered in JSON, as the public APIs'
problem documents are: a 503 with ``Retry-After`` when the worker's ``outage`` says what it
needs is away (its database), a 500 otherwise; never aiohttp's plain-text page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from shop.messaging import MessagingSettings, OperatorRoute, Worker
from shop.messaging.testing import running
from shop.messaging.transports import create_transport


async def _database_away(_: Mapping[str, str]) -> tuple[int, Any]:
    raise ConnectionRefusedError("connect call failed ('127.0.0.1', 5432)")


async def _defect(_: Mapping[str, str]) -> tuple[int, Any]:
    raise RuntimeError("a bug in the route")


ROUTES = [
    OperatorRoute("GET", "/internal/v1/away", _database_away),
    OperatorRoute("GET", "/internal/v1/defect", _defect),
]


async def test_an_outage_is_a_503_to_ask_again_and_a_defect_a_500_both_in_json() -> None:
    settings = MessagingSettings(transport="memory")
    worker = Worker(
        settings,
        create_transport(settings),
        outage=lambda error: isinstance(error, ConnectionError),
        health_port=0,
        routes=ROUTES,
    )
    async with running(worker):
        assert worker.health is not None
        base = f"http://127.0.0.1:{worker.health.port}"
        async with httpx.AsyncClient(base_url=base) as client:
            away = await client.get("/internal/v1/away")
            defect = await client.get("/internal/v1/defect")

    assert away.status_code == 503
    assert away.headers["Retry-After"] == "1"
    assert away.headers["Content-Type"].startswith("application/problem+json")
    assert away.json()["status"] == 503
    assert "ask again shortly" in away.json()["detail"]
    assert defect.status_code == 500
    assert defect.headers["Content-Type"].startswith("application/problem+json")
    assert defect.json()["detail"] == "unexpected RuntimeError (the worker's log has more)"
    assert "a bug" not in defect.text  # what failed inside stays in the log
