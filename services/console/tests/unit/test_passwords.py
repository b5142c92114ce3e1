"""The admin's password hash: argon2id, salted, self-describing; the scrypt hashes made
before it still verify and say they are outdated."""

from __future__ import annotations

import pytest
from argon2 import extract_parameters
from typer.testing import CliRunner

from shop.console.cli import app
from shop.console.domain.errors import MalformedPasswordHash
from shop.console.domain.passwords import (
    OWASP,
    Argon2idHash,
    ScryptHash,
    hash_password,
    parse_password_hash,
)
from shop.console.settings import (
    DEVELOPMENT_ADMIN_PASSWORD,
    DEVELOPMENT_ADMIN_PASSWORD_HASH,
    EARLIER_DEVELOPMENT_ADMIN_PASSWORD_HASH,
)

from .fakes import CHEAP


def test_a_hash_matches_its_password_only() -> None:
    hashed = hash_password("rose water", cost=CHEAP)

    assert hashed.matches("rose water")
    assert not hashed.matches("rose water ")
    assert not hashed.matches("")


def test_the_same_password_hashes_differently_each_time() -> None:
    assert str(hash_password("toner", cost=CHEAP)) != str(hash_password("toner", cost=CHEAP))


def test_a_hash_reads_back_from_its_text_with_its_cost() -> None:
    hashed = hash_password("serum", cost=CHEAP)

    again = parse_password_hash(str(hashed))

    assert again == hashed
    assert str(hashed).startswith("$argon2id$v=19$m=8,t=1,p=1$")
    assert again.matches("serum")
    assert not again.outdated


def test_a_new_hash_is_argon2id_with_owasps_parameters() -> None:
    parameters = extract_parameters(str(hash_password("sunscreen")))

    assert (parameters.time_cost, parameters.memory_cost, parameters.parallelism) == (
        OWASP.time_cost,
        19 * 1024,
        1,
    )


def test_an_earlier_scrypt_hash_still_verifies_and_says_it_is_outdated() -> None:
    earlier = parse_password_hash(EARLIER_DEVELOPMENT_ADMIN_PASSWORD_HASH)

    assert isinstance(earlier, ScryptHash)
    assert earlier.n == 2**14
    assert earlier.matches(DEVELOPMENT_ADMIN_PASSWORD)
    assert not earlier.matches("another password")
    assert earlier.outdated
    assert str(earlier) == EARLIER_DEVELOPMENT_ADMIN_PASSWORD_HASH


def test_the_development_default_is_argon2id_of_the_documented_password() -> None:
    default = parse_password_hash(DEVELOPMENT_ADMIN_PASSWORD_HASH)

    assert isinstance(default, Argon2idHash)
    assert default.matches(DEVELOPMENT_ADMIN_PASSWORD)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "serum",
        "bcrypt$1$2$3$4$5",
        "scrypt$15$8$1$c2FsdHNhbHQ$ZGlnZXN0ZGlnZXN0ZGlnZXN0",
        "scrypt$16$8$1$!!$ZGlnZXN0ZGlnZXN0ZGlnZXN0",
        "scrypt$16$8$1$c2FsdA$ZGlnZXN0",
        "$argon2i$v=19$m=8,t=1,p=1$c2FsdHNhbHRzYWx0$ZGlnZXN0ZGlnZXN0ZGlnZXN0ZGlnZXN0",
        "$argon2id$v=19$m=8,t=1,p=1$",
        "$argon2id$v=19$m=8,t=1,p=1$c2FsdA$ZGlnZXN0ZGlnZXN0ZGlnZXN0ZGlnZXN0",
        "$argon2id$v=19$m=8,t=1,p=1$!!!!c2FsdHNhbHRzYWx0$ZGlnZXN0ZGlnZXN0ZGlnZXN0ZGlnZXN0",
    ],
)
def test_a_hash_that_is_not_one_is_refused_naming_the_format(text: str) -> None:
    with pytest.raises(MalformedPasswordHash):
        parse_password_hash(text)


@pytest.mark.parametrize(
    "text",
    [
        "$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHRzYWx0$ZGlnZXN0ZGlnZXN0ZGlnZXN0ZGlnZXN0",
        "scrypt$1048576$8$1$c2FsdHNhbHQ$ZGlnZXN0ZGlnZXN0ZGlnZXN0",
    ],
)
def test_a_hash_asking_more_memory_than_the_console_spends_on_a_check_is_refused(
    text: str,
) -> None:
    # 4 GiB and 1 GiB: refused before anything is hashed with them.
    with pytest.raises(MalformedPasswordHash, match="more than 256 MiB"):
        parse_password_hash(text)


def test_the_command_line_prints_an_argon2id_hash_of_the_password_it_reads() -> None:
    printed = CliRunner().invoke(app, ["hash-password", "--stdin"], input="moisturiser\n")

    assert printed.exit_code == 0, printed.output
    hashed = parse_password_hash(printed.output.strip())
    assert isinstance(hashed, Argon2idHash)
    assert not hashed.outdated
    assert hashed.matches("moisturiser")


def test_the_command_line_refuses_an_empty_password() -> None:
    printed = CliRunner().invoke(app, ["hash-password", "--stdin"], input="\n")

    assert printed.exit_code != 0
