"""Stock: an order takes every line it asks for, or nothing, at the prices it was written with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shop.order.domain.errors import InsufficientStock, ProductChanged, UnknownProduct


@dataclass(frozen=True, slots=True)
class StockedProduct:
    """A product on sale as the checkout sees it: as read before the order is written, or
    as locked when its stock is taken."""

    sku: str
    name: str
    price: int
    stock: int


def check_stock(wanted: Mapping[str, int], stocked: Mapping[str, StockedProduct]) -> None:
    """Refuse the whole order when a line names no product on sale (:class:`UnknownProduct`,
    naming all such skus) or wants more than is left (:class:`InsufficientStock`)."""
    skus = sorted(wanted)
    unknown = [sku for sku in skus if sku not in stocked]
    if unknown:
        raise UnknownProduct(unknown)
    for sku in skus:
        if stocked[sku].stock < wanted[sku]:
            raise InsufficientStock(sku, wanted[sku], stocked[sku].stock)


def check_unchanged(
    read: Mapping[str, StockedProduct], locked: Mapping[str, StockedProduct]
) -> None:
    """:class:`ProductChanged` when a product's name or price as ``locked`` is not the one
    ``read`` (and written on the order)."""
    changed = [
        sku
        for sku in sorted(read)
        if (read[sku].name, read[sku].price) != (locked[sku].name, locked[sku].price)
    ]
    if changed:
        raise ProductChanged(changed)
