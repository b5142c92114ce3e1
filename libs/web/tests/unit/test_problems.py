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
