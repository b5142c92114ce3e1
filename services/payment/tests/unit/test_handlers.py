"""How payment-service's handlers tell the pipeline what a gateway said: the subscribers
that ask a gateway name it as their provider, so that its circuit breaker and rate limit
apply, and a gateway that is away, says when to come back, or says the shop asks too often
is told as such."""

from __future__ import annotations

from typing import Any

import pytest

from shop.messaging import ProviderUnavailable, TransientError
from shop.messaging.breaker import provider_answered, watching_contact
from shop.payment.adapters.metrics import PrometheusPaymentMetrics
from shop.payment.domain.errors import ChargeMovedOn, GatewayUnavailable
from shop.payment.handlers import GATEWAY_PROVIDER, build_router, told_to_the_pipeline

from .fakes import FakeGateway, FakePaymentStore
from .test_payments import WINDOW


def test_each_subscriber_that_asks_a_gateway_names_it_as_its_provider() -> None:
    gateway = FakeGateway()
    gateways: Any = {gateway.provider: gateway}
    router = build_router(FakePaymentStore(), gateways, WINDOW, PrometheusPaymentMetrics())
    providers = {subscriber.name: subscriber.provider for subscriber in router}
    assert providers == {
        "open_payment": None,
        "cancel_payment": None,
        "process_payment": GATEWAY_PROVIDER,
        "expire_payment": GATEWAY_PROVIDER,
        "refund_payment": GATEWAY_PROVIDER,
    }


async def failing(error: Exception, *, answered: bool = False) -> str:
    if answered:
        provider_answered()
    raise error


async def test_a_gateway_away_or_asking_for_time_is_its_providers_failure() -> None:
    with watching_contact(), pytest.raises(ProviderUnavailable) as away:
        await told_to_the_pipeline(failing(GatewayUnavailable("no answer")))
    assert (away.value.provider, away.value.retry_after, away.value.too_fast) == (
        GATEWAY_PROVIDER,
        None,
        False,
    )
    busy = GatewayUnavailable("answered 429", retry_after=7, too_fast=True)
    with watching_contact(), pytest.raises(ProviderUnavailable) as told:
        await told_to_the_pipeline(failing(busy, answered=True))
    assert (told.value.retry_after, told.value.too_fast) == (7, True)


async def test_a_gateway_that_answered_something_not_settled_yet_is_an_ordinary_retry() -> None:
    # It is there: its breaker must not count this against it.
    moved = ChargeMovedOn("the charge settled while it was refunded")
    with watching_contact(), pytest.raises(TransientError) as raised:
        await told_to_the_pipeline(failing(moved, answered=True))
    assert not isinstance(raised.value, ProviderUnavailable)


async def test_a_gateway_that_answered_a_first_call_and_not_the_next_is_away() -> None:
    # The status read answered; the refund that followed got 503s: the refund API is
    # away, and its breaker must count it (not an ordinary retry that closes it).
    down = GatewayUnavailable("refund: answered 503", answered=False)
    with watching_contact(), pytest.raises(ProviderUnavailable):
        await told_to_the_pipeline(failing(down, answered=True))
