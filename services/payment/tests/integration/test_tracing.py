"""The webhook's trace: FastAPI's SERVER span for the gateway's call, and the ProcessPayment
it adds to the outbox stamped with it, so that the worker's handling continues the trace. The
webhook is a public edge: the trace begins there, whatever ``traceparent`` the caller sent,
which is linked and not continued."""

from __future__ import annotations

from typing import Any

import httpx
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from structlog.testing import capture_logs

from shop.contracts import decode
from shop.messaging.logging import add_trace_ids
from shop.messaging.schema import outbox
from shop.messaging.testing import recording_spans

from ..signing import shop_request
from .test_webhooks import paid

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
CALLER = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
"""A caller's context, sampled: the gateway's, or anyone's who can reach the webhook."""


def with_traceparent(request: dict[str, Any], traceparent: str) -> dict[str, Any]:
    return {**request, "headers": {**request["headers"], "traceparent": traceparent}}


async def outbox_traceparent(sessions: async_sessionmaker[AsyncSession]) -> str:
    async with sessions() as session:
        [row] = (await session.execute(select(outbox))).all()
    traceparent: str = row.headers["traceparent"]
    return traceparent


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


async def test_a_callers_traceparent_is_linked_and_the_webhook_starts_a_trace_of_its_own(
    client: httpx.AsyncClient, sessions: async_sessionmaker[AsyncSession]
) -> None:
    spans = recording_spans()
    with capture_logs(processors=[add_trace_ids]) as logs:
        response = await client.post(
            "/v1/payments/webhook", **with_traceparent(shop_request(paid()), CALLER)
        )
    assert response.status_code == 200, response.text

    [request] = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert request.context is not None
    assert request.parent is None
    own_trace = f"{request.context.trace_id:032x}"
    assert own_trace != CALLER_TRACE
    [link] = request.links
    assert (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") == (
        CALLER_TRACE,
        CALLER_SPAN,
    )
    # The ProcessPayment and the log line carry the shop's trace, not the caller's.
    assert (await outbox_traceparent(sessions)).split("-")[1] == own_trace
    [taken] = [line for line in logs if line["event"] == "payment notification taken"]
    assert taken["trace_id"] == own_trace


async def test_a_callers_sampled_flag_does_not_have_the_webhook_recorded(
    client: httpx.AsyncClient, sessions: async_sessionmaker[AsyncSession]
) -> None:
    # The process records no new trace (sample_ratio 0), as configure_tracing's sampler.
    trace.set_tracer_provider(TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.0))))
    spans = recording_spans()
    response = await client.post(
        "/v1/payments/webhook", **with_traceparent(shop_request(paid()), CALLER)
    )
    assert response.status_code == 200, response.text

    assert spans.get_finished_spans() == ()
    _, trace_id, _, flags = (await outbox_traceparent(sessions)).split("-")
    assert trace_id != CALLER_TRACE
    assert not int(flags, 16) & 0x01  # the sampled flag is off
