"""What every API reads the same way from a JSON body."""

from __future__ import annotations

from pydantic import BeforeValidator


def _whole_number(value: object) -> object:
    # JSON Schema's "integer" is any number without a fraction, 2.0 too, and the documents
    # say "integer": 2.0 is taken as 2. Strings, booleans and 2.5 are still refused.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WHOLE_NUMBER = BeforeValidator(_whole_number)
"""For an ``int`` field of a strict model: ``Annotated[int, Field(…), WHOLE_NUMBER]``."""
