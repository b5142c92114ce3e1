"""A message body as a person reads it: JSON pretty-printed, other text as it is, bytes that
are not text shown escaped rather than dropped."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ReadableBody:
    text: str
    kind: str
    """``json``, ``text`` or ``binary`` (not UTF-8: undecodable bytes shown as escapes)."""


def readable_body(body: bytes) -> ReadableBody:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return ReadableBody(body.decode("utf-8", errors="backslashreplace"), "binary")
    try:
        parsed = json.loads(text)
    except ValueError:
        return ReadableBody(text, "text")
    return ReadableBody(json.dumps(parsed, indent=2, ensure_ascii=False), "json")
