"""The outbox of the fakes that producers run on: each message a use case adds becomes the
row the Postgres adapters would write, built by the same functions (``new_envelope`` and
``outbox_row``), so that a pact is verified against the bytes the relay would publish.

The services' own unit fakes keep the events alone; the key and envelope matter here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from pact.types import Message

from shop.contracts import Contract, decode_as
from shop.messaging.outbox import new_envelope, outbox_row

ContractT = TypeVar("ContractT", bound=Contract)


@dataclass(frozen=True, slots=True)
class OutboxRow:
    message_type: str
    key: str
    body: bytes
    headers: dict[str, str]
    due_at: datetime | None

    def as_pact_message(self) -> Message:
        """The row as the relay publishes it: the body, with the row's headers."""
        return Message(contents=self.body, metadata=self.headers, content_type="application/json")


@dataclass
class RecordingOutbox:
    rows: list[OutboxRow] = field(default_factory=list)

    def add(self, message: Contract, *, key: str, due_at: datetime | None = None) -> None:
        row = outbox_row(new_envelope(message, key=key))
        self.rows.append(
            OutboxRow(row["message_type"], row["key"], row["body"], row["headers"], due_at)
        )

    def the_one(self, contract: type[Contract]) -> OutboxRow:
        """The only row of ``contract``'s type (a scenario that wrote two is a mistake)."""
        rows = [row for row in self.rows if row.message_type == contract.message_type]
        assert len(rows) == 1, f"{len(rows)} {contract.__name__} rows in the outbox, not one"
        return rows[0]

    def the_event(self, contract: type[ContractT]) -> ContractT:
        """The only message of ``contract``'s type, decoded as a consumer would."""
        return decode_as(contract, self.the_one(contract).body).payload
