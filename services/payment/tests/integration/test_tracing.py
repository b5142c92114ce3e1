"""The webhook's trace: FastAPI's SERVER span for the gateway's call, and the ProcessPayment
it adds to the outbox stamped with it, so that the worker's handling continues the trace."""

from __future__ import annotations

import httpx
from opentelemetry.trace import SpanKind
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import decode
from shop.messaging.schema import outbox
from shop.messaging.testing import recording_spans

from ..signing import shop_request
from .test_webhooks import paid


async def test_the_process_payment_command_carries_the_trace_of_the_webhook_call(
    client: httpx.AsyncClient, sessions: async_sessionmaker[AsyncSession]
) -> None:
    spans = recording_spans()
    response = await client.post("/v1/payments/webhook", **shop_request(paid()))
    assert response.status_code == 200, response.text

    [request] = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert request.name == "POST /v1/payments/webhook"
    assert request.context is not None
    async with sessions() as session:
        [row] = (await session.execute(select(outbox))).all()
    assert decode(row.body).traceparent is None  # the header is the message's one
    assert row.headers["traceparent"] == (
        f"00-{request.context.trace_id:032x}-{request.context.span_id:016x}"
        f"-{request.context.trace_flags:02x}"
    )
