"""The admin's password, kept as a salted argon2id hash (argon2-cffi, OWASP's parameters) and
checked in constant time.

A hash is the PHC string argon2 itself writes, ``$argon2id$v=19$m=…,t=…,p=…$<salt>$<digest>``,
so that its cost travels with it. The scrypt hashes the console made before
(``scrypt$<n>$<r>$<p>$<salt>$<digest>``, n = 2^14, below what OWASP asks) still verify, and
say that they are :attr:`~ScryptHash.outdated`: the login replaces one with an argon2id hash of
the password it just checked (:mod:`shop.console.service_layer.logins`).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Final

from argon2 import PasswordHasher, Type, extract_parameters
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from shop.console.domain.errors import MalformedPasswordHash

ARGON2ID_PREFIX: Final = "$argon2id$"
SCRYPT_PREFIX: Final = "scrypt$"
FORMAT: Final = (
    "expected an argon2id hash ($argon2id$v=19$m=…,t=…,p=…$salt$digest), as "
    "`python -m shop.console hash-password` prints it"
)
SALT_BYTES: Final = 16
DIGEST_BYTES: Final = 32
MAX_MEMORY_BYTES: Final = 256 * 1024 * 1024
"""The most memory a configured hash may ask of one check: the console's pod has 512 MiB,
and runs a few checks at once."""


@dataclass(frozen=True, slots=True)
class Argon2Cost:
    """What one hash costs: passes over memory, KiB of memory, lanes."""

    time_cost: int
    memory_kib: int
    parallelism: int

    def __post_init__(self) -> None:
        if self.time_cost < 1 or self.parallelism < 1:
            raise ValueError("argon2's time cost and parallelism must be positive")
        if self.memory_kib < 8 * self.parallelism:
            raise ValueError("argon2 needs at least 8 KiB of memory per lane")

    def hasher(self) -> PasswordHasher:
        return PasswordHasher(
            time_cost=self.time_cost,
            memory_cost=self.memory_kib,
            parallelism=self.parallelism,
            hash_len=DIGEST_BYTES,
            salt_len=SALT_BYTES,
            type=Type.ID,
        )


OWASP: Final = Argon2Cost(time_cost=2, memory_kib=19 * 1024, parallelism=1)
"""OWASP's first argon2id configuration (Password Storage Cheat Sheet): 19 MiB and two passes,
a few tens of milliseconds a check on a server core."""
_VERIFIER: Final = OWASP.hasher()
"""Verifies with the parameters written in each hash, whatever its own are."""


@dataclass(frozen=True, slots=True)
class Argon2idHash:
    encoded: str

    @classmethod
    def parse(cls, text: str) -> Argon2idHash:
        text = text.strip()
        try:
            parameters = extract_parameters(text)
        except InvalidHashError as error:
            raise MalformedPasswordHash(f"unreadable argon2id hash: {FORMAT}") from error
        if parameters.type is not Type.ID:
            raise MalformedPasswordHash(FORMAT)
        if parameters.salt_len < 8 or parameters.hash_len < 16:
            raise MalformedPasswordHash("the salt or the digest is too short")
        if parameters.memory_cost * 1024 > MAX_MEMORY_BYTES:
            raise MalformedPasswordHash("the hash asks for more than 256 MiB a check")
        hashed = cls(text)
        # The parameters above are read without decoding the salt and digest; argon2 decodes
        # them only when it verifies. Verify once now, so that a hash it cannot decode is
        # refused at start-up, not answered with an error at the first login.
        try:
            hashed.matches("")
        except VerificationError as error:
            raise MalformedPasswordHash(f"unreadable argon2id hash: {error}") from error
        return hashed

    def __str__(self) -> str:
        return self.encoded

    @property
    def outdated(self) -> bool:
        """An argon2id hash keeps its own cost: a stronger one is the operator's choice,
        made with ``hash-password``."""
        return False

    def matches(self, password: str) -> bool:
        """Whether ``password`` is the one hashed (argon2 compares in constant time)."""
        try:
            return _VERIFIER.verify(self.encoded, password)
        except VerifyMismatchError:
            return False


@dataclass(frozen=True, slots=True)
class ScryptHash:
    """A hash in the console's earlier format, checked but no longer made."""

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
        if self._memory_bytes > MAX_MEMORY_BYTES:
            raise MalformedPasswordHash("the hash asks for more than 256 MiB a check")

    @property
    def _memory_bytes(self) -> int:
        # What OpenSSL needs for these parameters (its default budget, 32 MiB, is too small
        # for some).
        return 128 * self.n * self.r * (self.p + 2)

    @classmethod
    def parse(cls, text: str) -> ScryptHash:
        parts = text.strip().split("$")
        if len(parts) != 6 or parts[0] != SCRYPT_PREFIX.rstrip("$"):
            raise MalformedPasswordHash(FORMAT)
        try:
            return cls(
                n=int(parts[1]),
                r=int(parts[2]),
                p=int(parts[3]),
                salt=_decode(parts[4]),
                digest=_decode(parts[5]),
            )
        except ValueError as error:
            raise MalformedPasswordHash(f"unreadable scrypt hash: {error}") from error

    def __str__(self) -> str:
        fields = ("scrypt", str(self.n), str(self.r), str(self.p))
        return "$".join((*fields, _encode(self.salt), _encode(self.digest)))

    @property
    def outdated(self) -> bool:
        """Always: the console makes argon2id hashes now (and the scrypt ones it made, at
        n = 2^14, are below OWASP's 2^17)."""
        return True

    def matches(self, password: str) -> bool:
        """Whether ``password`` is the one hashed; the comparison takes the same time
        wherever the digests differ."""
        candidate = hashlib.scrypt(
            password.encode(),
            salt=self.salt,
            n=self.n,
            r=self.r,
            p=self.p,
            maxmem=self._memory_bytes,
            dklen=len(self.digest),
        )
        return hmac.compare_digest(candidate, self.digest)


PasswordHash = Argon2idHash | ScryptHash


def parse_password_hash(text: str) -> PasswordHash:
    """The hash ``text`` holds, in either format; :class:`MalformedPasswordHash` naming the
    expected format otherwise."""
    stripped = text.strip()
    if stripped.startswith(ARGON2ID_PREFIX):
        return Argon2idHash.parse(stripped)
    if stripped.startswith(SCRYPT_PREFIX):
        return ScryptHash.parse(stripped)
    raise MalformedPasswordHash(FORMAT)


def hash_password(
    password: str, *, cost: Argon2Cost = OWASP, salt: bytes | None = None
) -> Argon2idHash:
    """A fresh salted argon2id hash of ``password`` (``salt`` given only to make a hash that
    never changes, such as the development default)."""
    if not password:
        raise ValueError("the password is empty")
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    return Argon2idHash(cost.hasher().hash(password, salt=salt))


def _encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
