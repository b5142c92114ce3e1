from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.order.domain.errors import InvalidTransition
from shop.order.domain.money import line_total, order_total
from shop.order.domain.numbers import ALPHABET, new_order_number
from shop.order.domain.status import ALLOWED, OrderStatus, check_transition

LEGAL = {
    (OrderStatus.PENDING, OrderStatus.PAID),
    (OrderStatus.PENDING, OrderStatus.CANCELLED),
    (OrderStatus.PAID, OrderStatus.FULFILLED),
    *(
        (current, reversed_)
        for current in (
            OrderStatus.PAID,
            OrderStatus.FULFILLED,
            OrderStatus.PARTIALLY_REFUNDED,
        )
        for reversed_ in (
            OrderStatus.PARTIALLY_REFUNDED,
            OrderStatus.REFUNDED,
            OrderStatus.CHARGED_BACK,
        )
    ),
}


@pytest.mark.parametrize("current", list(OrderStatus))
@pytest.mark.parametrize("target", list(OrderStatus))
def test_only_the_legal_transitions_are_allowed(current: OrderStatus, target: OrderStatus) -> None:
    if (current, target) in LEGAL:
        check_transition(current, target)
    else:
        with pytest.raises(InvalidTransition, match=f"{current} cannot become {target}"):
            check_transition(current, target)


def test_every_state_is_in_the_transition_table() -> None:
    assert set(ALLOWED) == set(OrderStatus)


@given(
    lines=st.lists(
        st.tuples(st.integers(1, 100), st.integers(0, 10_000_000)), min_size=1, max_size=50
    )
)
def test_order_total_is_the_sum_of_its_lines_in_integer_rupiah(
    lines: list[tuple[int, int]],
) -> None:
    total = order_total(lines)
    assert isinstance(total, int)
    assert total == sum(q * p for q, p in lines)


@pytest.mark.parametrize(("quantity", "price"), [(0, 1000), (-1, 1000), (1, -5)])
def test_a_line_needs_a_positive_quantity_and_a_non_negative_price(
    quantity: int, price: int
) -> None:
    with pytest.raises(ValueError, match="positive quantity"):
        line_total(quantity, price)


def test_order_numbers_can_be_read_over_the_phone() -> None:
    numbers = {new_order_number() for _ in range(2000)}
    assert len(numbers) == 2000
    for number in numbers:
        assert re.fullmatch(rf"SK-[{ALPHABET}]{{4}}-[{ALPHABET}]{{4}}", number)
    assert not set("01ILOU") & set(ALPHABET)
