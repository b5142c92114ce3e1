"""The demo's load generator, in its parts that need no running shop: the e-mail latency an
operator types, and the percentiles of its summary."""

from __future__ import annotations

import pytest

from shop.devstack.load import Percentiles, parse_latency
from shop.ops.errors import OpsError


@pytest.mark.parametrize(
    ("text", "bounds"), [("0.3-3", (0.3, 3.0)), ("1", (1.0, 1.0)), (" 0-0.5 ", (0.0, 0.5))]
)
def test_an_email_latency_is_a_range_of_seconds(text: str, bounds: tuple[float, float]) -> None:
    assert parse_latency(text) == bounds


@pytest.mark.parametrize("text", ["fast", "3-1", "-1-2", ""])
def test_a_latency_that_is_no_range_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(OpsError, match="latency"):
        parse_latency(text)


def test_percentiles_are_taken_by_nearest_rank() -> None:
    values = [float(n) for n in range(1, 101)]
    assert Percentiles.of(values) == Percentiles(count=100, p50=50, p95=95, p99=99, max=100)
    assert Percentiles.of([0.2]) == Percentiles(count=1, p50=0.2, p95=0.2, p99=0.2, max=0.2)
    assert Percentiles.of([]) is None
