"""One service's AsyncAPI 3 document, built with FastStream's AsyncAPI support from what the
service declares: the contracts it adds to its outbox and the routers its worker runs.

A documentation broker (a FastStream ``KafkaBroker`` that is never connected) gets one
publisher per published contract and, per consumer, one subscriber per subscriber of the
router, one per delay topic and a publisher of its dead-letter topic, under the names the
Kafka transport uses. FastStream writes the channels, operations, messages and schemas;
what it cannot know is added afterwards: each consumer's group id, the headers the shop's
messages carry (the correlation id among them), what a dead letter's body is, the tags that
tell a consumer's delay and dead-letter topics from the contracts' topics, and component
names in the syntax AsyncAPI requires (FastStream joins names with ``:``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote

from faststream.kafka import KafkaBroker
from faststream.specification import AsyncAPI
from pydantic import BaseModel, ConfigDict

from shop.contracts import Command, Contract, Envelope
from shop.contracts.asyncapi import DEAD_LETTER_TOPIC_TAG, DELAY_TOPIC_TAG
from shop.contracts.envelope import TRACEPARENT_PATTERN
from shop.messaging import headers as h
from shop.messaging.naming import Naming
from shop.messaging.settings import KafkaSettings
from shop.messaging.subscriber import Router, Subscriber
from shop.messaging.transports.kafka.topology import delay_topics, group_id

SCHEMA_VERSION: Final = "3.0.0"
KAFKA_BINDING_VERSION: Final = "0.4.0"
"""The Kafka bindings' version FastStream writes for channels; operations use the same."""

_SERVICE_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_COMPONENT_NAME = re.compile(r"[^\w.\-]")
"""Characters AsyncAPI does not allow in a component's name (``^[\\w\\d\\.\\-_]+$``)."""

_SERVER_DESCRIPTION = (
    "The shop's Kafka cluster, at its development address (KafkaSettings.bootstrap_servers); "
    "a deployment sets its own. A deployment's messaging namespace prefixes every topic and "
    "consumer group shown here."
)
_DELAY_DESCRIPTION = (
    "A delay topic of {group}: the consumer writes a failed message here itself, with its "
    "attempt and due time, and reads it back once due. The -retry-0s topic carries redriven "
    "dead letters."
)
_DEAD_LETTER_DESCRIPTION = (
    "The dead letters of {group}: a message its consumer gave up on (attempts exhausted, a "
    "permanent error, or a body it could not decode, validate or route), its original body "
    "and headers byte for byte plus why it is here. The consumer's worker collects them "
    "from here (consumer group {group}-dead-letters) into its service's database, which "
    "keeps, lists, redrives and purges them; the topic keeps its copies only for its "
    "retention.ms."
)

_DELAY_TAG: Final = {
    "name": DELAY_TOPIC_TAG,
    "description": "A delay topic of the consumer, not a contract's: its retries and redrives.",
}
_DEAD_LETTER_TAG: Final = {
    "name": DEAD_LETTER_TOPIC_TAG,
    "description": "The consumer's dead letters, not a contract's topic.",
}

_DEAD_LETTER_PAYLOAD: Final = {
    "description": (
        "The original body, byte for byte: usually an envelope of a contract the consumer "
        "handles, but whatever it could not read is kept as it came. A body too large for "
        "the broker is kept as its first bytes, with its size and SHA-256 in headers. A "
        "redrive or purge marker has an empty body."
    )
}


@dataclass(frozen=True, slots=True)
class ServiceBus:
    """What one service sends and receives over the bus, as its AsyncAPI document states it.

    ``publishes`` is every contract the service adds to its outbox; ``routers`` are the
    routers its worker runs, which may be built with :func:`unwired` dependencies since
    documenting them only lists their subscribers.
    """

    name: str
    """The service (``order-service``): the document's title and file name."""
    version: str
    description: str
    publishes: tuple[type[Contract], ...]
    routers: tuple[Router, ...]

    def __post_init__(self) -> None:
        if not _SERVICE_NAME.match(self.name):
            raise ValueError(f"{self.name!r} is not a service name like 'order-service'")
        ids = [contract.contract_id() for contract in self.publishes]
        if len(set(ids)) != len(ids):
            raise ValueError(f"{self.name}: a contract is listed twice in publishes: {ids}")
        groups = [router.group for router in self.routers]
        if len(set(groups)) != len(groups):
            raise ValueError(f"{self.name}: two routers share a consumer group: {groups}")


class _Unwired:
    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):
            raise AttributeError(attribute)
        raise RuntimeError(
            f"{self._name} is not wired: this router was built to be documented, not to run"
        )


def unwired(name: str) -> Any:
    """A stand-in for a dependency of a router built only to be documented: listing its
    subscribers never touches it, and anything that does fails at once, naming it."""
    return _Unwired(name)


@dataclass(frozen=True, slots=True)
class _Endpoint:
    """What is added to one channel (and its operation) after FastStream has written it."""

    title: str
    headers: dict[str, Any]
    group_id: str | None = None
    payload: dict[str, Any] | None = None
    """Replaces the payload schema FastStream wrote (one it could not know)."""
    tag: dict[str, str] | None = None
    """Marks the operation as one of the consumer's own topics (delay, dead letters)."""


