"""The worker runtime: consumers and the relay in one process, stopped gracefully.

SIGTERM or SIGINT stops fetching; messages in flight get ``drain_timeout`` seconds to
finish and be acknowledged; what did not finish stays unacknowledged and is delivered
again to another worker. Then the process exits 0.
"""

from __future__ import annotations

import asyncio
import functools
import signal
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.messaging.breaker import BreakerState, CircuitBreaker
from shop.messaging.deadletter_collector import DeadLetterCollector
from shop.messaging.deadletter_retention import DeadLetterCleanup, DeadLetterGauges
from shop.messaging.deadletter_table import MemoryDeadLetterStore, PostgresDeadLetterStore
from shop.messaging.deadletters import DeadLetters, DeadLetterStore
from shop.messaging.health import HealthServer, OperatorRoute
from shop.messaging.internal import dead_letter_routes
from shop.messaging.metrics import Metrics
from shop.messaging.middlewares import Middleware
from shop.messaging.pipeline import OutcomeObserver, Pipeline
from shop.messaging.rate_limit import TokenBucket
from shop.messaging.relay import Relay
from shop.messaging.settings import MessagingSettings
from shop.messaging.subscriber import Router
from shop.messaging.transports.base import Consumer, ConsumerOptions, Transport

log = structlog.get_logger("shop.messaging.worker")

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)

Job = Callable[[asyncio.Event], Coroutine[Any, Any, None]]
"""Work that runs beside the consumers, given the event that says the worker is stopping."""


