"""The services' AsyncAPI documents ship inside the library and are read from it."""

import pytest

from shop.contracts.asyncapi import DOCUMENT_DIR, read_document, services


def test_each_services_document_is_in_the_installed_package() -> None:
    assert services() == ["notification-service", "order-service", "payment-service"]
    assert DOCUMENT_DIR.name == "asyncapi"
    assert DOCUMENT_DIR.parent.name == "contracts"
    document = read_document("order-service")
    assert (document["asyncapi"], document["info"]["title"]) == ("3.0.0", "order-service")


def test_a_service_without_a_document_is_named() -> None:
    with pytest.raises(KeyError, match="stock-service"):
        read_document("stock-service")
