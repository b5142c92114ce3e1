"""Every error of an app with the problem handlers is a problem document, and is documented
as the app's problem model."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import APIRouter, FastAPI, Header, HTTPException
from pydantic import BaseModel

from shop.web import problems
from shop.web.problems import PROBLEM_JSON, ProblemDocument


class ShopProblem(ProblemDocument):
    sku: str | None = None


class Body(BaseModel):
    quantity: int


router = APIRouter()


@router.post("/things")
async def add(body: Body, key: str = Header(alias="Idempotency-Key")) -> dict[str, int]:
    return {"quantity": body.quantity}


@router.get("/things")
async def list_things() -> list[str]:
    raise HTTPException(status_code=401, detail="a token is required")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()
    app.include_router(router)
    problems.install(app, [router], model=ShopProblem, www_authenticate="Bearer")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://web.test"
    ) as client:
        yield client


async def test_a_missing_header_is_400_named_before_the_wrong_fields(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/things", json={"quantity": "many"})

    assert response.status_code == 400
    assert response.headers["content-type"] == PROBLEM_JSON
    assert response.json()["detail"].startswith("the Idempotency-Key header is required")
    assert {e["field"] for e in response.json()["errors"]} == {
        "header.Idempotency-Key",
        "body.quantity",
    }


async def test_a_401_carries_the_challenge_and_a_405_every_allowed_method(
    client: httpx.AsyncClient,
) -> None:
    refused = await client.get("/things")
    wrong_method = await client.delete("/things")

    assert (refused.status_code, refused.headers["WWW-Authenticate"]) == (401, "Bearer")
    assert refused.json()["detail"] == "a token is required"
    assert (wrong_method.status_code, wrong_method.headers["Allow"]) == (405, "GET, POST")


async def test_error_responses_are_documented_as_the_apps_problem_model(
    client: httpx.AsyncClient,
) -> None:
    schema = (await client.get("/openapi.json")).json()

    response = schema["paths"]["/things"]["post"]["responses"]["422"]
    assert response["content"] == {
        PROBLEM_JSON: {"schema": {"$ref": "#/components/schemas/ShopProblem"}}
    }
    assert "sku" in schema["components"]["schemas"]["ShopProblem"]["properties"]
    assert "HTTPValidationError" not in schema["components"]["schemas"]


class Away(Exception):
    """The database could not be reached."""


class GaveUp(Away):
    """The database gave up waiting for a lock."""


class Broken(Away):
    """A statement failed: a defect."""


@pytest.mark.parametrize(
    ("error", "status", "reason"),
    [
        (Away(), 503, "could not be reached"),
        (GaveUp(), 503, "gave up waiting (for a lock held by another request"),
        (Broken(), 500, None),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else str(value),
)
async def test_a_database_away_or_giving_up_is_503_with_retry_after_and_anything_else_500(
    error: Exception, status: int, reason: str | None
) -> None:
    app = FastAPI()
    failing = APIRouter()

    @failing.get("/fails")
    async def fail() -> None:
        raise error

    app.include_router(failing)
    problems.install(app, [failing], model=ProblemDocument)
    problems.answer_unavailable(
        app,
        [Away],
        unreachable=lambda e: type(e) is Away,
        too_slow=lambda e: isinstance(e, GaveUp),
        what="database",
    )
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://web.test") as client:
        response = await client.get("/fails")

    assert response.status_code == status
    if reason is not None:
        assert response.headers["Retry-After"] == "1"
        assert response.headers["content-type"] == PROBLEM_JSON
        assert reason in response.json()["detail"]
        assert response.json()["detail"].endswith("send the same request again shortly")
