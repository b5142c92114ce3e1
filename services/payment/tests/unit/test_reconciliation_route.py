"""The reconciliation's operator route (``POST /reconciliation?since=…`` on the worker's
port) on fakes: any ``since`` an operator types is answered, a run or a 400 that says what
is wrong, never an error."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from shop.payment.domain.notifications import Provider
from shop.payment.domain.reconciliation import DriftKind
from shop.payment.operations import Reconciler

from .fakes import FakeGateway, FakePaymentStore


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