def build_document(service: ServiceBus, *, naming: Naming | None = None) -> dict[str, Any]:
    """The AsyncAPI 3 document of ``service`` over Kafka, as plain JSON data."""
    naming = naming or Naming()
    broker = KafkaBroker(KafkaSettings().bootstrap_servers, description=_SERVER_DESCRIPTION)
    endpoints: list[_Endpoint] = []

    for contract in service.publishes:
        title = contract.contract_id()
        broker.publisher(
            naming.topic(contract),
            schema=envelope_model(contract),
            title=title,
            description=_published(contract),
        )
        endpoints.append(_Endpoint(title, _producer_headers([contract])))

    for router in service.routers:
        endpoints += _document_consumer(broker, naming, router)

    specification = AsyncAPI(
        broker,
        title=service.name,
        version=service.version,
        description=service.description,
        schema_version=SCHEMA_VERSION,
    ).to_specification()
    # A JSON round trip turns FastStream's data into plain dicts and lists to edit.
    document: dict[str, Any] = json.loads(specification.to_json())
    for endpoint in endpoints:
        _finish_endpoint(document, endpoint)
    _conform_component_names(document)
    return document


def _document_consumer(broker: KafkaBroker, naming: Naming, router: Router) -> list[_Endpoint]:
    group = group_id(naming, router.group)
    dead_letters = naming.dead_letters(router.group)
    endpoints = []
    for subscriber in router:
        title = f"{router.group}:{subscriber.name}"  # the subscriber id
        broker.subscriber(
            naming.topic(subscriber.contract),
            group_id=group,
            title=title,
            description=_consumed(subscriber, dead_letters),
        )(_handler(subscriber))
        endpoints.append(_Endpoint(title, _producer_headers([subscriber.contract]), group))

    contracts = [subscriber.contract for subscriber in router]
    for topic in delay_topics(naming, router):
        retries = broker.subscriber(
            topic,
            group_id=group,
            title=topic,
            description=_DELAY_DESCRIPTION.format(group=router.group),
        )
        for subscriber in router:
            retries(_handler(subscriber))
        endpoints.append(_Endpoint(topic, _delay_headers(contracts), group, tag=_DELAY_TAG))

    broker.publisher(
        dead_letters,
        title=dead_letters,
        description=_DEAD_LETTER_DESCRIPTION.format(group=router.group),
    )
    endpoints.append(
        _Endpoint(
            dead_letters,
            _dead_letter_headers(contracts),
            payload=_DEAD_LETTER_PAYLOAD,
            tag=_DEAD_LETTER_TAG,
        )
    )
    return endpoints


@functools.cache
def envelope_model(contract: type[Contract]) -> type[BaseModel]:
    """``Envelope[contract]`` titled with the contract's id, as its JSON Schema snapshot is
    (``order.created.v1``): a component name AsyncAPI accepts, shared by every channel that
    carries the contract."""
    envelope: Any = Envelope[contract]  # type: ignore[valid-type]
    model: type[BaseModel] = type(
        f"{contract.__name__}Envelope",
        (envelope,),
        {
            "__module__": __name__,
            "__doc__": None,  # as Envelope[contract] has none: the snapshot's schema exactly
            "model_config": ConfigDict(title=contract.contract_id()),
        },
    )
    return model


def _handler(subscriber: Subscriber) -> Callable[[Any], Awaitable[None]]:
    """A FastStream handler standing for ``subscriber``: only its name and the type of its
    message are read, to document the payload."""

    async def handler(message: Any) -> None:
        raise RuntimeError("a documentation broker delivers nothing")

    handler.__name__ = handler.__qualname__ = subscriber.name
    handler.__annotations__ = {"message": envelope_model(subscriber.contract), "return": None}
    return handler


def _summary(contract: type[Contract]) -> str:
    kind = "command" if issubclass(contract, Command) else "event"
    text = (contract.__doc__ or "").strip().split("\n\n")[0]
    return f"{contract.contract_id()} ({kind}): {' '.join(text.split())}"


def _published(contract: type[Contract]) -> str:
    return f"{_summary(contract)} Added to the outbox in the transaction that causes it."


def _consumed(subscriber: Subscriber, dead_letters: str) -> str:
    retry = subscriber.retry
    return (
        f"{_summary(subscriber.contract)} Handled by {subscriber.name}, tried up to "
        f"{retry.max_attempts} times ({retry.base_delay:g} s doubling to at most "
        f"{retry.max_delay:g} s between tries), then a dead letter in {dead_letters}."
    )


def _string(description: str, **schema: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **schema}


