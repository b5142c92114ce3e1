"""Documents and bodies as people read them: the committed AsyncAPI documents with every
``$ref`` followed, and a dead letter's body pretty-printed when it is JSON."""

from __future__ import annotations

from shop.console.adapters.asyncapi import DocumentFolder
from shop.console.domain.asyncapi import SchemaField, read_document
from shop.console.domain.payloads import readable_body
from shop.console.settings import ConsoleSettings


def _field(fields: tuple[SchemaField, ...], name: str) -> SchemaField:
    return next(field for field in fields if field.name == name)


def test_every_committed_document_reads_with_its_channels_operations_and_messages() -> None:
    folder = DocumentFolder(ConsoleSettings(environment="test").asyncapi_dir)

    services = folder.services()

    assert services == ["notification-service", "order-service", "payment-service"]
    for service in services:
        document = folder.document(service)
        assert document.channels
        assert document.operations
        assert document.messages
        channel_names = {channel.name for channel in document.channels}
        assert {operation.channel for operation in document.operations} <= channel_names


def test_a_messages_payload_is_a_tree_of_fields_through_its_references() -> None:
    document = DocumentFolder(ConsoleSettings(environment="test").asyncapi_dir).document(
        "order-service"
    )
    created = next(m for m in document.messages if m.name == "order.created.v1.Message")

    payload = _field(created.payload, "payload")
    lines = _field(payload.fields, "lines")

    assert payload.type == "OrderCreated"
    assert lines.type == "array of OrderLine"
    assert _field(lines.fields, "sku").required
    assert "min items 1" in lines.constraints
    assert _field(created.headers, "x-message-type").constraints == ('one of "order.created"',)


def test_a_schema_that_refers_to_itself_stops_instead_of_looping() -> None:
    document = read_document(
        "loop",
        {
            "components": {
                "messages": {"M": {"payload": {"$ref": "#/components/schemas/Node"}}},
                "schemas": {
                    "Node": {
                        "title": "Node",
                        "properties": {"next": {"$ref": "#/components/schemas/Node"}},
                    }
                },
            }
        },
    )

    (message,) = document.messages
    assert message.payload[0].name == "next"
    assert message.payload[0].fields == ()


def test_a_json_body_is_indented_and_other_bytes_are_kept_visible() -> None:
    assert readable_body(b'{"a":[1,2]}').text == '{\n  "a": [\n    1,\n    2\n  ]\n}'
    assert readable_body(b"plain words").kind == "text"
    assert readable_body(b"\xff\x00").kind == "binary"
    assert readable_body(b"\xff\x00").text == "\\xff\x00"
