"""Who places and owns orders: a customer as the identity provider's token names them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Customer:
    id: str
    email: str
