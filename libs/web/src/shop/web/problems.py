"""Errors as RFC 9457 problem documents, the same in every service: a status, a title, a
``detail`` a person can act on, and the fields a program needs. A service installs these
handlers for what every API meets (invalid requests, HTTP errors, 405 with ``Allow``), adds
its own for its domain errors, and documents every 4xx/5xx in its OpenAPI as its problem
model."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from http import HTTPStatus
from typing import Any

import structlog
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Route

log = structlog.get_logger("shop.web")

PROBLEM_JSON = "application/problem+json"


class FieldProblem(BaseModel):
    field: str = Field(description="Where: `body.items.0.quantity`, `query.limit`, …")
    message: str


class ProblemDocument(BaseModel):
    """The members every problem document has; a service's own model adds the facts its
    refusals carry."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[FieldProblem] | None = Field(
        default=None, description="Invalid request: each wrong field and what is wrong."
    )


def problem(
    status: int,
    title: str,
    detail: str,
    *,
    headers: Mapping[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail, **extra}
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


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


def answer_unavailable(
    app: FastAPI,
    errors: Sequence[type[Exception]],
    *,
    unreachable: Callable[[Exception], bool],
    what: str,
    too_slow: Callable[[Exception], bool] = lambda _: False,
) -> None:
    """Answer ``errors`` that say ``what`` (the database, say) could not be reached, or
    was ``too_slow`` (it gave up waiting for a lock, or on a statement), with a 503 and
    ``Retry-After``: the request is safe to send again shortly. Any other of ``errors`` is
    what it is, a 500."""

    async def unavailable(_: Request, error: Exception) -> JSONResponse:
        if unreachable(error):
            log.warning(f"{what} unavailable", error=repr(error))
            detail = f"the {what} could not be reached; send the same request again shortly"
        elif too_slow(error):
            log.warning(f"{what} too slow", error=repr(error))
            detail = (
                f"the {what} gave up waiting (for a lock held by another request, or on a "
                "slow statement); send the same request again shortly"
            )
        else:
            raise error
        return problem(503, "Service unavailable", detail, headers={"Retry-After": "1"})

    for error in errors:
        app.add_exception_handler(error, unavailable)


def install(
    app: FastAPI,
    routers: Sequence[APIRouter],
    *,
    model: type[BaseModel],
    www_authenticate: str | None = None,
) -> None:
    """Answer invalid requests and HTTP errors with problem documents, and document every
    error response of ``app`` as ``model``. ``routers`` are the app's routers, to name the
    methods a path allows; ``www_authenticate`` is the challenge a 401 carries."""
    routes = [route for router in routers for route in router.routes]

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, error: RequestValidationError) -> JSONResponse:
        return _invalid_request(error)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException) -> JSONResponse:
        headers = dict(error.headers or {})
        if error.status_code == 405:
            headers["Allow"] = _allowed_methods(request, routes) or headers.get("Allow", "")
        if error.status_code == 401 and www_authenticate:
            headers.setdefault("WWW-Authenticate", www_authenticate)
        return problem(
            error.status_code, _title(error.status_code), str(error.detail), headers=headers
        )

    app.openapi = _documenting_problems(app.openapi, model)  # type: ignore[method-assign]


def _documenting_problems(
    openapi: Callable[[], dict[str, Any]], model: type[BaseModel]
) -> Callable[[], dict[str, Any]]:
    """FastAPI documents error responses as ``application/json`` and its validation errors
    in its own shape; the API answers both as problem documents, so say that."""

    def document() -> dict[str, Any]:
        schema = openapi()  # built once, then cached by FastAPI: rewriting it again is a no-op
        name = model.__name__
        problem_schema = {"$ref": f"#/components/schemas/{name}"}
        for operations in schema.get("paths", {}).values():
            for operation in operations.values():
                for status, response in operation.get("responses", {}).items():
                    if status[0] in "45":
                        response["content"] = {PROBLEM_JSON: {"schema": problem_schema}}
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        components.pop("HTTPValidationError", None)
        components.pop("ValidationError", None)
        if name not in components:
            generated = model.model_json_schema(ref_template="#/components/schemas/{model}")
            components.update(generated.pop("$defs", {}))
            components[name] = generated
        return schema

    return document
