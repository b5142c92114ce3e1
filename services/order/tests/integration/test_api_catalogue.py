"""The HTTP API on a real database: the catalogue lists the seeded products, one product
is read by its SKU, and an unknown or malformed SKU is a problem document naming it."""

from __future__ import annotations

import httpx
import pytest

from shop.order.adapters.catalogue import SEED_PRODUCTS

from .api_helpers import Sessions, assert_problem, stock_of


async def test_the_catalogue_lists_the_twelve_seeded_products(
    client: httpx.AsyncClient, sessions: Sessions
) -> None:
    response = await client.get("/v1/products")
    assert response.status_code == 200
    listed = response.json()
    assert len(listed) == 12
    assert [p["sku"] for p in listed] == sorted(str(p["sku"]) for p in SEED_PRODUCTS)
    serum = next(p for p in listed if p["sku"] == "SERUM-NIA-30")
    assert serum == {
        "sku": "SERUM-NIA-30",
        "name": "Niacinamide 10% Serum 30 ml",
        "description": "Evens tone and calms redness.",
        "price": 89000,
        "currency": "IDR",
        "in_stock": await stock_of(sessions, "SERUM-NIA-30"),
    }


async def test_one_product_by_sku(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/products/SUN-SPF50-50")
    assert response.status_code == 200
    assert response.json()["price"] == 72000


async def test_an_unknown_sku_is_404_naming_it(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/products/NO-SUCH-CREAM")
    assert_problem(response, 404, "NO-SUCH-CREAM")


@pytest.mark.parametrize(
    "sku", ["serum-nia-30", "nul%00byte", "%F0%9F%A7%B4", "-LEADING-DASH", "X" * 65]
)
async def test_a_path_that_is_no_sku_is_422_naming_the_path_parameter(
    client: httpx.AsyncClient, sku: str
) -> None:
    response = await client.get(f"/v1/products/{sku}")
    assert_problem(response, 422, "path.sku")
