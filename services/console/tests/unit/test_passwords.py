"""The admin's password hash: salted, self-describing, checked in constant time."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from shop.console.cli import app
from shop.console.domain.errors import MalformedPasswordHash
from shop.console.domain.passwords import PasswordHash, hash_password


def test_a_hash_matches_its_password_only() -> None:
    hashed = hash_password("rose water", n=2**4)

    assert hashed.matches("rose water")
    assert not hashed.matches("rose water ")
    assert not hashed.matches("")


def test_the_same_password_hashes_differently_each_time() -> None:
    assert str(hash_password("toner", n=2**4)) != str(hash_password("toner", n=2**4))


def test_a_hash_reads_back_from_its_text_with_its_cost() -> None:
    hashed = hash_password("serum", n=2**5)

    again = PasswordHash.parse(str(hashed))

    assert again == hashed
    assert str(hashed).startswith("scrypt$32$8$1$")
    assert again.matches("serum")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "serum",
        "bcrypt$1$2$3$4$5",
        "scrypt$15$8$1$c2FsdHNhbHQ$ZGlnZXN0ZGlnZXN0ZGlnZXN0",
        "scrypt$16$8$1$!!$ZGlnZXN0ZGlnZXN0ZGlnZXN0",
        "scrypt$16$8$1$c2FsdA$ZGlnZXN0",
    ],
)
def test_a_hash_that_is_not_one_is_refused_naming_the_format(text: str) -> None:
    with pytest.raises(MalformedPasswordHash):
        PasswordHash.parse(text)


def test_the_command_line_prints_a_hash_of_the_password_it_reads() -> None:
    printed = CliRunner().invoke(app, ["hash-password", "--stdin"], input="moisturiser\n")

    assert printed.exit_code == 0, printed.output
    assert PasswordHash.parse(printed.output.strip()).matches("moisturiser")


def test_the_command_line_refuses_an_empty_password() -> None:
    printed = CliRunner().invoke(app, ["hash-password", "--stdin"], input="\n")

    assert printed.exit_code != 0
