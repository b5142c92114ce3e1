"""What every command of ``shopctl`` shares: where it prints, how it fails (one line on
stderr, exit code 1), the settings it reads and how it runs the library's coroutines."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from shop.ops.errors import OpsError
from shop.ops.render import to_json
from shop.ops.settings import OpsSettings

T = TypeVar("T")

# markup=False: what the shop sends back (error texts with [brackets]) is printed as it is.
out = Console(highlight=False, markup=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, markup=False)

Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]


class Options:
    """What the options before the command chose (``shopctl --traceback …``)."""

    traceback = False


options = Options()


def fail(reason: str) -> NoReturn:
    err.print(Text(" ".join(reason.split())), style="red")
    raise typer.Exit(code=1)


@contextmanager
def one_line_failures() -> Iterator[None]:
    """Whatever goes wrong inside ends the command with one line and exit code 1."""
    try:
        yield
    except OpsError as error:
        fail(str(error))
    except ValidationError as error:
        first = error.errors()[0]
        where = "__".join(str(part) for part in first["loc"])
        fail(f"invalid setting SHOP_OPS_{where.upper()}: {first['msg']}")
    except KeyboardInterrupt:
        fail("interrupted")
    except Exception as error:
        if options.traceback:
            raise
        fail(f"unexpected {type(error).__name__}: {error} (--traceback shows where)")


def settings() -> OpsSettings:
    with one_line_failures():
        return OpsSettings()


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    with one_line_failures():
        return asyncio.run(coroutine)


def show_json(value: Any) -> None:
    sys.stdout.write(to_json(value) + "\n")
