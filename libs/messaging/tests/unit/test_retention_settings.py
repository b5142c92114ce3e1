"""A retention that would let a redelivered message be handled twice, or delete rows just
written, is refused at start-up, saying which guarantee it would break; durations are read
as ISO 8601 or seconds."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import ValidationError

from shop.messaging.retention import (
    LONGEST_REDELIVERY,
    InboxRetentionSettings,
    TableRetention,
    deleting,
)


def test_the_default_inbox_retention_outlives_the_longest_redelivery() -> None:
    assert InboxRetentionSettings().inbox >= LONGEST_REDELIVERY


def test_an_inbox_retention_shorter_than_the_longest_redelivery_is_refused_with_the_rule() -> None:
    with pytest.raises(ValidationError) as refused:
        InboxRetentionSettings(inbox=LONGEST_REDELIVERY - timedelta(seconds=1))
    message = str(refused.value)
    assert "inbox" in message
    assert "must be at least 14 days" in message
    assert "redelivery is handled twice" in message


def test_an_inbox_retention_of_exactly_the_longest_redelivery_is_accepted() -> None:
    assert InboxRetentionSettings(inbox=LONGEST_REDELIVERY).inbox == LONGEST_REDELIVERY


@pytest.mark.parametrize(
    ("given", "meant"), [("P30D", timedelta(days=30)), (90 * 24 * 3600, timedelta(days=90))]
)
def test_a_retention_is_read_as_an_iso_duration_or_seconds(given: object, meant: timedelta) -> None:
    assert InboxRetentionSettings.model_validate({"inbox": given}).inbox == meant


@pytest.mark.parametrize(
    "changed", [{"interval": 0}, {"batch_size": 0}, {"batch_pause": -0.1}, {"inbox": "soon"}]
)
def test_a_cleanup_that_could_not_run_is_refused(changed: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        InboxRetentionSettings.model_validate(changed)


@pytest.mark.parametrize("retention", [timedelta(0), timedelta(days=-7)])
def test_a_table_retention_whose_cutoff_would_reach_rows_just_written_is_refused(
    retention: timedelta,
) -> None:
    with pytest.raises(ValueError, match="retention must be positive"):
        TableRetention("inbox", deleting("inbox", "processed_at"), retention)


def test_a_table_retention_of_any_positive_length_is_accepted() -> None:
    kept = timedelta(seconds=1)
    assert TableRetention("inbox", deleting("inbox", "processed_at"), kept).retention == kept
