"""The admin's password, kept as a salted scrypt hash and checked in constant time.

A hash reads ``scrypt$<n>$<r>$<p>$<salt>$<digest>`` (salt and digest in URL-safe base64),
so that its cost travels with it and a stronger one can be chosen later without breaking
the hashes already configured.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Final

from shop.console.domain.errors import MalformedPasswordHash

SCHEME: Final = "scrypt"
COST: Final = 2**14
"""scrypt's n: about 16 MiB and a few tens of milliseconds a check on a server core."""
BLOCK_SIZE: Final = 8
PARALLELISM: Final = 1
SALT_BYTES: Final = 16
DIGEST_BYTES: Final = 32


@dataclass(frozen=True, slots=True)
class PasswordHash:
    n: int
    r: int
    p: int
    salt: bytes
    digest: bytes

    def __post_init__(self) -> None:
        if self.n < 2 or self.n & (self.n - 1):
            raise MalformedPasswordHash("scrypt's n must be a power of two above 1")
        if self.r < 1 or self.p < 1:
            raise MalformedPasswordHash("scrypt's r and p must be positive")
        if len(self.salt) < 8 or len(self.digest) < 16:
            raise MalformedPasswordHash("the salt or the digest is too short")

    @classmethod
    def parse(cls, text: str) -> PasswordHash:
        parts = text.strip().split("$")
        if len(parts) != 6 or parts[0] != SCHEME:
            raise MalformedPasswordHash(
                "expected scrypt$<n>$<r>$<p>$<salt>$<digest>, as "
                "`python -m shop.console hash-password` prints it"
            )
        try:
            return cls(
                n=int(parts[1]),
                r=int(parts[2]),
                p=int(parts[3]),
                salt=_decode(parts[4]),
                digest=_decode(parts[5]),
            )
        except ValueError as error:
            raise MalformedPasswordHash(f"unreadable hash: {error}") from error

    def __str__(self) -> str:
        return "$".join(
            (
                SCHEME,
                str(self.n),
                str(self.r),
                str(self.p),
                _encode(self.salt),
                _encode(self.digest),
            )
        )

    def matches(self, password: str) -> bool:
        """Whether ``password`` is the one hashed; the comparison takes the same time
        wherever the digests differ."""
        candidate = _scrypt(
            password, self.salt, n=self.n, r=self.r, p=self.p, length=len(self.digest)
        )
        return hmac.compare_digest(candidate, self.digest)


def hash_password(password: str, *, salt: bytes | None = None, n: int = COST) -> PasswordHash:
    """A fresh salted hash of ``password``."""
    if not password:
        raise ValueError("the password is empty")
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    digest = _scrypt(password, salt, n=n, r=BLOCK_SIZE, p=PARALLELISM, length=DIGEST_BYTES)
    return PasswordHash(n=n, r=BLOCK_SIZE, p=PARALLELISM, salt=salt, digest=digest)


def _scrypt(password: str, salt: bytes, *, n: int, r: int, p: int, length: int) -> bytes:
    # OpenSSL refuses scrypt above its default 32 MiB budget; allow what the cost needs.
    budget = 128 * n * r * (p + 2)
    return hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=budget, dklen=length)


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
