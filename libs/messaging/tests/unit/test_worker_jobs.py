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


async def _asked(token: str | None, headers: dict[str, str]) -> httpx.Response:
    async def answer(query: Mapping[str, str]) -> tuple[int, Any]:
        return 200, {"asked": dict(query)}

    settings = MessagingSettings(transport="memory")
    worker = Worker(
        settings,
        create_transport(settings),
        health_port=0,
        routes=[OperatorRoute("GET", "/things/{thing_id}", answer)],
        operator_token=token,
    )
    async with running(worker):
        assert worker.health is not None
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{worker.health.port}") as client:
            reply = await client.get("/things/42", params={"limit": "3"}, headers=headers)
            assert (await client.get("/healthz")).status_code == 200
            return reply


async def test_an_operator_route_is_given_the_path_parameters_beside_the_query() -> None:
    reply = await _asked(None, {})
    assert (reply.status_code, reply.json()) == (200, {"asked": {"limit": "3", "thing_id": "42"}})


async def test_with_an_operator_token_a_route_answers_only_the_bearer_of_it() -> None:
    token = "an-operator-token-of-this-test"
    allowed = await _asked(token, {"Authorization": f"Bearer {token}"})
    assert allowed.status_code == 200


async def test_without_the_operator_token_a_route_is_refused_with_401_saying_why() -> None:
    token = "an-operator-token-of-this-test"
    missing = await _asked(token, {})
    wrong = await _asked(token, {"Authorization": "Bearer another-token"})
    assert missing.status_code == wrong.status_code == 401
    assert missing.headers["WWW-Authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in missing.json()["detail"]
    assert wrong.json() == {"detail": "the operator token is not this service's"}
