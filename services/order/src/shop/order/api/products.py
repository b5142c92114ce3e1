"""The catalogue."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, HTTPException, Path

from shop.order import queries
from shop.order.api.dependencies import Session
from shop.order.api.problems import Problem
from shop.order.api.schemas import SKU_PATTERN
from shop.order.views import ProductView

router = APIRouter(prefix="/v1/products", tags=["products"])

SkuPath = Annotated[
    str,
    Path(min_length=1, max_length=64, pattern=SKU_PATTERN, examples=["SERUM-NIA-30"]),
]


@router.get("", summary="List the products on sale")
async def list_products(session: Session) -> list[ProductView]:
    return await queries.list_products(session)


@router.get(
    "/{sku}",
    summary="One product",
    responses={
        404: {"model": Problem, "description": "No such product on sale"},
        422: {"model": Problem, "description": "Not a sku (capitals, digits and dashes)"},
    },
)
async def get_product(sku: SkuPath, session: Session) -> ProductView:
    product = await queries.get_product(session, sku)
    if product is None:
        raise HTTPException(status_code=404, detail=f"no product {sku!r} on sale")
    return product
