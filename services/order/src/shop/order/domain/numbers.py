"""Order numbers a person can read over the phone: ``SK-7KQ4-M2XD``.

Eight symbols from an alphabet without look-alikes (no 0/O, 1/I/L, U): 30**8 ≈ 6.6e11
numbers, so a collision is rare; the database's UNIQUE constraint catches the rare one and
the checkout draws again.
"""

from __future__ import annotations

import secrets

ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"
PREFIX = "SK"


def new_order_number() -> str:
    symbols = "".join(secrets.choice(ALPHABET) for _ in range(8))
    return f"{PREFIX}-{symbols[:4]}-{symbols[4:]}"
