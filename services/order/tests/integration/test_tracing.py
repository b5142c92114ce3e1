"""The checkout's trace: FastAPI's SERVER span for ``POST /v1/orders``, and the outbox rows
the checkout writes on the raw asyncpg connection stamped with it, so that the relay and the
consumers continue the request's trace. The API is a public edge: the trace begins there,
whatever ``traceparent`` a caller sent, which is linked and not continued."""

from __future__ import annotations

import httpx
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import SpanKind
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import decode
from shop.messaging.schema import outbox
from shop.messaging.testing import recording_spans

from .api_helpers import checkout_body

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
CALLER = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
"""A caller's context, sampled: a frontend's, or anyone's."""


def traceparent_of(span: ReadableSpan) -> str:
    assert span.context is not None
    return (
        f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}"
        f"-{span.context.trace_flags:02x}"
    )


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
    # OrderCreated.
    assert await outbox_traceparents(sessions) == [traceparent_of(request)]


async def test_a_callers_traceparent_is_linked_and_the_checkout_starts_a_trace_of_its_own(
    client: httpx.AsyncClient,
    order_headers: dict[str, str],
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    spans = recording_spans()
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1)),
        headers={**order_headers, "traceparent": CALLER},
    )
    assert response.status_code == 201, response.text

    [request] = [s for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER]
    assert request.context is not None
    assert request.parent is None
    assert f"{request.context.trace_id:032x}" != CALLER_TRACE
    [link] = request.links
    assert (f"{link.context.trace_id:032x}", f"{link.context.span_id:016x}") == (
        CALLER_TRACE,
        CALLER_SPAN,
    )
    # The order's messages carry the shop's trace, not the caller's.
    assert await outbox_traceparents(sessions) == [traceparent_of(request)]


async def test_a_callers_sampled_flag_does_not_have_the_checkout_recorded(
    client: httpx.AsyncClient,
    order_headers: dict[str, str],
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # The process records no new trace (sample_ratio 0), as configure_tracing's sampler.
    trace.set_tracer_provider(TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.0))))
    spans = recording_spans()
    response = await client.post(
        "/v1/orders",
        json=checkout_body(("SERUM-NIA-30", 1)),
        headers={**order_headers, "traceparent": CALLER},
    )
    assert response.status_code == 201, response.text

    assert spans.get_finished_spans() == ()
    [stamped] = await outbox_traceparents(sessions)
    assert stamped is not None
    _, trace_id, _, flags = stamped.split("-")
    assert trace_id != CALLER_TRACE
    assert not int(flags, 16) & 0x01  # the sampled flag is off


async def test_probes_make_no_spans(client: httpx.AsyncClient) -> None:
    spans = recording_spans()
    for path in ("/healthz", "/readyz", "/metrics"):
        assert (await client.get(path)).status_code == 200
    assert spans.get_finished_spans() == ()
