"""The operator routes of payment-service's worker port on fakes: any ``since`` an operator
types for a reconciliation, and any query for a refund made by hand, is answered (a run or
a record, a 400 or a 409 that says what is wrong), never an error."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shop.payment.domain.errors import GatewayRefused
from shop.payment.domain.notifications import Provider
from shop.payment.domain.reconciliation import DriftKind
from shop.payment.operations import Reconciler, refund_by_hand_route
from shop.payment.service_layer import payments

from .fakes import FakeGateway, FakePaymentStore
from .test_payments import ORDER, late_refund_due, log


class CountingMetrics:
    def __init__(self) -> None:
        self.reports: list[dict[str, int]] = []

    def notification_disputed(self, provider: str) -> None: ...

    def reconciled(self, drift: dict[str, int]) -> None:
        self.reports.append(drift)


def reconciler() -> Reconciler:
    return Reconciler(
        FakePaymentStore(),
        {Provider.MIDTRANS: FakeGateway()},
        CountingMetrics(),
        interval=300,
        lookback=timedelta(days=7),
        settling=timedelta(minutes=1),
    )


async def run_now(since: str | None) -> tuple[int, dict[str, Any]]:
    [_, post] = reconciler().routes()
    status, body = await post.answer({} if since is None else {"since": since})
    return status, body


async def test_a_run_answers_its_report_with_every_kind_counted() -> None:
    status, body = await run_now("2026-12-01T00:00:00+00:00")
    assert status == 200
    assert body["since"] == "2026-12-01T00:00:00+00:00"
    assert body["checked"] == 0
    assert set(body["drift"]) == {kind.value for kind in DriftKind}
    assert not any(body["drift"].values())


async def test_a_time_without_a_zone_is_refused_with_an_example() -> None:
    status, body = await run_now("2026-12-01T00:00:00")
    assert status == 400
    assert "time zone" in str(body["detail"])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40) | st.datetimes(timezones=st.just(UTC)).map(datetime.isoformat))
async def test_any_since_is_a_run_or_a_400_that_names_it(since: str) -> None:
    status, body = await run_now(since)
    assert status in (200, 400)
    if status == 400:
        assert "since" in str(body["detail"])


def by_hand(store: FakePaymentStore) -> Any:
    return refund_by_hand_route(store).answer


async def refund_refused(store: FakePaymentStore) -> None:
    """A late payment whose refund the gateway refused (a bank transfer)."""
    gateway = FakeGateway()
    gateways = {Provider.MIDTRANS: gateway}
    command = await late_refund_due(store, gateway, gateways)
    gateway.refusal = "cannot refund a bank_transfer payment through its API"
    with contextlib.suppress(GatewayRefused):
        await payments.refund_payment(store, gateways, command, log)


async def test_a_refund_by_hand_is_recorded_once_and_answers_the_status() -> None:
    store = FakePaymentStore()
    await refund_refused(store)
    query = {"order_id": str(ORDER), "reference": "BCA-0042"}

    assert await by_hand(store)(query) == (
        200,
        {"order_id": str(ORDER), "reference": "BCA-0042", "status": "refunded"},
    )
    status, _ = await by_hand(store)(query)
    assert status == 200


@pytest.mark.parametrize(
    ("query", "status", "said"),
    [
        ({"reference": "r"}, 400, "order_id is required"),
        ({"order_id": "not-a-uuid", "reference": "r"}, 400, "UUID"),
        ({"order_id": str(ORDER), "reference": "r", "amount": "1.5"}, 400, "whole number"),
        ({"order_id": str(ORDER), "reference": " "}, 400, "1 to 120 printable characters"),
        ({"order_id": str(ORDER), "reference": "a\x00b"}, 400, "printable"),
        ({"order_id": str(ORDER), "reference": "r"}, 409, "no payment"),
    ],
)
async def test_a_refund_by_hand_that_cannot_be_recorded_says_why(
    query: dict[str, str], status: int, said: str
) -> None:
    answered, body = await by_hand(FakePaymentStore())(query)
    assert answered == status
    assert said in body["detail"]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["order_id", "reference", "amount", "other"]),
        st.text(max_size=150) | st.just(str(ORDER)) | st.integers().map(str),
    )
)
async def test_any_query_for_a_refund_by_hand_is_a_record_a_400_or_a_409(
    query: dict[str, str],
) -> None:
    store = FakePaymentStore()
    await refund_refused(store)
    status, body = await by_hand(store)(query)
    assert status in (200, 400, 409), body
