"""Errors as RFC 9457 problem documents: a status, a title, a detail a person can act on,
and the fields a program needs (the sku that is short, the fields that are wrong)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from http import HTTPStatus
from typing import Any

import structlog
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Route

from shop.order.adapters.driver import CONNECTION_LOST
from shop.order.domain.errors import (
    DomainError,
    IdempotencyConflict,
    InsufficientStock,
    InvalidCursor,
    InvalidTransition,
    OrderNotFound,
    UnknownProduct,
)

log = structlog.get_logger("shop.order.api")

PROBLEM_JSON = "application/problem+json"


class FieldProblem(BaseModel):
    field: str = Field(description="Where: `body.items.0.quantity`, `query.limit`, …")
    message: str


class Problem(BaseModel):
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

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[FieldProblem] | None = Field(
        default=None, description="Invalid request: each wrong field and what is wrong."
    )
    sku: str | None = Field(default=None, description="Insufficient stock: the short product.")
    requested: int | None = Field(default=None, description="Insufficient stock.")
    available: int | None = Field(default=None, description="Insufficient stock.")
    skus: list[str] | None = Field(default=None, description="Unknown product(s).")
    status_now: str | None = Field(
        default=None, description="Invalid order state: the order's status now."
    )
    idempotency_key: str | None = Field(default=None, description="Idempotency key reused.")


def problem(
    status: int,
    title: str,
    detail: str,
    *,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    all_headers = dict(headers or {})
    if status == 401:
        all_headers.setdefault("WWW-Authenticate", "Bearer")
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=all_headers)


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


def _database_unavailable(error: Exception) -> JSONResponse:
    # Committed or not, the same request with the same Idempotency-Key is safe to send
    # again: it makes the order at most once.
    log.warning("database unavailable", error=repr(error))
    return problem(
        503,
        "Service unavailable",
        "the database could not be reached; send the same request again shortly",
        headers={"Retry-After": "1"},
    )


def _invalid_request(error: RequestValidationError) -> JSONResponse:
    """422 names every wrong field; a missing required header is a malformed request (400)
    and is named first."""
    errors: list[dict[str, str]] = []
    missing_headers: list[str] = []
    for e in error.errors():
        location = [str(part) for part in e["loc"]]
        if e["type"] == "missing" and len(location) == 2 and location[0] == "header":
            missing_headers.append(location[1])
        errors.append({"field": ".".join(location), "message": e["msg"]})
    messages = [f"the {name} header is required" for name in missing_headers]
    messages += [
        f"{e['field']}: {e['message']}"
        for e in errors
        if e["field"] not in {f"header.{name}" for name in missing_headers}
    ]
    if missing_headers:
        return problem(400, "Missing header", "; ".join(messages), errors=errors)
    return problem(422, "Invalid request", "; ".join(messages), errors=errors)


def _allowed_methods(request: Request, routes: Sequence[BaseRoute]) -> str:
    """Every method some route serves at this path. Starlette's 405 names only the methods
    of the first route whose path matched, and GET and POST /v1/orders are two routes."""
    path = request.scope["path"]
    root_path = request.scope.get("root_path", "")
    if root_path and path.startswith(root_path):
        path = path[len(root_path) :]
    methods: set[str] = set()
    for route in routes:
        if isinstance(route, Route) and route.methods and route.path_regex.match(path):
            methods |= route.methods
    return ", ".join(sorted(methods))


def _title(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Error"


def install(app: FastAPI, routers: Sequence[APIRouter]) -> None:
    """Answer every error with a problem document, and document it so in the OpenAPI.
    ``routers`` are the app's routers, to name the methods a path allows."""
    routes = [route for router in routers for route in router.routes]

    @app.exception_handler(DomainError)
    async def domain_error(_: Request, error: DomainError) -> JSONResponse:
        return _domain_problem(error)

    async def connection_lost(_: Request, error: Exception) -> JSONResponse:
        return _database_unavailable(error)

    for lost in CONNECTION_LOST:
        app.add_exception_handler(lost, connection_lost)

    @app.exception_handler(DBAPIError)
    async def database_error(_: Request, error: DBAPIError) -> JSONResponse:
        if not error.connection_invalidated:
            raise error  # a statement failed: a defect, answered as the 500 it is
        return _database_unavailable(error)

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        return _invalid_request(error)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        headers = dict(error.headers or {})
        if error.status_code == 405:
            headers["Allow"] = _allowed_methods(request, routes) or headers.get("Allow", "")
        return problem(
            error.status_code, _title(error.status_code), str(error.detail), headers=headers
        )

    app.openapi = _documenting_problems(app.openapi)  # type: ignore[method-assign]


def _documenting_problems(openapi: Callable[[], dict[str, Any]]) -> Callable[[], dict[str, Any]]:
    """FastAPI documents error responses as ``application/json`` and its validation errors
    in its own shape; the API answers both as problem documents, so say that."""

    def document() -> dict[str, Any]:
        schema = openapi()  # built once, then cached by FastAPI: rewriting it again is a no-op
        problem_schema = {"$ref": "#/components/schemas/Problem"}
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                for status, response in operation.get("responses", {}).items():
                    if status[0] in "45":
                        response["content"] = {PROBLEM_JSON: {"schema": problem_schema}}
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        if "Problem" not in components:
            generated = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
            components.update(generated.pop("$defs", {}))
            components["Problem"] = generated
        return schema

    return document
