"""Prometheus metrics of consumers and the relay, in a registry of the worker's own (so that
tests and several workers in one process do not collide)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from shop.messaging.breaker import BreakerState
from shop.messaging.outcome import Ack, DeadLetter, Retry
from shop.messaging.pipeline import OutcomeRecord

_LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        labels = ("group", "subscriber", "message_type")
        self.consumed = Counter(
            "messaging_consumed",
            "Messages handled successfully (duplicates included).",
            (*labels, "duplicate"),
            registry=self.registry,
        )
        self.failed = Counter(
            "messaging_failed",
            "Handler tries that failed, by error type.",
            (*labels, "error_type"),
            registry=self.registry,
        )
        self.retried = Counter(
            "messaging_retried",
            "Failed tries scheduled for another attempt.",
            labels,
            registry=self.registry,
        )
        self.dead_lettered = Counter(
            "messaging_dead_lettered",
            "Messages given up on and kept as dead letters.",
            (*labels, "error_type"),
            registry=self.registry,
        )
        self.handler_seconds = Histogram(
            "messaging_handler_duration_seconds",
            "Time from delivery to outcome, per try.",
            labels,
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.relay_published = Counter(
            "messaging_relay_published",
            "Outbox rows published.",
            registry=self.registry,
        )
        self.relay_publish_failures = Counter(
            "messaging_relay_publish_failures",
            "Relay batches that failed to publish completely.",
            registry=self.registry,
        )
        self.relay_backlog = Gauge(
            "messaging_relay_backlog",
            "Outbox rows not yet published.",
            registry=self.registry,
        )
        self.relay_oldest_unsent_age = Gauge(
            "messaging_relay_oldest_unsent_age_seconds",
            "Age of the oldest unpublished outbox row (0 when none).",
            registry=self.registry,
        )
        self.relay_lag = Histogram(
            "messaging_relay_lag_seconds",
            "Per published batch: from its oldest row's insert to its publication.",
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.relay_cleanup_deleted = Counter(
            "messaging_relay_cleanup_deleted",
            "Sent outbox rows deleted by the retention cleanup.",
            registry=self.registry,
        )
        self.relay_leader = Gauge(
            "messaging_relay_leader",
            "1 while this relay holds the outbox lock and publishes.",
            registry=self.registry,
        )

        self.breaker_state = Gauge(
            "messaging_breaker_state",
            "Each provider's circuit breaker: 0 closed, 1 half-open (a probe out), 2 open.",
            ("provider",),
            registry=self.registry,
        )
        self.breaker_transitions = Counter(
            "messaging_breaker_transitions",
            "Changes of each provider's circuit breaker, by the state it went to.",
            ("provider", "state"),
            registry=self.registry,
        )
        self.rate_limit = Gauge(
            "messaging_rate_limit_per_second",
            "Each provider's rate limit now, in calls a second (per process).",
            ("provider",),
            registry=self.registry,
        )
        self._acked: dict[tuple[str, str, str, bool], tuple[Histogram, Counter]] = {}
        """The handler-time and consumed children of each subscriber's acknowledgements,
        looked up once (a label lookup takes a lock and hashes its values every time)."""

    def rate_limit_changed(self, provider: str, rate: float) -> None:
        """A rate limit's calls a second now (below its setting after the provider said
        the shop was too fast)."""
        self.rate_limit.labels(provider).set(rate)

    def breaker_changed(self, provider: str, state: BreakerState) -> None:
        """A :data:`~shop.messaging.breaker.Transition`."""
        self.breaker_state.labels(provider).set(int(state))
        self.breaker_transitions.labels(provider, state.name.lower()).inc()

    def observe(self, record: OutcomeRecord) -> None:
        """An :data:`~shop.messaging.pipeline.OutcomeObserver`."""
        labels = (record.group, record.subscriber or "", record.message_type or "")
        outcome = record.outcome
        if isinstance(outcome, Ack):
            seconds, consumed = self._acked_children(labels, duplicate=outcome.duplicate)
            seconds.observe(record.seconds)
            consumed.inc()
            return
        self.handler_seconds.labels(*labels).observe(record.seconds)
        self.failed.labels(*labels, outcome.failure.error_type).inc()
        if isinstance(outcome, Retry):
            self.retried.labels(*labels).inc()
        elif isinstance(outcome, DeadLetter):
            self.dead_lettered.labels(*labels, outcome.failure.error_type).inc()

    def _acked_children(
        self, labels: tuple[str, str, str], *, duplicate: bool
    ) -> tuple[Histogram, Counter]:
        key = (*labels, duplicate)
        children = self._acked.get(key)
        if children is None:
            children = (
                self.handler_seconds.labels(*labels),
                self.consumed.labels(*labels, str(duplicate).lower()),
            )
            self._acked[key] = children
        return children
