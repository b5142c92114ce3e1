"""Helpers for the services' API tests: the schemathesis checks every API must pass, an ASGI
app that forwards to the app a fixture builds later, and a stateful run over an API's
OpenAPI links that reports the steps it took."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import hypothesis
from fastapi import FastAPI
from schemathesis import Case, Response
from schemathesis.checks import (
    CheckFunction,
    content_type_conformance,
    ensure_resource_availability,
    missing_required_header,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)
from schemathesis.generation.stateful.state_machine import StepInput, StepOutput
from schemathesis.schemas import BaseSchema
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

STATEFUL_CHECKS = [*CHECKS, ensure_resource_availability]
"""Along a chain of calls, also: what a POST just created is found by the calls its links
lead to (no 404 for an order placed a step before)."""


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


def dangling_references(document: dict[str, Any]) -> list[str]:
    """The ``$ref`` of ``document`` that name nothing in it. Schemathesis, like a client
    generator, cannot build what such a reference describes: it leaves the request body out
    (or the check undone) without failing."""
    dangling = []
    for reference in _references(document):
        target: Any = document
        for part in reference.removeprefix("#/").split("/"):
            if not isinstance(target, dict) or part not in target:
                dangling.append(reference)
                break
            target = target[part]
    return dangling


def _references(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("$ref"), str):
            yield node["$ref"]
        for value in node.values():
            yield from _references(value)
    elif isinstance(node, list):
        for item in node:
            yield from _references(item)


@dataclass(frozen=True, slots=True)
class Step:
    """One call of a stateful run."""

    operation: str
    """``POST /v1/orders``, …"""
    status: int
    link: str | None
    """The link whose values the call used (``POST /v1/orders -> [201] GetOrder -> …``);
    None for a call that started a scenario, or one that drew its own values instead."""


def run_statefully(
    schema: BaseSchema,
    *,
    checks: list[CheckFunction],
    settings: hypothesis.settings,
    reset: Callable[[], None],
) -> list[Step]:
    """Run schemathesis' state machine over ``schema``'s links: scenarios of calls in which
    each call may take its values from an earlier answer (an order placed, read, then
    cancelled), every answer checked with ``checks``. Returns every step taken, so that a
    test can assert that the chains it cares about were really walked (a link that names
    a wrong field would otherwise leave the run passing on unlinked calls only).

    ``reset`` puts the API's data back as it was before each scenario. Hypothesis replays a
    scenario to confirm and shrink what it found, and checks that the same choices lead to
    the same steps: answers that depend on what earlier scenarios left behind (stock they
    used up, orders they placed) would make it stop with a ``Flaky`` error instead."""
    steps: list[Step] = []

    class CheckedWorkflow(schema.as_state_machine()):  # type: ignore[misc]
        def setup(self) -> None:
            reset()

        def step(self, input: StepInput) -> StepOutput:
            output: StepOutput = super().step(input)
            link = input.transition.id if input.transition and input.is_applied else None
            steps.append(Step(output.case.operation.label, output.response.status_code, link))
            return output

        def validate_response(
            self,
            response: Response,
            case: Case[Any],
            additional_checks: list[CheckFunction] | None = None,
            **kwargs: Any,
        ) -> None:
            case.validate_response(
                response,
                checks=checks,
                additional_checks=additional_checks,
                transport_kwargs=kwargs or None,
                recorder=self.recorder,
            )

    CheckedWorkflow.run(settings=settings)
    return steps
