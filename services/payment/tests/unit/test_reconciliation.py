"""Reconciliation on fakes: drift between the gateway's records and the shop's payments is
found, repaired where the rules can, flagged where a person must decide, and counted."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import structlog

from shop.contracts import PaymentReceived, RefundPayment
from shop.payment.domain.errors import GatewayRefused
from shop.payment.domain.gateway import ChargeState, GatewayReversal, ReversalKind
from shop.payment.domain.notifications import Provider
from shop.payment.domain.reconciliation import DriftKind
from shop.payment.domain.status import PaymentStatus
from shop.payment.service_layer import payments
from shop.payment.service_layer.reconciliation import reconcile

from .fakes import FakeGateway, FakePaymentStore
from .test_payments import ORDER, TOTAL, charge, opened

log = structlog.get_logger("test")
SINCE = datetime(2026, 12, 1, tzinfo=UTC)


async def run(store: FakePaymentStore, gateway: FakeGateway) -> Any:
    return await reconcile(store, {Provider.MIDTRANS: gateway}, since=SINCE, limit=100, log=log)


def settled_long_ago(state: ChargeState, status: str, *reversals: GatewayReversal) -> Any:
    return replace(
        charge(state, status, *reversals), settled_at=datetime.now(UTC) - timedelta(hours=1)
    )


async def test_a_settlement_the_shop_never_heard_of_is_found_and_repaired() -> None:
    store, gateway = FakePaymentStore(), FakeGateway()
    await opened(store)
    gateway.charges[ORDER] = settled_long_ago(ChargeState.PAID, "settlement")

    report = await run(store, gateway)

    assert report.counts()[DriftKind.SETTLEMENT_MISSED] == 1
    [finding] = report.findings
    assert finding.repaired
    assert store.state.payments[ORDER].status == PaymentStatus.PAID
    assert len(store.state.sent(PaymentReceived)) == 1
    again = await run(store, gateway)
    assert again.findings == (), "repaired: nothing left to find"


async def test_a_settlement_still_in_flight_is_not_drift_yet() -> None:
    store, gateway = FakePaymentStore(), FakeGateway()
    await opened(store)
    just_now = replace(charge(ChargeState.PAID, "settlement"), settled_at=datetime.now(UTC))
    gateway.charges[ORDER] = just_now

    report = await run(store, gateway)

    assert report.findings == ()
    assert store.state.payments[ORDER].status == PaymentStatus.PENDING


async def test_a_refund_made_at_the_gateway_while_the_shop_says_paid_is_repaired() -> None:
    store, gateway = FakePaymentStore(), FakeGateway()
    await opened(store)
    gateway.charges[ORDER] = settled_long_ago(ChargeState.PAID, "settlement")
    await run(store, gateway)
    refund = GatewayReversal(ReversalKind.REFUND, "9", TOTAL)
    gateway.charges[ORDER] = settled_long_ago(ChargeState.PAID, "refund", refund)

    report = await run(store, gateway)

    assert report.counts()[DriftKind.REVERSAL_MISSED] == 1
    assert store.state.payments[ORDER].status == PaymentStatus.REFUNDED


async def test_a_payment_paid_in_the_shop_that_the_gateway_does_not_hold_is_flagged() -> None:
    store, gateway = FakePaymentStore(), FakeGateway()
    await opened(store)
    gateway.charges[ORDER] = settled_long_ago(ChargeState.PAID, "settlement")
    await run(store, gateway)
    del gateway.charges[ORDER]

    report = await run(store, gateway)

    [finding] = report.findings
    assert (finding.kind, finding.repaired) == (DriftKind.PAID_NOT_AT_GATEWAY, False)
    assert "reconciliation" in store.state.flags[ORDER]
    assert store.state.payments[ORDER].status == PaymentStatus.PAID, "a person decides"


async def test_a_refund_due_the_gateway_does_not_list_is_asked_for_again() -> None:
    store, gateway = FakePaymentStore(), FakeGateway()
    await opened(store)
    await payments.expire_payment(store, {Provider.MIDTRANS: gateway}, ORDER, log)
    gateway.charges[ORDER] = settled_long_ago(ChargeState.PAID, "settlement")
    await run(store, gateway)
    assert store.state.payments[ORDER].status == PaymentStatus.REFUND_DUE

    report = await run(store, gateway)

    assert report.counts()[DriftKind.REFUND_OUTSTANDING] == 1
    assert len(store.state.sent(RefundPayment)) == 2, "the late settlement's, then again"


async def test_a_refund_the_gateway_refused_is_reported_for_a_person_not_asked_again() -> None:
    # Asked again, a refusal (a bank transfer Midtrans cannot refund) would only dead-letter
    # the same command at every run.
    store, gateway = FakePaymentStore(), FakeGateway()
    gateways = {Provider.MIDTRANS: gateway}
    await opened(store)
    await payments.expire_payment(store, gateways, ORDER, log)
    gateway.charges[ORDER] = settled_long_ago(ChargeState.PAID, "settlement")
    await run(store, gateway)
    [command] = store.state.sent(RefundPayment)
    assert isinstance(command, RefundPayment)
    gateway.refusal = "cannot refund a bank_transfer payment through its API"
    with pytest.raises(GatewayRefused):
        await payments.refund_payment(store, gateways, command, log)

    report = await run(store, gateway)

    [finding] = report.findings
    assert (finding.kind, finding.repaired) == (DriftKind.REFUND_REFUSED, False)
    assert "bank_transfer" in finding.detail
    assert len(store.state.sent(RefundPayment)) == 1, "not asked for again"


async def test_a_gateway_that_cannot_be_asked_is_reported_and_the_rest_go_on() -> None:
    store, gateway = FakePaymentStore(), FakeGateway()
    await opened(store)
    gateway.unavailable = True

    report = await run(store, gateway)

    assert report.counts()[DriftKind.GATEWAY_UNREACHABLE] == 1
    assert report.checked == 1


async def test_every_kind_is_counted_even_at_zero() -> None:
    report = await run(FakePaymentStore(), FakeGateway())
    assert set(report.counts()) == {kind.value for kind in DriftKind}
    assert sum(report.counts().values()) == 0
