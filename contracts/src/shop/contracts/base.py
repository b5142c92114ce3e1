"""Base classes and field types shared by every contract.

Contracts are strict about types (a string where an integer belongs is rejected, never
coerced) and lenient about unknown fields, which are kept: a consumer deployed before a
producer's additive change still reads, and forwards, the newer messages.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, ClassVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    EmailStr,
    Field,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)

MinorUnits = Annotated[int, Field(ge=0, description="Amount in the currency's minor unit.")]
"""Money is an integer count of the currency's minor unit (IDR has none: 250000 is Rp 250.000)."""

CurrencyCode = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Z]{3}$"),
    Field(description="ISO 4217 currency code.", examples=["IDR"]),
]

Sku = Annotated[
    str, StringConstraints(min_length=1, max_length=64, pattern=r"^[A-Z0-9][A-Z0-9-]*$")
]

NonEmptyText = Annotated[str, StringConstraints(min_length=1, max_length=500)]

_EMAIL_STR = TypeAdapter(EmailStr)


@lru_cache(maxsize=4096)
def _normalised_email(value: str) -> str:
    """``EmailStr``'s check, remembered: its syntax and IDNA rules cost more than building
    the rest of an order event, and the same customers' addresses come back all the time."""
    try:
        return _EMAIL_STR.validate_python(value)
    except ValidationError as error:
        raise ValueError(error.errors()[0]["msg"]) from None


EmailAddress = Annotated[
    str,
    AfterValidator(_normalised_email),
    WithJsonSchema({"type": "string", "format": "email"}),
]
"""An e-mail address, checked and normalised as pydantic's ``EmailStr`` does."""


class Contract(BaseModel):
    """A message that crosses a service boundary: an event or a command."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    message_type: ClassVar[str]
    """Dotted name on the wire, e.g. ``order.created``."""
    message_version: ClassVar[int]
    """Bumped, alongside the old version, on any breaking change."""

    @classmethod
    def contract_id(cls) -> str:
        """Stable name of this contract version, e.g. ``order.created.v1``."""
        return f"{cls.message_type}.v{cls.message_version}"


class Event(Contract):
    """Something that happened (past tense); any number of services may consume it."""


class Command(Contract):
    """A request for one service to do something (imperative); exactly one handler."""


class ContractModel(BaseModel):
    """A value nested inside a contract (an order line, say), with the same strictness."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)
