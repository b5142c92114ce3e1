"""Logging in as the admin: the client address's throttle first, then a password check on
one of a few slots, then the outcome, as a value.

Nothing is hashed for a client that must wait (429) or when every slot is busy (503): a
refused guess costs the guesser, not the console. A try is counted as a failure before its
check runs, so that guesses sent all at once are counted as they arrive.

A hash in the earlier scrypt format that matches is replaced, for the rest of the process's
life, by an argon2id hash of the password just checked, and the outcome says so. It cannot be
written back: the hash is configuration (``SHOP_CONSOLE_ADMIN_PASSWORD_HASH``, from a Secret
the console may not write, read once at start-up) and the console keeps no store of its own,
so the operator is asked to replace it, and is asked again after each restart until done.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from functools import partial
from typing import Final

import structlog

from shop.console.domain.passwords import OWASP, Argon2Cost, PasswordHash, hash_password
from shop.console.domain.throttle import LoginThrottle
from shop.console.service_layer.password_checks import PasswordChecks

MAX_PASSWORD_LENGTH: Final = 1024
"""Longer is refused before hashing, so that a huge password costs the server nothing."""
BUSY_RETRY_AFTER: Final = 1
"""Seconds a client is told to wait when every check slot is busy: a check lasts tens of
milliseconds, so one comes free well within it."""

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class LoggedIn:
    replaced_outdated_hash: bool
    """The configured hash was in the earlier format: the operator should replace it."""


@dataclass(frozen=True, slots=True)
class WrongCredentials:
    pass


@dataclass(frozen=True, slots=True)
class Throttled:
    """Too many failures from this address inside the window."""

    retry_after: int


@dataclass(frozen=True, slots=True)
class Busy:
    """Every check slot is taken by other tries."""

    retry_after: int


LoginOutcome = LoggedIn | WrongCredentials | Throttled | Busy


@dataclass(frozen=True, slots=True)
class _Checked:
    matches: bool
    replacement: PasswordHash | None = None


class Logins:
    def __init__(
        self,
        *,
        user: str,
        password_hash: PasswordHash,
        throttle: LoginThrottle,
        checks: PasswordChecks,
        cost: Argon2Cost = OWASP,
    ) -> None:
        self.user = user
        self.password_hash = password_hash
        """What a password is checked against: the configured hash, or its replacement."""
        self.throttle = throttle
        self.checks = checks
        self.cost = cost

    async def attempt(self, address: str, user: str, password: str) -> LoginOutcome:
        wait = self.throttle.wait_before_next_try(address)
        if wait:
            return Throttled(retry_after=wait)
        if len(password) > MAX_PASSWORD_LENGTH:
            self.throttle.failed(address)
            return WrongCredentials()
        checked_against = self.password_hash
        pending = self.checks.try_start(partial(self._check, checked_against, user, password))
        if pending is None:
            # Not a failure: no password was checked.
            return Busy(retry_after=BUSY_RETRY_AFTER)
        self.throttle.failed(address)
        checked = await pending
        if not checked.matches:
            return WrongCredentials()
        self.throttle.succeeded(address)
        replaced = checked.replacement is not None and self.password_hash is checked_against
        if replaced:
            assert checked.replacement is not None
            self.password_hash = checked.replacement
            log.warning(
                "the admin's password hash is in the earlier scrypt format: replace "
                "SHOP_CONSOLE_ADMIN_PASSWORD_HASH with what `python -m shop.console "
                "hash-password` prints (argon2id); checked against an argon2id hash until "
                "the console restarts"
            )
        return LoggedIn(replaced_outdated_hash=replaced)

    def _check(self, hashed: PasswordHash, user: str, password: str) -> _Checked:
        """On a check thread: both the user and the password are always checked, so the
        answer takes as long for a wrong user as for a wrong password."""
        user_matches = hmac.compare_digest(user.encode(), self.user.encode())
        password_matches = hashed.matches(password)
        if not (user_matches and password_matches):
            return _Checked(matches=False)
        if not hashed.outdated:
            return _Checked(matches=True)
        return _Checked(matches=True, replacement=hash_password(password, cost=self.cost))
