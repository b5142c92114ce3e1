"""The checkout's trace: FastAPI's SERVER span for ``POST /v1/orders``, and the outbox rows
the checkout writes on the raw asyncpg connection stamped with it, so that the relay and the
consumers continue the request's trace."""

from __future__ import annotations

import httpx
from opentelemetry.trace import SpanKind
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import decode
from shop.messaging.schema import outbox
from shop.messaging.testing import recording_spans

from .api_helpers import checkout_body

CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


async def outbox_traceparents(sessions: async_sessionmaker[AsyncSession]) -> list[str | None]:
    """Each row's ``traceparent`` header: the one trace context a message carries (its
    envelope has none)."""
    async with sessions() as session:
        rows = (await session.execute(select(outbox).order_by(outbox.c.id))).all()
    for row in rows:
        assert decode(row.body).traceparent is None
    return [row.headers.get("traceparent") for row in rows]


async def test_the_checkouts_outbox_rows_carry_the_trace_of_its_request(
    client: httpx.AsyncClient,
    order_headers: dict[str, str],
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    spans = recording_spans()
    response = await client.post(
        "/v1/orders", json=checkout_body(("SERUM-NIA-30", 1)), headers=order_headers
    )
    assert response.status_code == 201, response.text

    [request] = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert request.name == "POST /v1/orders"
    assert dict(request.attributes or {})["http.response.status_code"] == 201
    assert request.context is not None
    stamped = (
        f"00-{request.context.trace_id:032x}-{request.context.span_id:016x}"
        f"-{request.context.trace_flags:02x}"
    )
    # OrderCreated.
    assert await outbox_traceparents(sessions) == [stamped]


async def test_a_caller_that_sends_a_traceparent_has_the_checkout_join_its_trace(
    client: httpx.AsyncClient,
    order_headers: dict[str, str],
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    recording_spans()
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1)),
        headers={**order_headers, "traceparent": CALLER},
    )
    assert response.status_code == 201, response.text
    traceparents = await outbox_traceparents(sessions)
    assert [t.split("-")[1] if t else None for t in traceparents] == [CALLER.split("-")[1]]


async def test_probes_make_no_spans(client: httpx.AsyncClient) -> None:
    spans = recording_spans()
    for path in ("/healthz", "/readyz", "/metrics"):
        assert (await client.get(path)).status_code == 200
    assert spans.get_finished_spans() == ()
