"""``python bench/webhook/unverified_service.py``: payment-service's API (``python -m
shop.payment.api``) with the shop format's signature check replaced by one that accepts
everything: the baseline of ``bench_webhook.py``, the same endpoint minus verification.
It exists only here; the service itself has no way to turn verification off."""

from __future__ import annotations

from collections.abc import Sequence

from shop.payment.api import webhooks
from shop.payment.api.__main__ import main


def accept_anything(
    header: str | None, body: bytes, secrets: Sequence[str], *, now: float, tolerance: float
) -> None:
    del header, body, secrets, now, tolerance


if __name__ == "__main__":
    webhooks.shop_format.verify = accept_anything  # type: ignore[assignment]
    main()
