"""Bytes on the wire to typed messages and back, with errors that name the field.

Decoding is where bad input is caught. Each failure is a :class:`ContractError`
subclass, so a consumer can tell "this will never decode" (dead-letter it) from a bug.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from shop.contracts.base import Contract
from shop.contracts.envelope import Envelope, EnvelopeHead
from shop.contracts.registry import lookup

ContractT = TypeVar("ContractT", bound=Contract)

MAX_MESSAGE_BYTES = 256 * 1024
"""SQS and SNS refuse larger messages; Kafka's default limit is larger, but one limit for
all transports keeps messages portable."""


class ContractError(ValueError):
    """A message that does not follow any contract; retrying cannot fix it."""


class UndecodableMessage(ContractError):
    """Not JSON, not an envelope, or too large."""


class UnknownMessageType(ContractError):
    """A well-formed envelope whose type and version no contract defines."""

    def __init__(self, message_type: str, version: int) -> None:
        super().__init__(f"unknown message type {message_type!r} version {version}")
        self.message_type = message_type
        self.version = version


class InvalidMessage(ContractError):
    """An envelope of a known type whose fields break the contract."""

    def __init__(self, contract_id: str, problems: list[str]) -> None:
        super().__init__(f"invalid {contract_id}: " + "; ".join(problems))
        self.contract_id = contract_id
        self.problems = problems


def describe_errors(error: ValidationError) -> list[str]:
    """One readable line per problem, each starting with the dotted path of the field."""
    return [_describe(detail) for detail in error.errors(include_url=False)]


def _describe(detail: ErrorDetails) -> str:
    path = ".".join(str(part) for part in detail["loc"]) or "(message)"
    return f"{path}: {detail['msg']}"


def encode(envelope: Envelope[Any]) -> bytes:
    """The JSON bytes of ``envelope``, unknown fields included."""
    body = envelope.model_dump_json().encode()
    if len(body) > MAX_MESSAGE_BYTES:
        raise UndecodableMessage(
            f"{envelope.type} message of {len(body)} bytes exceeds {MAX_MESSAGE_BYTES}"
        )
    return body


def decode(body: bytes | str) -> Envelope[Contract]:
    """Parse and validate a message of any known contract.

    The payload comes back as the contract's own class (``OrderCreated``, …).
    """
    head = _read_head(body)
    contract = lookup(head.type, head.version)
    if contract is None:
        raise UnknownMessageType(head.type, head.version)
    return _validate(contract, body)


def decode_as(contract: type[ContractT], body: bytes | str) -> Envelope[ContractT]:
    """Parse and validate a message that must follow ``contract``."""
    head = _read_head(body)
    if (head.type, head.version) != (contract.message_type, contract.message_version):
        raise InvalidMessage(
            contract.contract_id(),
            [f"type: expected {contract.contract_id()}, got {head.type}.v{head.version}"],
        )
    return _validate(contract, body)


def _read_head(body: bytes | str) -> EnvelopeHead:
    size = len(body)
    if size > MAX_MESSAGE_BYTES:
        raise UndecodableMessage(f"message of {size} bytes exceeds {MAX_MESSAGE_BYTES}")
    try:
        return EnvelopeHead.model_validate_json(body)
    except ValidationError as error:
        raise UndecodableMessage(
            "not a message envelope: " + "; ".join(describe_errors(error))
        ) from error


def _validate(contract: type[ContractT], body: bytes | str) -> Envelope[ContractT]:
    try:
        return Envelope[contract].model_validate_json(body)  # type: ignore[valid-type]
    except ValidationError as error:
        raise InvalidMessage(contract.contract_id(), describe_errors(error)) from error