def _producer_headers(
    contracts: Sequence[type[Contract]], *, required: bool = True
) -> dict[str, Any]:
    """The headers the relay writes from the envelope, so that a consumer can route and
    trace without decoding the body."""
    message_types = sorted({contract.message_type for contract in contracts})
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            h.MESSAGE_TYPE: _string("The envelope's type.", enum=message_types),
            h.EVENT_ID: _string("The envelope's event_id.", format="uuid"),
            h.CORRELATION_ID: _string("The envelope's correlation_id."),
            h.TRACEPARENT: _string(
                "W3C Trace Context of the span that sent the message (the relay's, or the "
                "one its outbox row was written in), when it was sent in a trace: the "
                "message's only trace context (the envelope's traceparent is not written).",
                pattern=TRACEPARENT_PATTERN,
            ),
            h.TRACESTATE: _string("W3C Trace Context's vendor entries, beside a traceparent."),
        },
    }
    if required:
        schema["required"] = [h.MESSAGE_TYPE, h.EVENT_ID, h.CORRELATION_ID]
    return schema


def _delay_headers(contracts: Sequence[type[Contract]]) -> dict[str, Any]:
    headers = _producer_headers(contracts)
    headers["properties"].update(
        {
            h.ATTEMPT: _string("Tries so far (absent on a redriven message)."),
            h.FIRST_FAILURE_AT: _string("When the first try failed (ISO 8601)."),
            h.DUE_AT: _string("Epoch milliseconds before which it is not handled."),
            h.ORIGIN: _string("The topic the message first came from."),
        }
    )
    return headers


def _dead_letter_headers(contracts: Sequence[type[Contract]]) -> dict[str, Any]:
    # The producer's headers are kept when there were any: a body that never was an
    # envelope becomes a dead letter too.
    headers = _producer_headers(contracts, required=False)
    headers["properties"].update(
        {
            h.DEAD_LETTER_CONSUMER: _string("The consumer group that gave up on it."),
            h.DEAD_LETTER_SOURCE: _string("The topic it was read from."),
            h.DEAD_LETTER_ERROR_TYPE: _string("The kind of failure."),
            h.DEAD_LETTER_ERROR_MESSAGE: _string("What failed, cut to 2000 characters."),
            h.DEAD_LETTER_ATTEMPTS: _string("How many tries were made."),
            h.DEAD_LETTER_FIRST_FAILURE_AT: _string("When the first try failed (ISO 8601)."),
            h.DEAD_LETTER_LAST_FAILURE_AT: _string("When the last try failed (ISO 8601)."),
            h.DEAD_LETTER_BODY_SIZE: _string("Of a body kept as a prefix: its whole size."),
            h.DEAD_LETTER_BODY_SHA256: _string("Of a body kept as a prefix: its SHA-256."),
            h.DEAD_LETTER_RESOLVES: _string(
                "On a redrive or purge marker an earlier version wrote: what it settled "
                "(no longer written; the collector passes over it)."
            ),
        }
    )
    headers["properties"][h.MESSAGE_TYPE].pop("enum")  # a message of any type may be refused
    return headers


def _finish_endpoint(document: dict[str, Any], endpoint: _Endpoint) -> None:
    channel = document["channels"][endpoint.title]
    for reference in channel["messages"].values():
        message = _resolve(document, reference["$ref"])
        message["headers"] = endpoint.headers
        if endpoint.payload is not None:
            payload = _resolve(document, message["payload"]["$ref"])
            payload.clear()
            payload.update(endpoint.payload)
        message["correlationId"] = {
            "description": "The envelope's correlation_id, shared by what one request caused.",
            "location": f"$message.header#/{h.CORRELATION_ID}",
        }
    operation = document["operations"][endpoint.title]
    if endpoint.tag is not None:
        operation["tags"] = [dict(endpoint.tag)]
    if endpoint.group_id is not None:
        operation["bindings"] = {
            "kafka": {
                "groupId": {"type": "string", "enum": [endpoint.group_id]},
                "bindingVersion": KAFKA_BINDING_VERSION,
            }
        }


def _resolve(document: dict[str, Any], reference: str) -> dict[str, Any]:
    node: Any = document
    for part in reference.removeprefix("#/").split("/"):
        node = node[_pointer_part(part)]
    if not isinstance(node, dict):
        raise TypeError(f"{reference} does not point to an object")
    return node


def _pointer_part(part: str) -> str:
    """One step of a JSON Pointer in a URI fragment, decoded."""
    return unquote(part).replace("~1", "/").replace("~0", "~")


def _conform_component_names(document: dict[str, Any]) -> None:
    """Rename the components whose names AsyncAPI refuses, and every reference to them."""
    renamed: dict[tuple[str, str], str] = {}
    for section, components in document.get("components", {}).items():
        for name in list(components):
            conforming = _COMPONENT_NAME.sub(".", name)
            if conforming == name:
                continue
            if conforming in components:
                raise ValueError(f"components/{section}: {name!r} and {conforming!r} clash")
            components[conforming] = components.pop(name)
            renamed[section, name] = conforming
    for node in _objects(document):
        target = node.get("$ref")
        if not (isinstance(target, str) and target.startswith("#/components/")):
            continue
        section, _, encoded = target.removeprefix("#/components/").partition("/")
        new_name = renamed.get((section, _pointer_part(encoded)))
        if new_name is not None:
            node["$ref"] = f"#/components/{section}/{new_name}"


def _objects(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _objects(value)
    elif isinstance(node, list):
        for item in node:
            yield from _objects(item)
