"""order-service's problem documents: the facts its refusals carry (the sku that is short,
the status an order is in), and a database that is away or gave up waiting (a lock, a
slow statement) answered as a 503 that says to try again.
Everything else about problem documents is :mod:`shop.web.problems`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import ConfigDict, Field

from shop.database.driver import DATABASE_FAILURES, connection_lost, timed_out
from shop.order.domain.errors import (
    DomainError,
    IdempotencyConflict,
    InsufficientStock,
    InvalidCursor,
    InvalidTransition,
    OrderNotFound,
    ProductChanged,
    UnknownProduct,
)
from shop.web import problems
from shop.web.problems import ProblemDocument, problem


class Problem(ProblemDocument):
    """An RFC 9457 problem document. Besides the standard members it carries the facts a
    program needs, when they apply."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "type": "about:blank",
                    "title": "Insufficient stock",
                    "status": 409,
                    "detail": "only 3 of SERUM-RET-30 left, 5 requested",
                    "sku": "SERUM-RET-30",
                    "requested": 5,
                    "available": 3,
                }
            ]
        }
    )

    sku: str | None = Field(default=None, description="Insufficient stock: the short product.")
    requested: int | None = Field(default=None, description="Insufficient stock.")
    available: int | None = Field(default=None, description="Insufficient stock.")
    skus: list[str] | None = Field(
        default=None, description="Unknown product(s), or those that changed while ordered."
    )
    status_now: str | None = Field(
        default=None, description="Invalid order state: the order's status now."
    )
    idempotency_key: str | None = Field(default=None, description="Idempotency key reused.")


def _domain_problem(error: DomainError) -> JSONResponse:
    extra: dict[str, Any] = {}
    match error:
        case InsufficientStock():
            status, title = 409, "Insufficient stock"
            extra = {"sku": error.sku, "requested": error.requested, "available": error.available}
        case UnknownProduct():
            status, title, extra = 422, "Unknown product", {"skus": error.skus}
        case InvalidTransition():
            status, title, extra = 409, "Invalid order state", {"status_now": error.current}
        case OrderNotFound():
            status, title = 404, "Order not found"
        case IdempotencyConflict():
            status, title, extra = 422, "Idempotency key reused", {"idempotency_key": error.key}
        case InvalidCursor():
            status, title = 400, "Invalid cursor"
        case _:
            status, title = 422, "Request refused"
    return problem(status, title, str(error), **extra)


def install(app: FastAPI, routers: Sequence[APIRouter]) -> None:
    """Answer every error with a problem document, and document it so in the OpenAPI."""
    problems.install(app, routers, model=Problem, www_authenticate="Bearer")

    @app.exception_handler(DomainError)
    async def domain_error(_: Request, error: DomainError) -> JSONResponse:
        return _domain_problem(error)

    @app.exception_handler(ProductChanged)
    async def product_changed(_: Request, error: ProductChanged) -> JSONResponse:
        # Its price or name changed under every attempt: nothing was ordered, and the
        # customer should see the product as it is now before ordering it again.
        return problem(409, "Product changed", str(error), skus=error.skus)

    # Committed or not, the same request with the same Idempotency-Key is safe to send
    # again: it makes the order at most once.
    problems.answer_unavailable(
        app, DATABASE_FAILURES, unreachable=connection_lost, too_slow=timed_out, what="database"
    )
