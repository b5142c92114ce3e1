"""What an SQS consumer needs on AWS: its queue and its dead-letter queue, and the
attributes and policies that tie them to each other and to the SNS topics. The transport
declares them; the consumer and the dead-letter store look them up by group."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SqsQueues:
    """The queues of one consumer."""

    name: str
    url: str
    arn: str
    dead_letters_url: str
    dead_letters_arn: str


QueueLookup = Callable[[str], Awaitable[SqsQueues]]
"""The queues of a consumer, by its group (the transport's ``queues_of``)."""


def queue_attributes(
    queues: SqsQueues, topic_arns: Sequence[str], *, visibility_timeout: int, max_attempts: int
) -> dict[str, str]:
    """The consumer's queue: its visibility timeout, its dead-letter queue after
    ``max_attempts`` receives (a safety net, see the package), the topics that may send."""
    attributes = {
        "VisibilityTimeout": str(visibility_timeout),
        "RedrivePolicy": json.dumps(
            {"deadLetterTargetArn": queues.dead_letters_arn, "maxReceiveCount": max_attempts}
        ),
    }
    if topic_arns:
        attributes["Policy"] = _allow_topics(queues.arn, topic_arns)
    return attributes


def dead_letter_queue_attributes(queues: SqsQueues, *, retention_seconds: int) -> dict[str, str]:
    """The consumer's dead-letter queue: letters wait there ``retention_seconds`` (SQS
    allows 60 s to 14 days) for the worker to collect them into its store."""
    return {
        "MessageRetentionPeriod": str(min(max(retention_seconds, 60), 14 * 24 * 3600)),
        # Only this consumer's queue dead-letters here.
        "RedriveAllowPolicy": json.dumps(
            {"redrivePermission": "byQueue", "sourceQueueArns": [queues.arn]}
        ),
    }


def _allow_topics(queue_arn: str, topic_arns: Sequence[str]) -> str:
    """Queue policy letting exactly these SNS topics deliver to the queue."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "shop-topics",
                    "Effect": "Allow",
                    "Principal": {"Service": "sns.amazonaws.com"},
                    "Action": "sqs:SendMessage",
                    "Resource": queue_arn,
                    "Condition": {"ArnEquals": {"aws:SourceArn": list(topic_arns)}},
                }
            ],
        }
    )
