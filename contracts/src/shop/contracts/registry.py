"""Every contract the shop knows, looked up by wire type and version."""

from __future__ import annotations

from collections.abc import Iterator

from shop.contracts.base import Contract
from shop.contracts.orders import (
    CancelUnpaidOrder,
    OrderCancelled,
    OrderCreated,
    OrderPaid,
    OrderPaymentReversed,
)
from shop.contracts.payments import (
    ExpirePayment,
    PaymentExpired,
    PaymentFailed,
    PaymentReceived,
    PaymentReversed,
    ProcessPayment,
    RefundPayment,
)

ALL_CONTRACTS: tuple[type[Contract], ...] = (
    OrderCreated,
    OrderPaid,
    OrderCancelled,
    OrderPaymentReversed,
    CancelUnpaidOrder,
    PaymentReceived,
    PaymentFailed,
    PaymentExpired,
    PaymentReversed,
    ProcessPayment,
    ExpirePayment,
    RefundPayment,
)

_BY_TYPE_AND_VERSION: dict[tuple[str, int], type[Contract]] = {
    (contract.message_type, contract.message_version): contract for contract in ALL_CONTRACTS
}
if len(_BY_TYPE_AND_VERSION) != len(ALL_CONTRACTS):
    raise RuntimeError("two contracts share a message type and version")


def lookup(message_type: str, version: int) -> type[Contract] | None:
    """The contract for ``message_type`` at ``version``, or None when nobody defined it."""
    return _BY_TYPE_AND_VERSION.get((message_type, version))


def iter_contracts() -> Iterator[type[Contract]]:
    """All contracts, in a stable order."""
    return iter(ALL_CONTRACTS)
