"""What payment-service's worker runs beside its handlers: the reconciliation, every
``reconcile_interval_seconds`` by one worker at a time, and on demand through the operator
routes of the worker's port (``shopctl reconcile`` asks them); and the record of a refund a
person made by hand (``shopctl refunded-by-hand``)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import structlog

from shop.messaging import OperatorRoute
from shop.payment.domain.errors import RefundByHandRefused
from shop.payment.domain.reconciliation import Report
from shop.payment.ports import PaymentMetrics, PaymentStore
from shop.payment.service_layer.payments import Gateways, record_refund_by_hand
from shop.payment.service_layer.reconciliation import reconcile

log = structlog.get_logger("shop.payment.reconciliation")

RECONCILIATION_PATH: Final = "/reconciliation"
_JOB: Final = "payment-service:reconciliation"
_LIMIT: Final = 5000


class Reconciler:
    def __init__(
        self,
        store: PaymentStore,
        gateways: Gateways,
        metrics: PaymentMetrics,
        *,
        interval: float,
        lookback: timedelta,
        settling: timedelta,
    ) -> None:
        self.store = store
        self.gateways = gateways
        self.metrics = metrics
        self.interval = interval
        self.lookback = lookback
        self.settling = settling
        self.latest: Report | None = None

    async def run(self, since: datetime | None = None) -> Report | None:
        """One reconciliation, unless another worker is running one (None)."""
        async with self.store.alone(_JOB) as mine:
            if not mine:
                return None
            start = since or datetime.now(UTC) - self.lookback
            report = await reconcile(
                self.store,
                self.gateways,
                since=start,
                limit=_LIMIT,
                log=log,
                settling=self.settling,
            )
        self.latest = report
        self.metrics.reconciled(report.counts())
        return report

    async def every_interval(self, stopping: asyncio.Event) -> None:
        """The worker's job: a reconciliation each interval until the worker stops. A run
        that fails is logged and tried again at the next interval: it must not stop the
        worker's consumers."""
        while not stopping.is_set():
            try:
                await self.run()
            except Exception:
                log.exception("reconciliation failed; tried again at the next interval")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=self.interval)

    def routes(self) -> list[OperatorRoute]:
        return [
            OperatorRoute("GET", RECONCILIATION_PATH, self._latest),
            OperatorRoute("POST", RECONCILIATION_PATH, self._run_now),
        ]

    async def _latest(self, _: Mapping[str, str]) -> tuple[int, Any]:
        if self.latest is None:
            return 404, {"detail": "no reconciliation has run in this worker yet"}
        return 200, report_document(self.latest)

    async def _run_now(self, query: Mapping[str, str]) -> tuple[int, Any]:
        since = None
        if "since" in query:
            try:
                since = datetime.fromisoformat(query["since"])
            except ValueError:
                return 400, {"detail": f"since={query['since']!r} is not an ISO 8601 time"}
            if since.tzinfo is None:
                return 400, {"detail": "since needs a time zone (e.g. 2026-12-01T00:00:00Z)"}
        report = await self.run(since)
        if report is None:
            return 409, {"detail": "another worker is reconciling now; ask again soon"}
        return 200, report_document(report)


REFUND_BY_HAND_PATH: Final = "/refunds/by-hand"


def refund_by_hand_route(store: PaymentStore) -> OperatorRoute:
    """``POST /refunds/by-hand?order_id=…&reference=…[&amount=…]``: a refund a person made
    outside the gateway, recorded (once per reference) so that the payment ends refunded."""

    async def record(query: Mapping[str, str]) -> tuple[int, Any]:
        try:
            order_id = uuid.UUID(query["order_id"])
            reference = query["reference"].strip()
            amount = int(query["amount"]) if "amount" in query else None
        except KeyError as missing:
            return 400, {"detail": f"{missing.args[0]} is required"}
        except ValueError as error:
            return 400, {"detail": f"order_id must be a UUID and amount a whole number: {error}"}
        if not reference or len(reference) > _MAX_REFERENCE or not reference.isprintable():
            return 400, {"detail": f"reference must be 1 to {_MAX_REFERENCE} printable characters"}
        try:
            status = await record_refund_by_hand(
                store, order_id, reference=reference, amount=amount, log=log
            )
        except RefundByHandRefused as refused:
            return 409, {"detail": str(refused)}
        return 200, {"order_id": str(order_id), "reference": reference, "status": status.value}

    return OperatorRoute("POST", REFUND_BY_HAND_PATH, record)


_MAX_REFERENCE: Final = 120
"""Room for a bank's transfer reference; ``payment_reversals.reference`` holds 200."""


def report_document(report: Report) -> dict[str, Any]:
    """The report as JSON: what ``shopctl reconcile --json`` prints."""
    return {
        "since": report.since.isoformat(),
        "started_at": report.started_at.isoformat(),
        "finished_at": report.finished_at.isoformat(),
        "checked": report.checked,
        "drift": report.counts(),
        "findings": [
            {
                "kind": finding.kind.value,
                "order_id": str(finding.order_id),
                "shop_status": finding.shop_status,
                "gateway_status": finding.gateway_status,
                "repaired": finding.repaired,
                "detail": finding.detail,
            }
            for finding in report.findings
        ],
    }