class Worker:
    def __init__(
        self,
        settings: MessagingSettings,
        transport: Transport,
        *,
        routers: Sequence[Router] = (),
        sessions: async_sessionmaker[AsyncSession] | None = None,
        relay: Relay | None = None,
        metrics: Metrics | None = None,
        observers: Sequence[OutcomeObserver] = (),
        outage: Callable[[BaseException], bool] | None = None,
        middlewares: Sequence[Middleware] = (),
        health_host: str = "127.0.0.1",
        health_port: int | None = None,
        routes: Sequence[OperatorRoute] = (),
        operator_token: str | None = None,
        jobs: Sequence[Job] = (),
        on_close: Sequence[Callable[[], Awaitable[None]]] = (),
        dead_letter_store: DeadLetterStore | None = None,
    ) -> None:
        """``outage``: whether a handler's failure says what it needs is away (the
        service's database), which does not spend the message's attempts.
        ``middlewares``: the service's own, run inside
        :func:`~shop.messaging.pipeline.standard_middlewares`, just around each handler
        (inside its transaction, for a transactional subscriber).
        ``routes``: the service's own operator routes on the health port, behind
        ``operator_token`` when given (:class:`~shop.messaging.health.HealthServer`), beside
        the dead letters of its consumers (:func:`~shop.messaging.internal.dead_letter_routes`).
        ``jobs``: what
        runs beside the consumers (a periodic task, say) until the worker stops: each is
        given an event set at the stop and must return soon after. ``on_close``: what to
        close once everything has stopped (the service's database engine, say), in
        order. ``dead_letter_store``: where its consumers' dead letters are kept (by
        default the ``dead_letters`` table of the database of ``sessions``; without one,
        this process's memory)."""
        self.settings = settings
        self.on_close = list(on_close)
        self.transport = transport
        self.metrics = metrics or (relay.metrics if relay else Metrics())
        # One breaker per provider, shared by every subscriber that calls it.
        self.breakers = {
            provider: CircuitBreaker(
                provider,
                settings.breaker,
                time_scale=settings.time_scale,
                on_transition=self.metrics.breaker_changed,
            )
            for provider in sorted({s.provider for r in routers for s in r if s.provider})
        }
        for provider in self.breakers:
            self.metrics.breaker_state.labels(provider).set(int(BreakerState.CLOSED))
        unknown = sorted(set(settings.rate_limits) - set(self.breakers))
        if unknown:  # a misspelt provider would leave the real one unlimited
            raise ValueError(f"rate limits for providers no subscriber names: {unknown}")
        self.rate_limits = {
            provider: TokenBucket(
                rate, on_change=functools.partial(self.metrics.rate_limit_changed, provider)
            )
            for provider, rate in settings.rate_limits.items()
        }
        self.pipelines = [
            Pipeline(
                router,
                sessions=sessions,
                time_scale=settings.time_scale,
                handler_timeout=settings.handler_timeout,
                outage=outage,
                observers=[self.metrics.observe, *observers],
                system=transport.name,
                middlewares=middlewares,
                breakers=self.breakers,
                rate_limits=self.rate_limits,
            )
            for router in routers
        ]
        self.relay = relay
        self.consumers: list[Consumer] = []
        self.dead_letter_store: DeadLetterStore = dead_letter_store or (
            PostgresDeadLetterStore(sessions) if sessions is not None else MemoryDeadLetterStore()
        )
        self.jobs = [*jobs, *self._dead_letter_jobs([router.group for router in routers])]
        self.health = (
            HealthServer(
                self.metrics.registry,
                self.readiness,
                host=health_host,
                port=health_port,
                # Every worker serves its own consumers' dead letters, in the same shape.
                routes=[
                    *routes,
                    *dead_letter_routes(self.dead_letters, [router.group for router in routers]),
                ],
                operator_token=operator_token,
                outage=outage,
            )
            if health_port is not None
            else None
        )
        self._stopping = asyncio.Event()
        self.started = asyncio.Event()

    def dead_letters(self, group: str) -> DeadLetters:
        """The dead letters of the consumer ``group``: kept in this worker's store, carried
        by its transport."""
        return DeadLetters(self.dead_letter_store, self.transport.dead_letter_courier, group)

    def _dead_letter_jobs(self, groups: list[str]) -> list[Job]:
        """Collecting the consumers' dead letters into the store, and their retention."""
        if not groups:
            return []
        kept = self.settings.dead_letters
        collector = DeadLetterCollector(
            self.transport.dead_letter_courier,
            self.dead_letter_store,
            groups,
            interval=kept.collect_interval,
        )
        cleanup = DeadLetterCleanup(
            self.dead_letter_store,
            groups,
            DeadLetterGauges(self.metrics.registry),
            retention_seconds=kept.retention_days * 24 * 3600,
            interval=kept.cleanup_interval,
            batch_size=kept.cleanup_batch_size,
            batch_pause=kept.cleanup_batch_pause,
        )
        return [collector.run, cleanup.run]

    def stop(self) -> None:
        """Begin a graceful stop (what SIGTERM does)."""
        if not self._stopping.is_set():
            log.info("worker stopping: no new messages, draining those in flight")
        self._stopping.set()

    def readiness(self) -> dict[str, bool]:
        parts = {
            f"consumer:{pipeline.group}": consumer.ready
            for pipeline, consumer in zip(self.pipelines, self.consumers, strict=False)
        }
        if self.relay is not None:
            parts["relay"] = self.relay.connected
        parts["running"] = self.started.is_set() and not self._stopping.is_set()
        return parts

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for stop_signal in _STOP_SIGNALS:
            loop.add_signal_handler(stop_signal, self.stop)
        try:
            await self._run()
        finally:
            for stop_signal in _STOP_SIGNALS:
                loop.remove_signal_handler(stop_signal)

    async def _run(self) -> None:
        await self.transport.start()
        try:
            if self.health is not None:
                await self.health.start()
            options = ConsumerOptions(
                max_in_flight=self.settings.max_in_flight,
                drain_timeout=self.settings.drain_timeout,
                outcome_timeout=self.settings.outcome_timeout,
            )
            for pipeline in self.pipelines:
                await self.transport.declare(pipeline)
                self.consumers.append(self.transport.consumer(pipeline, options))
            tasks = [asyncio.create_task(consumer.run()) for consumer in self.consumers]
            if self.relay is not None:
                tasks.append(asyncio.create_task(self.relay.run()))
            tasks += [asyncio.create_task(job(self._stopping)) for job in self.jobs]
            self.started.set()
            log.info("worker started", consumers=len(self.consumers), relay=bool(self.relay))
            await self._until_stopped_or_failed(tasks)
        finally:
            if self.health is not None:
                await self.health.stop()
            await self.transport.close()
            for close in self.on_close:
                await close()
        log.info("worker stopped")

    async def _until_stopped_or_failed(self, tasks: list[asyncio.Task[None]]) -> None:
        stopping = asyncio.create_task(self._stopping.wait())
        done, _ = await asyncio.wait({stopping, *tasks}, return_when=asyncio.FIRST_COMPLETED)
        for consumer in self.consumers:
            consumer.stop()
        if self.relay is not None:
            self.relay.stop()
        stopping.cancel()
        # Every part drains and returns before the transport closes; the first error of a
        # part that failed is raised once all have.
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        if not self._stopping.is_set():
            failed = [t for t in done if t is not stopping]
            raise RuntimeError(f"a worker part stopped on its own: {failed}")
