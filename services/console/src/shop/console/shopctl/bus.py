"""What the bus and the outboxes hold: each service's outbox, each group's lag and what its
worker counted."""

from __future__ import annotations

from rich.table import Table

from shop.console.shopctl.terminal import Json, out, run, settings, show_json
from shop.ops.consumers import consumer_counts
from shop.ops.lag import consumer_lag
from shop.ops.outbox import outbox_status
from shop.ops.render import seconds


def counts_table(
    title: str, columns: list[str], rows: list[list[str]], *, labels: int = 1
) -> Table:
    """A table whose first ``labels`` columns name things and the rest count them (right
    aligned)."""
    table = Table(title=title)
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index < labels else "right")
    for row in rows:
        table.add_row(*row)
    return table


def outbox_status_command(as_json: Json = False) -> None:
    """Each service's outbox: rows waiting to be published, the oldest one's age, rows
    scheduled for later, sent rows kept."""
    statuses = run(outbox_status(settings()))
    if as_json:
        show_json(statuses)
        return
    out.print(
        counts_table(
            "outbox",
            ["service", "unsent", "oldest unsent", "scheduled", "sent (kept)"],
            [
                [
                    status.service,
                    str(status.unsent),
                    seconds(status.oldest_unsent_age_seconds) if status.unsent else "-",
                    str(status.scheduled),
                    str(status.sent_kept),
                ]
                for status in statuses
            ],
        )
    )


def lag_command(as_json: Json = False) -> None:
    """Messages waiting for each consumer group, per topic (Kafka) or queue (SQS)."""
    lags = run(consumer_lag(settings()))
    if as_json:
        show_json(lags)
        return
    out.print(
        counts_table(
            "consumer lag",
            ["group", "topic or queue", "waiting"],
            [[lag.group, lag.source, str(lag.waiting)] for lag in lags],
            labels=2,
        )
    )


def consumers_command(as_json: Json = False) -> None:
    """What each consumer group has done since its worker started, and its worker's
    circuit breakers (from /metrics)."""
    counts = run(consumer_counts(settings()))
    if as_json:
        show_json(counts)
        return
    out.print(
        counts_table(
            "consumers",
            ["group", "processed", "failed", "retried", "dead-lettered", "breakers"],
            [
                [
                    count.group,
                    str(count.processed),
                    str(count.failed),
                    str(count.retried),
                    str(count.dead_lettered),
                    ", ".join(count.breakers) or "-",
                ]
                for count in counts
            ],
        )
    )
