import json
import uuid
from datetime import UTC, datetime

import pytest

from shop.contracts import (
    ALL_CONTRACTS,
    MAX_MESSAGE_BYTES,
    InvalidMessage,
    OrderCreated,
    PaymentReceived,
    UndecodableMessage,
    UnknownMessageType,
    decode,
    decode_as,
    encode,
    wrap,
)
from shop.contracts.examples import examples


def order_created_body(**payload_changes: object) -> dict[str, object]:
    body = json.loads(encode(wrap(examples()[OrderCreated], key="order-1")))
    body["payload"].update(payload_changes)
    return body


def as_bytes(body: dict[str, object]) -> bytes:
    return json.dumps(body).encode()


@pytest.mark.parametrize("contract", ALL_CONTRACTS, ids=lambda c: c.contract_id())
def test_every_contract_round_trips_through_bytes(contract):
    original = wrap(examples()[contract], key="agg-1", correlation_id="checkout-7")

    decoded = decode(encode(original))

    assert type(decoded.payload) is contract
    assert decoded == original


def test_unknown_fields_are_kept_and_forwarded():
    body = order_created_body(gift_wrap=True)
    body["tenant"] = "id"

    decoded = decode(as_bytes(body))

    assert decoded.payload.model_extra == {"gift_wrap": True}
    assert json.loads(encode(decoded))["tenant"] == "id"
    assert json.loads(encode(decoded))["payload"]["gift_wrap"] is True


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"total": "250000"}, "payload.total"),
        ({"total": 2500.5}, "payload.total"),
        ({"total": -1}, "payload.total"),
        ({"currency": "idr"}, "payload.currency"),
        ({"customer_email": "not-an-address"}, "payload.customer_email"),
        ({"order_id": "42"}, "payload.order_id"),
        ({"placed_at": "2026-12-02T09:30:00"}, "payload.placed_at"),
        ({"lines": []}, "payload.lines"),
    ],
)
def test_a_wrong_value_is_rejected_naming_the_field(change, field):
    with pytest.raises(InvalidMessage) as raised:
        decode(as_bytes(order_created_body(**change)))

    assert raised.value.contract_id == "order.created.v1"
    assert any(problem.startswith(f"{field}:") for problem in raised.value.problems), str(
        raised.value
    )


def test_an_address_is_checked_every_time_and_normalised_like_email_str():
    # Addresses are remembered once checked; a bad one must still be refused each time.
    for _ in range(2):
        with pytest.raises(InvalidMessage, match=r"payload\.customer_email: .*@-sign"):
            decode(as_bytes(order_created_body(customer_email="ayu.example.com")))
    decoded = decode(as_bytes(order_created_body(customer_email="Ayu@Example.COM")))

    assert decoded.payload.customer_email == "Ayu@example.com"


def test_a_nested_wrong_value_names_its_full_path():
    body = order_created_body()
    body["payload"]["lines"][1]["quantity"] = 0

    with pytest.raises(InvalidMessage, match=r"payload\.lines\.1\.quantity: .*greater than"):
        decode(as_bytes(body))


def test_a_missing_field_is_named():
    body = order_created_body()
    del body["payload"]["customer_email"]

    with pytest.raises(InvalidMessage, match=r"payload\.customer_email: Field required"):
        decode(as_bytes(body))


def test_a_missing_envelope_field_is_named():
    body = order_created_body()
    del body["event_id"]

    with pytest.raises(InvalidMessage, match=r"event_id: Field required"):
        decode(as_bytes(body))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"{not json", "not a message envelope"),
        (b"", "not a message envelope"),
        (b"[1, 2]", "not a message envelope"),
        (b'{"payload": {}}', "type: Field required"),
        (b'{"type": "order.created", "version": "1"}', "version: Input should be a valid integer"),
    ],
)
def test_undecodable_bodies_are_refused_with_a_reason(body, reason):
    with pytest.raises(UndecodableMessage, match=reason):
        decode(body)


def test_an_unknown_type_or_version_is_refused():
    body = order_created_body()
    body["version"] = 9

    with pytest.raises(UnknownMessageType) as raised:
        decode(as_bytes(body))

    assert (raised.value.message_type, raised.value.version) == ("order.created", 9)


def test_an_oversize_message_is_refused_on_both_sides():
    with pytest.raises(UndecodableMessage, match="exceeds"):
        decode(as_bytes(order_created_body(note="x" * MAX_MESSAGE_BYTES)))

    oversize = OrderCreated(**dict(examples()[OrderCreated]), note="x" * MAX_MESSAGE_BYTES)
    with pytest.raises(UndecodableMessage, match="exceeds"):
        encode(wrap(oversize, key="order-1"))


def test_decode_as_refuses_a_message_of_another_contract():
    body = encode(wrap(examples()[PaymentReceived], key="p-1"))

    with pytest.raises(InvalidMessage, match=r"expected order\.created\.v1"):
        decode_as(OrderCreated, body)


def test_a_caused_message_inherits_correlation_and_trace():
    trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    cause = wrap(
        examples()[PaymentReceived], key="o-1", correlation_id="checkout-7", traceparent=trace
    )

    effect = wrap(examples()[OrderCreated], key="o-1", causation=cause)

    assert effect.correlation_id == "checkout-7"
    assert effect.traceparent == trace
    assert effect.causation_id == cause.event_id
    assert effect.event_id != cause.event_id


def test_a_new_message_starts_its_own_correlation():
    message = wrap(
        examples()[OrderCreated], key="o-1", occurred_at=datetime(2026, 1, 1, tzinfo=UTC)
    )

    assert message.correlation_id == str(message.event_id)
    assert message.causation_id is None
    assert isinstance(message.event_id, uuid.UUID)
    assert (message.type, message.version) == ("order.created", 1)
