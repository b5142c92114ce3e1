"""Properties of the checkout's arithmetic over generated lines: totals are exact integers of
Rupiah at any size (never through a float), do not depend on the order of the lines, add
up across baskets, and any line without a positive quantity or with a negative price is
refused wherever it stands."""

from __future__ import annotations

from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from shop.order.domain.money import line_total, order_total

# Past 2**53 a float cannot hold every integer: a total that went through one is off.
quantities = st.integers(min_value=1, max_value=10**6)
prices = st.integers(min_value=0, max_value=10**18)
lines = st.tuples(quantities, prices)
baskets = st.lists(lines, max_size=30)
bad_lines = st.one_of(
    st.tuples(st.integers(max_value=0), prices),
    st.tuples(quantities, st.integers(max_value=-1)),
)


@given(quantities, prices)
def test_a_line_total_is_the_exact_integer_product(quantity: int, price: int) -> None:
    total = line_total(quantity, price)

    assert type(total) is int
    assert total == quantity * price


@given(baskets)
def test_an_order_total_is_the_exact_sum_of_its_lines(basket: list[tuple[int, int]]) -> None:
    total = order_total(basket)

    assert type(total) is int
    assert total == sum(quantity * price for quantity, price in basket)
    assert total >= 0


@given(baskets, st.randoms(use_true_random=False))
def test_an_order_total_does_not_depend_on_the_order_of_its_lines(
    basket: list[tuple[int, int]], random: Random
) -> None:
    shuffled = list(basket)
    random.shuffle(shuffled)

    assert order_total(shuffled) == order_total(basket)


@given(baskets, baskets)
def test_the_total_of_two_baskets_together_is_the_sum_of_their_totals(
    first: list[tuple[int, int]], second: list[tuple[int, int]]
) -> None:
    assert order_total(first + second) == order_total(first) + order_total(second)


@given(baskets, bad_lines, st.data())
def test_a_bad_line_anywhere_in_the_basket_is_refused(
    basket: list[tuple[int, int]], bad: tuple[int, int], data: st.DataObject
) -> None:
    at = data.draw(st.integers(min_value=0, max_value=len(basket)), label="at")

    with pytest.raises(ValueError, match="positive quantity and a non-negative price"):
        order_total([*basket[:at], bad, *basket[at:]])
