"""Helpers for the services' API tests: the schemathesis checks every API must pass, and an
ASGI app that forwards to the app a fixture builds later."""

from __future__ import annotations

from fastapi import FastAPI
from schemathesis.checks import (
    content_type_conformance,
    missing_required_header,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)
from starlette.types import ASGIApp, Receive, Scope, Send

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
    missing_required_header,
    unsupported_method,
]
"""Not ``positive_data_acceptance``: a well-formed request for an order or a sku that does
not exist, or a well-formed notification unsigned, is rightly a 4xx, not the 2xx that check
expects."""


class AppUnderTest:
    """Forwards to the app a fixture builds on a fresh database (``target``).

    Schemathesis loads the document when a test module is imported, before any fixture has
    run: its fixture-based loader (``schemathesis.pytest.from_fixture``) renames the test
    node through ``Node._nodeid``, which pytest 9 no longer has. The document needs no
    database, so until the fixture runs ``document_only`` (an app on an unreachable
    database) serves it.
    """

    def __init__(self, document_only: FastAPI) -> None:
        self.document_only = document_only
        self.target: ASGIApp = document_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.target(scope, receive, send)
