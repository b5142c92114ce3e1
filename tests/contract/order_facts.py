"""What every order event carries (``OrderFacts``), typed as the strict decoder requires it.

Each consumer of an order event starts from these and tightens the fields its handler reads;
the others stay here because the decoder refuses an order event without them.
"""

from __future__ import annotations

from typing import Any, Final

from pact import match

from .wire import CURRENCY_CODE, ORDER_ID

ORDER_NUMBER: Final = "SK-7KQ4-M2XD"
CUSTOMER_EMAIL: Final = "ayu@example.com"
LINE_QUANTITY: Final = 2
LINE_UNIT_PRICE: Final = 89000
TOTAL: Final = LINE_QUANTITY * LINE_UNIT_PRICE


def order_facts(**read_by_the_consumer: Any) -> dict[str, Any]:
    """The facts of one order of one line, every field typed; ``read_by_the_consumer``
    replaces fields with the stricter rules the consumer's handler reads them by."""
    facts: dict[str, Any] = {
        "order_id": match.uuid(ORDER_ID),
        "order_number": match.str(ORDER_NUMBER),
        "customer_id": match.str("cust_42"),
        "customer_email": match.str(CUSTOMER_EMAIL),
        "lines": match.each_like(
            {
                "sku": match.str("SERUM-NIA-30"),
                "name": match.str("Niacinamide 10% Serum 30 ml"),
                "quantity": match.int(LINE_QUANTITY),
                "unit_price": match.int(LINE_UNIT_PRICE),
            },
            min=1,
        ),
        "total": match.int(TOTAL),
        "currency": match.regex("IDR", regex=CURRENCY_CODE),
    }
    unknown = set(read_by_the_consumer) - set(facts)
    if unknown:
        raise ValueError(f"not order facts: {sorted(unknown)}")
    return facts | read_by_the_consumer
