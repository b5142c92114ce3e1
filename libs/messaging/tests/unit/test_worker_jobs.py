"""A worker runs a service's jobs beside its consumers until it stops, and serves the
service's operator routes on its health port, on the memory transport."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import httpx

from shop.messaging import MessagingSettings, OperatorRoute, Worker, create_transport
from shop.messaging.testing import running


async def test_a_job_runs_until_the_worker_stops_and_then_returns() -> None:
    rounds: list[int] = []
    three_rounds, returned = asyncio.Event(), asyncio.Event()

    async def job(stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            rounds.append(1)
            if len(rounds) == 3:
                three_rounds.set()
            await asyncio.sleep(0.01)
        returned.set()

    settings = MessagingSettings(transport="memory")
    worker = Worker(settings, create_transport(settings), jobs=[job])
    async with running(worker):
        await asyncio.wait_for(three_rounds.wait(), timeout=10)
        assert not returned.is_set()
    assert returned.is_set()


async def test_an_operator_route_answers_on_the_health_port_with_its_query() -> None:
    async def answer(query: Mapping[str, str]) -> tuple[int, Any]:
        return 201, {"asked": dict(query)}

    settings = MessagingSettings(transport="memory")
    worker = Worker(
        settings,
        create_transport(settings),
        health_port=0,
        routes=[OperatorRoute("POST", "/things", answer)],
    )
    async with running(worker):
        assert worker.health is not None
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{worker.health.port}") as client:
            reply = await client.post("/things", params={"since": "yesterday"})
            missing = await client.get("/things")
    assert (reply.status_code, reply.json()) == (201, {"asked": {"since": "yesterday"}})
    assert missing.status_code == 405
