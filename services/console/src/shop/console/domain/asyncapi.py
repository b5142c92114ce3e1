"""An AsyncAPI 3 document as a person reads it: servers, channels, operations and messages,
each message's headers and payload as a tree of named fields (``$ref`` followed, types and
constraints spelled out), instead of the JSON a program reads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

MAX_DEPTH: Final = 8
"""Nesting shown at most: deeper fields (or a schema that refers to itself) stop there."""
CONSTRAINT_KEYS: Final = (
    ("format", "format"),
    ("pattern", "pattern"),
    ("minLength", "min length"),
    ("maxLength", "max length"),
    ("minimum", "minimum"),
    ("maximum", "maximum"),
    ("exclusiveMinimum", "above"),
    ("exclusiveMaximum", "below"),
    ("minItems", "min items"),
    ("maxItems", "max items"),
    ("enum", "one of"),
    ("const", "always"),
    ("default", "default"),
    ("examples", "e.g."),
)


@dataclass(frozen=True, slots=True)
class SchemaField:
    name: str
    type: str
    required: bool
    description: str
    constraints: tuple[str, ...]
    fields: tuple[SchemaField, ...] = ()
    """The fields of an object (or of an array's items)."""


@dataclass(frozen=True, slots=True)
class MessageView:
    name: str
    """Its key under ``components.messages``: the anchor the channels link to."""
    title: str
    description: str
    correlation_id: str
    headers: tuple[SchemaField, ...]
    payload_type: str
    payload_description: str
    payload: tuple[SchemaField, ...]


@dataclass(frozen=True, slots=True)
class ChannelView:
    name: str
    address: str
    description: str
    messages: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OperationView:
    name: str
    action: str
    """``send`` (the service publishes) or ``receive`` (it consumes)."""
    channel: str
    group: str | None
    """The consumer group that receives, from the Kafka binding."""
    messages: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ServerView:
    name: str
    protocol: str
    host: str
    description: str


@dataclass(frozen=True, slots=True)
class DocumentView:
    service: str
    title: str
    version: str
    asyncapi: str
    description: str
    servers: tuple[ServerView, ...]
    channels: tuple[ChannelView, ...]
    operations: tuple[OperationView, ...]
    messages: tuple[MessageView, ...]

    @property
    def sends(self) -> tuple[OperationView, ...]:
        return tuple(o for o in self.operations if o.action == "send")

    @property
    def receives(self) -> tuple[OperationView, ...]:
        return tuple(o for o in self.operations if o.action == "receive")


def read_document(service: str, document: Mapping[str, Any]) -> DocumentView:
    """``document`` (an AsyncAPI 3 document, parsed) as a :class:`DocumentView`."""
    resolver = _Resolver(document)
    info = _mapping(document.get("info"))
    components = _mapping(document.get("components"))
    return DocumentView(
        service=service,
        title=str(info.get("title", service)),
        version=str(info.get("version", "")),
        asyncapi=str(document.get("asyncapi", "")),
        description=str(info.get("description", "")),
        servers=tuple(
            ServerView(
                name=name,
                protocol=str(server.get("protocol", "")),
                host=str(server.get("host", "")),
                description=str(server.get("description", "")),
            )
            for name, server in _items(document.get("servers"))
        ),
        channels=tuple(
            ChannelView(
                name=name,
                address=str(channel.get("address", name)),
                description=str(channel.get("description", "")),
                messages=tuple(
                    resolver.message_name(message) for _, message in _items(channel.get("messages"))
                ),
            )
            for name, channel in _items(document.get("channels"))
        ),
        operations=tuple(
            OperationView(
                name=name,
                action=str(operation.get("action", "")),
                channel=_ref_tail(_mapping(operation.get("channel")).get("$ref", "")),
                group=_group(operation),
                messages=tuple(
                    resolver.message_name(_mapping(message))
                    for message in operation.get("messages", [])
                ),
            )
            for name, operation in _items(document.get("operations"))
        ),
        messages=tuple(
            resolver.message(name, message) for name, message in _items(components.get("messages"))
        ),
    )


def read_document_text(service: str, text: str) -> DocumentView:
    return read_document(service, json.loads(text))


class _Resolver:
    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document

    def lookup(self, ref: str) -> Mapping[str, Any]:
        """The object a local ``$ref`` (``#/a/b``) points at; empty when it points nowhere."""
        if not ref.startswith("#/"):
            return {}
        node: Any = self.document
        for escaped in ref[2:].split("/"):
            part = escaped.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                return {}
            node = node[part]
        return _mapping(node)

    def message_name(self, message: Mapping[str, Any]) -> str:
        """The ``components.messages`` key a channel's or an operation's message refers to,
        through the channel when it is an operation's."""
        seen: set[str] = set()
        while "$ref" in message:
            ref = str(message["$ref"])
            if ref.startswith("#/components/messages/"):
                return _ref_tail(ref)
            if ref in seen:
                break
            seen.add(ref)
            message = self.lookup(ref)
        return str(message.get("name", message.get("title", "")))

    def message(self, name: str, message: Mapping[str, Any]) -> MessageView:
        payload = _mapping(message.get("payload"))
        headers = _mapping(message.get("headers"))
        return MessageView(
            name=name,
            title=str(message.get("title", name)),
            description=str(message.get("description", message.get("summary", ""))),
            correlation_id=str(_mapping(message.get("correlationId")).get("location", "")),
            headers=self.fields(headers, depth=0, seen=frozenset()),
            payload_type=self.type_of(payload),
            payload_description=str(self._follow(payload).get("description", "")),
            payload=self.fields(payload, depth=0, seen=frozenset()),
        )

    def _follow(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        seen: set[str] = set()
        while "$ref" in schema and schema["$ref"] not in seen:
            seen.add(str(schema["$ref"]))
            schema = self.lookup(str(schema["$ref"]))
        return schema

    def fields(
        self, schema: Mapping[str, Any], *, depth: int, seen: frozenset[str]
    ) -> tuple[SchemaField, ...]:
        """The named fields of an object schema (or of an array's items), nested."""
        if depth >= MAX_DEPTH:
            return ()
        if "$ref" in schema:
            ref = str(schema["$ref"])
            if ref in seen:
                return ()
            return self.fields(self.lookup(ref), depth=depth, seen=seen | {ref})
        if schema.get("type") == "array" or "items" in schema:
            return self.fields(_mapping(schema.get("items")), depth=depth, seen=seen)
        for alternative in schema.get("anyOf", schema.get("oneOf", [])):
            found = self.fields(_mapping(alternative), depth=depth, seen=seen)
            if found:
                return found
        required = set(schema.get("required", []))
        return tuple(
            SchemaField(
                name=name,
                type=self.type_of(field),
                required=name in required,
                description=str(self._follow(field).get("description", "")),
                constraints=_constraints(self._follow(field)),
                fields=self.fields(field, depth=depth + 1, seen=seen),
            )
            for name, field in _items(schema.get("properties"))
        )

    def type_of(self, schema: Mapping[str, Any]) -> str:
        if "$ref" in schema:
            target = self.lookup(str(schema["$ref"]))
            return str(target.get("title", _ref_tail(str(schema["$ref"]))))
        alternatives = schema.get("anyOf", schema.get("oneOf"))
        if alternatives:
            return " or ".join(self.type_of(_mapping(a)) for a in alternatives)
        kind = schema.get("type")
        if isinstance(kind, list):
            return " or ".join(str(k) for k in kind)
        if kind == "array":
            return f"array of {self.type_of(_mapping(schema.get('items')))}"
        if kind is None:
            return "object" if "properties" in schema else "any"
        return str(kind)


def _constraints(schema: Mapping[str, Any]) -> tuple[str, ...]:
    said = []
    for key, label in CONSTRAINT_KEYS:
        if key in schema:
            value = schema[key]
            if isinstance(value, list):
                value = ", ".join(json.dumps(v, ensure_ascii=False) for v in value)
            elif not isinstance(value, str):
                value = json.dumps(value, ensure_ascii=False)
            said.append(f"{label} {value}")
    return tuple(said)


def _group(operation: Mapping[str, Any]) -> str | None:
    kafka = _mapping(_mapping(operation.get("bindings")).get("kafka"))
    group = _mapping(kafka.get("groupId"))
    names = group.get("enum") or []
    return str(names[0]) if names else None


def _ref_tail(ref: str) -> str:
    return ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _items(value: Any) -> list[tuple[str, Mapping[str, Any]]]:
    return [(str(k), _mapping(v)) for k, v in _mapping(value).items()]
