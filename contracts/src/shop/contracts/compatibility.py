"""Decide whether a new JSON Schema of a message can replace the committed one.

A change is compatible when every message valid under the old schema keeps its meaning for
consumers written against it, and consumers written against the new schema still read the
old messages (a backlog, a dead letter redriven next week). Concretely, breaking is:
a field removed or renamed, a type changed, a field that becomes required or stops being
required, a new required field, an enum value removed. Adding an optional field is fine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Schema = dict[str, Any]


@dataclass(frozen=True)
class Incompatibility:
    """One breaking difference, at a dotted field path such as ``payload.lines[].sku``."""

    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def compare(old: Schema, new: Schema) -> list[Incompatibility]:
    """Every breaking difference between ``old`` and ``new``; empty when compatible."""
    found: list[Incompatibility] = []
    _compare(_Node(old, old), _Node(new, new), "", found)
    return found


@dataclass(frozen=True)
class _Node:
    """A subschema together with the root document its ``$ref`` pointers resolve against."""

    schema: Schema
    root: Schema

    def resolved(self) -> _Node:
        schema = self.schema
        while "$ref" in schema or _single_all_of(schema):
            ref = schema["$ref"] if "$ref" in schema else schema["allOf"][0]["$ref"]
            schema = _follow(self.root, ref)
        return _Node(schema, self.root)

    def members(self) -> Iterator[_Node]:
        """The alternatives of a union (``anyOf``/``oneOf``), or the node itself."""
        node = self.resolved()
        alternatives = node.schema.get("anyOf") or node.schema.get("oneOf")
        if alternatives is None:
            yield node
            return
        for alternative in alternatives:
            yield from _Node(alternative, self.root).members()


def _single_all_of(schema: Schema) -> bool:
    all_of = schema.get("allOf")
    return isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]


def _follow(root: Schema, ref: str) -> Schema:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref pointers are supported, got {ref!r}")
    target: Any = root
    for part in ref[2:].split("/"):
        target = target[part]
    if not isinstance(target, dict):
        raise ValueError(f"$ref {ref!r} does not point at a schema")
    return target


def _kinds(node: _Node) -> frozenset[str]:
    """The JSON types a node admits, with string formats told apart (uuid ≠ date-time)."""
    kinds: set[str] = set()
    for member in node.members():
        schema = member.schema
        declared = schema.get("type")
        if declared is None and "enum" in schema:
            declared = sorted({_json_type(value) for value in schema["enum"]})
        if declared is None and "const" in schema:
            declared = _json_type(schema["const"])
        if declared is None:
            kinds.add("any")
            continue
        for json_type in declared if isinstance(declared, list) else [declared]:
            fmt = schema.get("format")
            kinds.add(f"{json_type} ({fmt})" if fmt and json_type == "string" else json_type)
    return frozenset(kinds)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _enum_values(node: _Node) -> set[Any] | None:
    values: set[Any] = set()
    restricted = False
    for member in node.members():
        if "enum" in member.schema:
            restricted = True
            values.update(member.schema["enum"])
        elif "const" in member.schema:
            restricted = True
            values.add(member.schema["const"])
    return values if restricted else None


def _object_members(node: _Node) -> list[_Node]:
    return [
        member
        for member in node.members()
        if "properties" in member.schema or member.schema.get("type") == "object"
    ]


def _array_items(node: _Node) -> _Node | None:
    for member in node.members():
        items = member.schema.get("items")
        if isinstance(items, dict):
            return _Node(items, member.root)
    return None


def _compare(old: _Node, new: _Node, path: str, found: list[Incompatibility]) -> None:
    where = path or "(message)"
    old_kinds, new_kinds = _kinds(old), _kinds(new)
    if old_kinds != new_kinds:
        found.append(
            Incompatibility(
                where,
                f"type changed from {' | '.join(sorted(old_kinds))} "
                f"to {' | '.join(sorted(new_kinds))}",
            )
        )
        return

    old_enum, new_enum = _enum_values(old), _enum_values(new)
    if old_enum is not None and new_enum is not None:
        for value in sorted(old_enum - new_enum, key=repr):
            found.append(Incompatibility(where, f"enum value {value!r} removed"))

    _compare_objects(old, new, path, found)

    old_items, new_items = _array_items(old), _array_items(new)
    if old_items is not None and new_items is not None:
        _compare(old_items, new_items, f"{path}[]", found)


def _compare_objects(old: _Node, new: _Node, path: str, found: list[Incompatibility]) -> None:
    old_objects, new_objects = _object_members(old), _object_members(new)
    if not old_objects or not new_objects:
        return
    old_props, old_required = _fields(old_objects)
    new_props, new_required = _fields(new_objects)
    prefix = f"{path}." if path else ""

    for name, old_prop in old_props.items():
        field = f"{prefix}{name}"
        if name not in new_props:
            found.append(Incompatibility(field, "field removed (or renamed)"))
            continue
        _compare(old_prop, new_props[name], field, found)
        if name in old_required and name not in new_required:
            found.append(
                Incompatibility(field, "field is no longer required; its consumers rely on it")
            )
        if name not in old_required and name in new_required:
            found.append(Incompatibility(field, "optional field became required"))

    for name in sorted(new_required - old_props.keys()):
        found.append(Incompatibility(f"{prefix}{name}", "new required field"))


def _fields(objects: list[_Node]) -> tuple[dict[str, _Node], set[str]]:
    properties: dict[str, _Node] = {}
    required: set[str] = set()
    for obj in objects:
        for name, prop in obj.schema.get("properties", {}).items():
            properties.setdefault(name, _Node(prop, obj.root))
        required.update(obj.schema.get("required", []))
    return properties, required
