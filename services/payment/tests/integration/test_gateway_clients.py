"""payment-service's gateway clients against the development gateway over real HTTP: the
status of each state in both APIs, refunds made once per key, refusals and an unreachable
gateway told apart. The gateway serves each API from its documented shapes, never from
payment-service's code."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

from shop.devstack.ports import free_port
from shop.payment.adapters.gateway_midtrans import MidtransGateway
from shop.payment.adapters.gateway_shop import ShopGateway
from shop.payment.domain.errors import GatewayRefused, GatewayUnavailable
from shop.payment.domain.gateway import ChargeState, RefundRequest, ReversalKind
from shop.simulators import gateway
from shop.simulators.gateway import Format

from ..signing import GATEWAY_API_KEY, SERVER_KEY

TOTAL = 178000


async def paid(url: str, fmt: Format, outcome: str = "settlement", **how: Any) -> uuid.UUID:
    order_id = uuid.uuid4()
    payment = gateway.Payment(order_id, TOTAL, "IDR")
    await gateway.pay_at_gateway(url, payment, fmt=fmt, outcome=outcome, notify=False, **how)
    return order_id


def midtrans(url: str, key: str = SERVER_KEY) -> MidtransGateway:
    return MidtransGateway(url, key, timeout=5)


def shop(url: str, key: str = GATEWAY_API_KEY) -> ShopGateway:
    return ShopGateway(url, key, timeout=5)


@pytest.mark.parametrize(
    ("outcome", "state"),
    [
        ("settlement", ChargeState.PAID),
        ("capture", ChargeState.PAID),
        ("pending", ChargeState.PENDING),
        ("authorize", ChargeState.PENDING),
        ("deny", ChargeState.FAILED),
        ("expire", ChargeState.FAILED),
    ],
)
async def test_midtrans_status_reads_each_state(
    gateway_url: str, outcome: str, state: ChargeState
) -> None:
    order_id = await paid(gateway_url, Format.MIDTRANS, outcome)

    charge = await midtrans(gateway_url).status(order_id)

    assert charge is not None
    assert (charge.state, charge.amount, charge.currency, charge.status) == (
        state,
        TOTAL,
        "IDR",
        outcome,
    )


async def test_an_order_midtrans_never_saw_is_none(gateway_url: str) -> None:
    assert await midtrans(gateway_url).status(uuid.uuid4()) is None
    assert await shop(gateway_url).status(uuid.uuid4()) is None


async def test_a_wrong_key_is_a_refusal_not_a_missing_payment(gateway_url: str) -> None:
    order_id = await paid(gateway_url, Format.MIDTRANS)
    with pytest.raises(GatewayRefused, match="401"):
        await midtrans(gateway_url, "SB-Mid-server-wrong").status(order_id)
    with pytest.raises(GatewayRefused, match="401"):
        await shop(gateway_url, "wrong").status(order_id)


@pytest.mark.parametrize("fmt", [Format.MIDTRANS, Format.SHOP])
async def test_a_refund_is_made_once_per_key_and_listed_by_the_status(
    gateway_url: str, fmt: Format
) -> None:
    order_id = await paid(gateway_url, fmt)
    client = midtrans(gateway_url) if fmt == Format.MIDTRANS else shop(gateway_url)
    request = RefundRequest(order_id, f"refund-{order_id}", 78000, "the customer asked")

    first = await client.refund(request)
    again = await client.refund(request)

    assert first == again
    charge = await client.status(order_id)
    assert charge is not None
    [refund] = charge.reversals
    assert (refund.kind, refund.reference, refund.amount) == (
        ReversalKind.REFUND,
        first.reference,
        78000,
    )


@pytest.mark.parametrize("fmt", [Format.MIDTRANS, Format.SHOP])
async def test_a_refund_over_what_is_left_is_refused(gateway_url: str, fmt: Format) -> None:
    order_id = await paid(gateway_url, fmt)
    client = midtrans(gateway_url) if fmt == Format.MIDTRANS else shop(gateway_url)

    with pytest.raises(GatewayRefused, match="exceeds what is left"):
        await client.refund(RefundRequest(order_id, "too-much", TOTAL + 1, "no"))


@pytest.mark.parametrize("fmt", [Format.MIDTRANS, Format.SHOP])
async def test_chargebacks_and_a_cancelled_capture_are_read_as_reversals(
    gateway_url: str, fmt: Format
) -> None:
    client = midtrans(gateway_url) if fmt == Format.MIDTRANS else shop(gateway_url)
    order_id = await paid(gateway_url, fmt)
    await gateway.charge_back(gateway_url, order_id, 1000, notify=False)

    charge = await client.status(order_id)

    assert charge is not None
    assert charge.state == ChargeState.PAID
    assert [(r.kind, r.amount) for r in charge.reversals] == [(ReversalKind.CHARGEBACK, 1000)]

    captured = await paid(gateway_url, fmt, "capture" if fmt == Format.MIDTRANS else "settlement")
    await gateway.cancel_capture(gateway_url, captured, notify=False)
    voided = await client.status(captured)
    assert voided is not None
    assert voided.state == ChargeState.VOIDED


async def test_a_gateway_nobody_answers_for_is_unavailable_after_a_few_tries() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(GatewayUnavailable):
        await midtrans(nowhere).status(uuid.uuid4())
    with pytest.raises(GatewayUnavailable):
        await shop(nowhere).refund(RefundRequest(uuid.uuid4(), "k", 1, "r"))


async def test_an_unsettled_card_capture_is_given_back_whole_by_cancelling_it(
    gateway_url: str,
) -> None:
    # Midtrans' refund API refuses a capture not settled yet (412): it is cancelled instead.
    client = midtrans(gateway_url)
    order_id = await paid(gateway_url, Format.MIDTRANS, "capture")

    with pytest.raises(GatewayRefused, match="only whole"):
        await client.refund(RefundRequest(order_id, "part", 1000, "no"))
    given_back = await client.refund(RefundRequest(order_id, "whole", TOTAL, "cancelled"))

    assert given_back.amount == TOTAL
    charge = await client.status(order_id)
    assert charge is not None
    assert (charge.status, charge.state) == ("cancel", ChargeState.VOIDED)


async def test_a_bank_transfer_midtrans_cannot_refund_is_refused_with_what_to_do(
    gateway_url: str,
) -> None:
    order_id = await paid(gateway_url, Format.MIDTRANS, method="bank_transfer")

    with pytest.raises(GatewayRefused, match="bank_transfer payment through its API: give"):
        await midtrans(gateway_url).refund(RefundRequest(order_id, "k", TOTAL, "late"))


@pytest.mark.parametrize("fmt", [Format.MIDTRANS, Format.SHOP])
async def test_a_charge_still_waiting_is_closed_and_a_settled_one_cannot_be(
    gateway_url: str, fmt: Format
) -> None:
    client = midtrans(gateway_url) if fmt == Format.MIDTRANS else shop(gateway_url)
    waiting = await paid(gateway_url, fmt, "pending")
    settled = await paid(gateway_url, fmt)

    await client.close(waiting)
    with pytest.raises(GatewayRefused):
        await client.close(settled)

    closed = await client.status(waiting)
    assert closed is not None
    assert closed.state == ChargeState.FAILED
    still = await client.status(settled)
    assert still is not None
    assert still.state == ChargeState.PAID


async def test_a_card_authorised_and_never_captured_is_let_go_by_cancelling_it(
    gateway_url: str,
) -> None:
    # Midtrans' Expire API takes only a pending transaction.
    client = midtrans(gateway_url)
    order_id = await paid(gateway_url, Format.MIDTRANS, "authorize")

    await client.close(order_id)

    charge = await client.status(order_id)
    assert charge is not None
    assert (charge.status, charge.state) == ("cancel", ChargeState.FAILED)


async def test_a_capture_held_for_a_fraud_review_is_pending_under_review_until_approved(
    gateway_url: str,
) -> None:
    client = midtrans(gateway_url)
    order_id = await paid(gateway_url, Format.MIDTRANS, "capture", in_review=True)

    held = await client.status(order_id)
    assert held is not None
    assert (held.state, held.in_review) == (ChargeState.PENDING, True)

    async with httpx.AsyncClient(base_url=gateway_url, auth=(SERVER_KEY, "")) as merchant:
        approved = (await merchant.post(f"/v2/{order_id}/approve")).json()
    assert approved["status_code"] == "200"
    charge = await client.status(order_id)
    assert charge is not None
    assert (charge.state, charge.in_review) == (ChargeState.PAID, False)
