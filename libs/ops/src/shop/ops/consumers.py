"""What each consumer group has done since its worker started, and the state of each
provider's circuit breaker, from the worker's ``/metrics`` (the Prometheus counters and
gauges of :mod:`shop.messaging.metrics`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

import httpx
from prometheus_client.parser import text_string_to_metric_families

from shop.ops.errors import OpsError
from shop.ops.http import TIMEOUT, reaching
from shop.ops.services import shop_services
from shop.ops.settings import OpsSettings

PROCESSED: Final = "messaging_consumed_total"
FAILED: Final = "messaging_failed_total"
RETRIED: Final = "messaging_retried_total"
DEAD_LETTERED: Final = "messaging_dead_lettered_total"
_COUNTERS: Final = (PROCESSED, FAILED, RETRIED, DEAD_LETTERED)
BREAKER_STATE: Final = "messaging_breaker_state"
_BREAKER_STATES: Final = {0: "closed", 1: "half-open", 2: "open"}


@dataclass(frozen=True, slots=True)
class ConsumerCounts:
    group: str
    processed: int
    """Messages handled successfully (redelivered duplicates included)."""
    failed: int
    """Tries that failed, whatever came of them."""
    retried: int
    """Failed tries scheduled for another attempt."""
    dead_lettered: int
    breakers: tuple[str, ...] = ()
    """Its worker's circuit breakers, one per provider: ``"smtp open"``."""


def parse_breakers(metrics_text: str) -> tuple[str, ...]:
    """The state of each provider's circuit breaker in a worker's ``/metrics`` text."""
    found = {}
    for family in _families(metrics_text):
        for sample in family.samples:
            if sample.name == BREAKER_STATE and "provider" in sample.labels:
                state = _BREAKER_STATES.get(int(sample.value), f"state {sample.value:g}")
                found[sample.labels["provider"]] = state
    return tuple(f"{provider} {state}" for provider, state in sorted(found.items()))


def _families(metrics_text: str) -> list[Any]:
    try:
        return list(text_string_to_metric_families(metrics_text))
    except ValueError as error:
        raise OpsError(f"not Prometheus metrics: {error}") from error


def parse_counts(metrics_text: str) -> dict[str, ConsumerCounts]:
    """The counters in a worker's ``/metrics`` text, summed per consumer group."""
    sums: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(_COUNTERS, 0.0))
    for family in _families(metrics_text):
        for sample in family.samples:
            group = sample.labels.get("group")
            if sample.name in _COUNTERS and group is not None:
                sums[group][sample.name] += sample.value
    return {
        group: ConsumerCounts(
            group=group,
            processed=int(values[PROCESSED]),
            failed=int(values[FAILED]),
            retried=int(values[RETRIED]),
            dead_lettered=int(values[DEAD_LETTERED]),
        )
        for group, values in sorted(sums.items())
    }


def counts_of_groups(metrics_text: str, groups: Sequence[str]) -> list[ConsumerCounts]:
    """The counts of each of ``groups`` (a worker's) in its ``/metrics`` text, with the
    worker's breakers; a group that has handled nothing yet counts zeros."""
    found, breakers = parse_counts(metrics_text), parse_breakers(metrics_text)
    return [
        replace(found.get(group) or ConsumerCounts(group, 0, 0, 0, 0), breakers=breakers)
        for group in groups
    ]


async def worker_metrics(client: httpx.AsyncClient, service: str, worker_url: str) -> str:
    url = f"{worker_url.rstrip('/')}/metrics"
    with reaching(f"{service}'s worker", worker_url):
        response = await client.get(url)
    if response.status_code != 200:
        raise OpsError(f"{service}'s worker answered {response.status_code} at {url}")
    return response.text


async def consumer_counts(settings: OpsSettings) -> list[ConsumerCounts]:
    """Every consumer group's counts, from its service's worker, by service then group. A
    group that has handled nothing yet counts zeros."""
    counts = []
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        for service in shop_services():
            if not service.consumers:
                continue
            text = await worker_metrics(client, service.name, settings.worker_url(service.name))
            counts += counts_of_groups(text, service.groups)
    return counts
