"""Each kind of breaking change, and the additive one, on small models made for the test."""

import uuid
from enum import StrEnum

from pydantic import BaseModel

from shop.contracts.compatibility import compare


class Channel(StrEnum):
    EMAIL = "email"
    SMS = "sms"


class FewerChannels(StrEnum):
    EMAIL = "email"


class Line(BaseModel):
    sku: str
    quantity: int


class Before(BaseModel):
    order_id: str
    total: int
    note: str | None = None
    channel: Channel = Channel.EMAIL
    lines: list[Line]


def problems(before: type[BaseModel], after: type[BaseModel]) -> list[str]:
    return [str(p) for p in compare(before.model_json_schema(), after.model_json_schema())]


def test_the_same_schema_is_compatible():
    assert problems(Before, Before) == []


def test_adding_an_optional_field_is_compatible():
    class After(Before):
        gift_message: str | None = None

    assert problems(Before, After) == []


def test_adding_an_enum_value_is_compatible():
    class MoreChannels(StrEnum):
        EMAIL = "email"
        SMS = "sms"
        PUSH = "push"

    class After(Before):
        channel: MoreChannels = MoreChannels.EMAIL  # type: ignore[assignment]

    assert problems(Before, After) == []


def test_removing_a_field_breaks():
    class After(BaseModel):
        order_id: str
        note: str | None = None
        channel: Channel = Channel.EMAIL
        lines: list[Line]

    assert problems(Before, After) == ["total: field removed (or renamed)"]


def test_renaming_a_field_breaks():
    class After(BaseModel):
        order_id: str
        grand_total: int
        note: str | None = None
        channel: Channel = Channel.EMAIL
        lines: list[Line]

    assert problems(Before, After) == [
        "total: field removed (or renamed)",
        "grand_total: new required field",
    ]


def test_changing_a_type_breaks():
    class After(Before):
        total: str  # type: ignore[assignment]

    assert problems(Before, After) == ["total: type changed from integer to string"]


def test_changing_a_string_format_breaks():
    class After(Before):
        order_id: uuid.UUID  # type: ignore[assignment]

    assert problems(Before, After) == ["order_id: type changed from string to string (uuid)"]


def test_making_an_optional_field_required_breaks():
    class After(Before):
        note: str  # type: ignore[assignment]

    assert problems(Before, After) == [
        "note: type changed from null | string to string",
        "note: optional field became required",
    ]


def test_requiring_a_field_that_had_a_default_breaks():
    class After(Before):
        channel: Channel

    assert problems(Before, After) == ["channel: optional field became required"]


def test_a_new_required_field_breaks():
    class After(Before):
        customer_email: str

    assert problems(Before, After) == ["customer_email: new required field"]


def test_removing_an_enum_value_breaks():
    class After(Before):
        channel: FewerChannels = FewerChannels.EMAIL  # type: ignore[assignment]

    assert problems(Before, After) == ["channel: enum value 'sms' removed"]


def test_a_required_field_that_becomes_optional_breaks_its_consumers():
    class After(Before):
        total: int = 0

    assert problems(Before, After) == [
        "total: field is no longer required; its consumers rely on it"
    ]


def test_a_change_inside_a_list_of_objects_names_the_nested_path():
    class NewLine(BaseModel):
        sku: int
        quantity: int

    class After(Before):
        lines: list[NewLine]  # type: ignore[assignment]

    assert problems(Before, After) == ["lines[].sku: type changed from string to integer"]
