"""The shop's own webhook format, signed like Stripe's: header
``Payment-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">``. Several secrets
may be active at once (rotation: sign with the new one, accept both for a while), each
compared in constant time; a time outside the tolerance is a replay and is refused."""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Sequence

from shop.payment.domain.errors import InvalidSignature
from shop.payment.domain.notifications import Meaning

SIGNATURE_HEADER = "Payment-Signature"
_UNIX_SECONDS = re.compile(r"[0-9]{1,12}")
SCHEME = "v1"

MEANINGS = {
    "payment.paid": Meaning.PAID,
    "payment.failed": Meaning.FAILED,
    "payment.refunded": Meaning.REFUNDED,
    "payment.charged_back": Meaning.CHARGED_BACK,
}
"""What each notification type of the shop's format claims (the worker confirms it with the
gateway's API before anything moves)."""


def verify(
    header: str | None, body: bytes, secrets: Sequence[str], *, now: float, tolerance: float
) -> None:
    """Return if ``header`` signs ``body`` with one of ``secrets`` at a time within
    ``tolerance`` seconds of ``now``; else :class:`InvalidSignature` saying why."""
    if not header:
        raise InvalidSignature(f"the {SIGNATURE_HEADER} header is missing")
    timestamp, signatures = _parse(header)
    if abs(now - timestamp) > tolerance:
        raise InvalidSignature(
            f"the signature's time is {int(now - timestamp)} s from now, more than the "
            f"{int(tolerance)} s allowed: a replay, or a clock far off"
        )
    expected = [_digest(body, secret, timestamp).encode() for secret in secrets]
    # Every pair is compared, in constant time, so the time taken says nothing about which
    # secret or how much of a signature matched. As bytes: a header may carry any byte.
    matched = False
    for signature in signatures:
        for digest in expected:
            matched |= hmac.compare_digest(signature, digest)
    if not matched:
        raise InvalidSignature("the signature does not match the body")


def _parse(header: str) -> tuple[int, list[bytes]]:
    timestamps: list[str] = []
    signatures: list[bytes] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t":
            timestamps.append(value)
        elif name == SCHEME:
            signatures.append(value.encode("utf-8", "replace"))
    # ASCII digits only: str.isdigit() also takes "²", which int() refuses.
    if len(timestamps) != 1 or not _UNIX_SECONDS.fullmatch(timestamps[0]):
        raise InvalidSignature(f"the {SIGNATURE_HEADER} header needs one t=<unix seconds>")
    if not signatures:
        raise InvalidSignature(f"the {SIGNATURE_HEADER} header has no {SCHEME}= signature")
    return int(timestamps[0]), signatures


def _digest(body: bytes, secret: str, timestamp: int) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
