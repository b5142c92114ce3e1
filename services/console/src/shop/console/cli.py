"""``python -m shop.console``: make the admin's password hash."""

from __future__ import annotations

import sys

import typer

from shop.console.domain.passwords import hash_password

app = typer.Typer(help="The ops console's administration.", no_args_is_help=True)


@app.callback()
def main() -> None:
    """The ops console's administration (serve it with python -m shop.console.api)."""


@app.command("hash-password")
def hash_password_command(
    from_stdin: bool = typer.Option(
        False, "--stdin", help="Read the password from the first line of standard input."
    ),
) -> None:
    """Print a salted argon2id hash of a password (OWASP's parameters), for
    SHOP_CONSOLE_ADMIN_PASSWORD_HASH."""
    if from_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    if not password:
        raise typer.BadParameter("the password is empty")
    typer.echo(str(hash_password(password)))
