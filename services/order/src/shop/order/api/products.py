"""The catalogue."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException

from shop.order.api.dependencies import ReadOrders, SkuPath
from shop.order.api.problems import Problem
from shop.order.domain.orders import ProductView

router = APIRouter(prefix="/v1/products", tags=["products"])


@router.get("", summary="List the products on sale")
async def list_products(orders: ReadOrders) -> list[ProductView]:
    return await orders.products()


@router.get(
    "/{sku}",
    summary="One product",
    responses={
        404: {"model": Problem, "description": "No such product on sale"},
        422: {"model": Problem, "description": "Not a sku (capitals, digits and dashes)"},
    },
)
async def get_product(sku: SkuPath, orders: ReadOrders) -> ProductView:
    product = await orders.product(sku)
    if product is None:
        raise HTTPException(status_code=404, detail=f"no product {sku!r} on sale")
    return product
