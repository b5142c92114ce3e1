"""Errors as RFC 9457 problem documents: a status, a title, a detail a person can act on,
and the fields a program needs (the sku that is short, the fields that are wrong)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from shop.order.checkout import IdempotencyConflict
from shop.order.domain.errors import (
    DomainError,
    InsufficientStock,
    InvalidTransition,
    OrderNotFound,
    UnknownProduct,
)
from shop.order.queries import InvalidCursor

PROBLEM_JSON = "application/problem+json"


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str


def problem(status: int, title: str, detail: str, **extra: Any) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


def _domain_problem(error: DomainError) -> JSONResponse:
    if isinstance(error, InsufficientStock):
        return problem(
            409,
            "Insufficient stock",
            str(error),
            sku=error.sku,
            requested=error.requested,
            available=error.available,
        )
    if isinstance(error, UnknownProduct):
        return problem(422, "Unknown product", str(error), skus=error.skus)
    if isinstance(error, InvalidTransition):
        return problem(409, "Invalid order state", str(error), status_now=error.current)
    if isinstance(error, OrderNotFound):
        return problem(404, "Order not found", str(error))
    return problem(422, "Request refused", str(error))


def install(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def domain_error(_: Request, error: DomainError) -> JSONResponse:
        return _domain_problem(error)

    @app.exception_handler(IdempotencyConflict)
    async def idempotency_conflict(_: Request, error: IdempotencyConflict) -> JSONResponse:
        return problem(
            422,
            "Idempotency key reused",
            "this Idempotency-Key was used with a different request body; "
            "use a new key for a new order",
            idempotency_key=str(error),
        )

    @app.exception_handler(InvalidCursor)
    async def invalid_cursor(_: Request, error: InvalidCursor) -> JSONResponse:
        return problem(400, "Invalid cursor", str(error))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        errors = [
            {"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]}
            for e in error.errors()
        ]
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors)
        return problem(422, "Invalid request", detail, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, error: StarletteHTTPException) -> JSONResponse:
        return problem(error.status_code, _title(error.status_code), str(error.detail))


def _title(status: int) -> str:
    from http import HTTPStatus  # noqa: PLC0415

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"
