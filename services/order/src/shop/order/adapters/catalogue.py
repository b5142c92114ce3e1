"""The development catalogue: a dozen skincare products (prices in Rupiah), seeded where
missing."""

from __future__ import annotations

from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.ext.asyncio import AsyncSession

from shop.order.adapters.tables import products

_SEED: list[tuple[str, str, int, int, str]] = [
    # sku, name, price (IDR), stock, description
    ("CLEANSER-GEL-150", "Gentle Gel Cleanser 150 ml", 79000, 200,
     "Low-pH daily cleanser for every skin type."),
    ("CLEANSER-OIL-200", "Cleansing Oil 200 ml", 129000, 120,
     "Melts sunscreen and make-up; rinses clean."),
    ("TONER-HA-150", "Hyaluronic Hydrating Toner 150 ml", 99000, 150,
     "Five weights of hyaluronic acid."),
    ("SERUM-NIA-30", "Niacinamide 10% Serum 30 ml", 89000, 300,
     "Evens tone and calms redness."),
    ("SERUM-VITC-20", "Vitamin C 15% Serum 20 ml", 159000, 80,
     "Brightens; store away from light."),
    ("SERUM-RET-30", "Retinol 0.3% Night Serum 30 ml", 189000, 60,
     "Start twice a week, at night only."),
    ("ESSENCE-SNAIL-100", "Snail Mucin Essence 100 ml", 139000, 90,
     "Repairs and soothes."),
    ("MOIST-GEL-50", "Oil-Free Gel Moisturiser 50 ml", 109000, 160,
     "Light hydration for humid days."),
    ("MOIST-CERA-50", "Ceramide Barrier Cream 50 ml", 149000, 110,
     "Rich cream for a damaged barrier."),
    ("SUN-SPF50-50", "Sunscreen SPF 50 PA++++ 50 ml", 72000, 400,
     "No white cast; reapply every two hours."),
    ("MASK-CLAY-100", "Kaolin Clay Mask 100 ml", 95000, 70,
     "Once a week for oily zones."),
    ("LIP-BALM-10", "Ceramide Lip Balm 10 g", 39000, 250,
     "Overnight lip repair."),
]  # fmt: skip

SEED_PRODUCTS: list[dict[str, object]] = [
    {"sku": sku, "name": name, "price": price, "stock": stock, "description": description}
    for sku, name, price, stock, description in _SEED
]


async def seed_catalogue(session: AsyncSession) -> int:
    """Insert the development products that are missing; existing ones are left alone."""
    result = await session.execute(
        insert(products).values(SEED_PRODUCTS).on_conflict_do_nothing().returning(products.c.sku)
    )
    return len(result.all())
