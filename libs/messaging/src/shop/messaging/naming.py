"""Names of topics and queues as a transport sees them: the contract's names, optionally
behind a namespace so that several stacks (or test runs) can share one broker."""

from __future__ import annotations

from dataclasses import dataclass

from shop.contracts import (
    Contract,
    consumer_queue,
    dead_letter_queue,
    delay_topic,
    message_topic,
)


@dataclass(frozen=True, slots=True)
class Naming:
    namespace: str = ""

    def _scoped(self, name: str) -> str:
        return f"{self.namespace}-{name}" if self.namespace else name

    def topic(self, contract: type[Contract] | str) -> str:
        """Topic of one message type (Kafka topic, SNS topic)."""
        return self._scoped(message_topic(contract))

    def queue(self, group: str) -> str:
        """A consumer's own queue (SQS)."""
        return self._scoped(consumer_queue(group))

    def dead_letters(self, group: str) -> str:
        """A consumer's dead letters (SQS queue or Kafka topic)."""
        return self._scoped(dead_letter_queue(group))

    def delay_topic(self, group: str, seconds: float) -> str:
        """A Kafka delay topic of one consumer; 0 s carries redriven messages."""
        return self._scoped(delay_topic(group, round(seconds)))
