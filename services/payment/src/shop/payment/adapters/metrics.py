"""payment-service's own Prometheus metrics, in the worker's registry beside the messaging
ones (its ``/metrics``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class PrometheusPaymentMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.disputed = Counter(
            "payment_notifications_disputed",
            "Notifications that claimed what the gateway's own record does not bear out.",
            ("provider",),
            registry=self.registry,
        )
        self.drift = Gauge(
            "payment_reconciliation_drift",
            "What the last reconciliation found between the gateway's records and the shop's.",
            ("kind",),
            registry=self.registry,
        )

    def notification_disputed(self, provider: str) -> None:
        self.disputed.labels(provider=provider).inc()

    def reconciled(self, drift: dict[str, int]) -> None:
        for kind, count in drift.items():
            self.drift.labels(kind=kind).set(count)
