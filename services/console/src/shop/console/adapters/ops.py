"""The running shop through :mod:`shop.ops`, the operators' library that ``shopctl`` also
uses: the console shows what ``shopctl`` prints, from the same code."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from typing import Protocol

import httpx

from shop.console.domain.errors import NotFound
from shop.console.ports import LetterPage, LetterQuery, Partial
from shop.ops.consumers import ConsumerCounts, counts_of_groups, worker_metrics
from shop.ops.deadletters import (
    DeadLetterEntry,
    DeadLetterQuery,
    NoSuchDeadLetter,
    Purged,
    count,
    page_dead_letters,
    purge_dead_letter,
    redrive_dead_letter,
    redrive_dead_letters,
    show_dead_letter,
)
from shop.ops.errors import OpsError
from shop.ops.http import TIMEOUT
from shop.ops.lag import ConsumerLag, consumer_lag
from shop.ops.mail import CapturedMail, captured, captured_named
from shop.ops.outbox import OutboxStatus, service_outbox_status
from shop.ops.reconciliation import Reconciliation, latest_reconciliation, reconcile
from shop.ops.services import consumer_groups, shop_services
from shop.ops.settings import OpsSettings
from shop.ops.timeline import TimelineEntry, order_timeline
from shop.ops.traces import OrderTrace, order_traces

PAGE_SIZE = 50
"""Dead letters on one page of the console."""


class OnOneLetter(Protocol):
    """Show or redrive one dead letter (:mod:`shop.ops.deadletters`)."""

    def __call__(
        self, settings: OpsSettings, letter_id: str, *, group: str | None = None
    ) -> Awaitable[DeadLetterEntry]: ...


class ShopOperations:
    def __init__(self, settings: OpsSettings) -> None:
        self.settings = settings

    async def outbox(self) -> Partial[OutboxStatus]:
        found: Partial[OutboxStatus] = Partial([])
        for service in shop_services():
            if service.has_outbox:
                try:
                    found.items.append(await service_outbox_status(self.settings, service.name))
                except OpsError as error:
                    found.problems.append(str(error))
        return found

    async def consumer_counts(self) -> Partial[ConsumerCounts]:
        # As shop.ops.consumers.consumer_counts, service by service, so that a worker
        # that does not answer leaves the others' counts on the page.
        found: Partial[ConsumerCounts] = Partial([])
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            for service in shop_services():
                if not service.consumers:
                    continue
                url = self.settings.worker_url(service.name)
                try:
                    text = await worker_metrics(client, service.name, url)
                    found.items.extend(counts_of_groups(text, service.groups))
                except OpsError as error:
                    found.problems.append(str(error))
        return found

    async def reconciliation(self) -> Reconciliation | None:
        return await latest_reconciliation(self.settings)

    async def reconcile(self) -> Reconciliation:
        return await reconcile(self.settings)

    async def consumer_lag(self) -> list[ConsumerLag]:
        return await consumer_lag(self.settings)

    async def groups(self) -> list[str]:
        return [consumer.group for consumer in consumer_groups()]

    async def dead_letters(self, query: LetterQuery, *, cursor: str | None = None) -> LetterPage:
        groups = await self.groups()
        if query.group is not None and query.group not in groups:
            return LetterPage([])
        if cursor is not None and cursor.partition("/")[0] not in (
            [query.group] if query.group else groups
        ):
            raise NotFound("that page's cursor names no group of this filter: start again")
        page = await page_dead_letters(
            self.settings, _ops_query(query), cursor=cursor, limit=PAGE_SIZE
        )
        return LetterPage(page.letters, page.next_cursor)

    async def dead_letter(self, group: str, letter_id: str) -> DeadLetterEntry:
        return await self._one_letter(show_dead_letter, group, letter_id)

    async def redrive(self, group: str, letter_id: str) -> DeadLetterEntry:
        return await self._one_letter(redrive_dead_letter, group, letter_id)

    async def redrive_matching(self, query: LetterQuery, *, per_second: float) -> int:
        if query.group is not None and query.group not in await self.groups():
            return 0
        counts = await redrive_dead_letters(self.settings, _ops_query(query), per_second=per_second)
        return count(counts)

    async def purge(self, group: str, letter_id: str) -> Purged:
        if group not in await self.groups():
            raise NotFound(f"the shop has no consumer group {group!r}")
        try:
            return await purge_dead_letter(self.settings, letter_id, group=group)
        except NoSuchDeadLetter as missing:
            raise NotFound(f"{missing} (redriven or purged already?)") from missing

    async def _one_letter(self, act: OnOneLetter, group: str, letter_id: str) -> DeadLetterEntry:
        # A group the shop does not run, or a letter its worker does not hold, is a 404
        # of the page, not a failure of the shop.
        if group not in await self.groups():
            raise NotFound(f"the shop has no consumer group {group!r}")
        try:
            return await act(self.settings, letter_id, group=group)
        except NoSuchDeadLetter as missing:
            raise NotFound(f"{missing} (redriven or purged already?)") from missing

    async def order_timeline(self, order_id: uuid.UUID) -> list[TimelineEntry]:
        return await order_timeline(self.settings, order_id)

    async def order_traces(self, order_id: uuid.UUID) -> list[OrderTrace] | None:
        return await order_traces(self.settings, order_id)

    async def captured_mail(self) -> list[CapturedMail]:
        return list(reversed(await captured(self.settings)))

    async def captured_mail_named(self, name: str) -> CapturedMail | None:
        return await captured_named(self.settings, name)


def _ops_query(query: LetterQuery) -> DeadLetterQuery:
    return DeadLetterQuery(
        group=query.group,
        message_type=query.message_type,
        error_type=query.error_type,
        contains=query.text,
    )
