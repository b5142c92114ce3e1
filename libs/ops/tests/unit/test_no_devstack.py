"""shop.ops runs in the shop's image (the console, shopctl), which carries no shop.devstack:
no module of it may import shop.devstack, not even lazily, or a page of the console fails
there on ModuleNotFoundError."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import shop.ops

pytestmark = pytest.mark.unit

SOURCES = Path(shop.ops.__file__).parent


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_no_module_of_shop_ops_imports_shop_devstack_even_lazily() -> None:
    offenders = {
        path.name: sorted(
            name for name in imported_modules(path) if name.startswith("shop.devstack")
        )
        for path in sorted(SOURCES.glob("*.py"))
    }
    assert {name: found for name, found in offenders.items() if found} == {}
