"""Stock: an order takes every line it asks for, or nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from shop.order.domain.errors import InsufficientStock, UnknownProduct


@dataclass(frozen=True, slots=True)
class StockedProduct:
    """A product on sale as the checkout sees it, locked for the checkout's transaction."""

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
