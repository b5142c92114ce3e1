"""How results look: as JSON (``--json``) and as the words and numbers of a table."""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any


def jsonable(value: Any) -> Any:  # noqa: PLR0911 - one return per kind of value
    """``value`` (dataclasses, lists, datetimes, UUIDs, bytes …) as plain JSON data. Bytes
    become text when they are UTF-8, else ``{"base64": …}``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return jsonable(value.value)
    if isinstance(value, uuid.UUID | Path):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(value).decode("ascii")}
    return value


def to_json(value: Any) -> str:
    return json.dumps(jsonable(value), indent=2, ensure_ascii=False)


def seconds(value: float | None) -> str:
    """``0.042`` → ``42 ms``, ``3.5`` → ``3.50 s``, ``125`` → ``2 min 5 s``."""
    if value is None:
        return "-"
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.2f} s"
    minutes, rest = divmod(round(value), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def moment(value: datetime | None) -> str:
    """A time to the second: ``2026-12-03 09:30:00Z`` in UTC (the shop's records), else
    with its offset."""
    if value is None:
        return "-"
    text = value.isoformat(sep=" ", timespec="seconds")
    return text.removesuffix("+00:00") + "Z" if text.endswith("+00:00") else text


def amount(value: int, currency: str) -> str:
    """``178000 IDR`` → ``IDR 178,000`` (IDR has no minor unit)."""
    return f"{currency} {value:,}"


def shorten(text: str, width: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else f"{line[: width - 1]}…"
