"""What goes wrong while the load runs, one blow at a time: a worker or the leading relay
killed (SIGKILL) or stopped (SIGTERM), an API killed while a request is in flight, the
broker frozen (SIGSTOP, then SIGCONT), Postgres stopped and started again, the e-mail
provider hanging on a message or dropping the line after taking one. Every ended replica is
started again after a moment, as an orchestrator restarts a pod; a replica that exits by
itself (a worker that gives up on a broker that stopped answering) is restarted the same
way, and counted."""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import Any, Final

import asyncpg

from shop.simulators.mail import ProviderFaults, ProviderJournal

from .evidence import BlowSite, LogSlice, database_restart
from .invariants import DATABASE_STEP_WITHIN, unsent
from .load import LoadFigures
from .shop import API_KINDS, RELAY_KINDS, WORKER_KINDS, ChaosShop, Replica

SENDER_KIND: Final = "notification-worker"
"""The kind whose SIGKILL may come between an e-mail's send and its record."""
RESTART_AFTER: Final = 1.0
"""How long a killed replica stays down: an orchestrator's restart, roughly."""
DATABASE_DOWN: Final = 7.0
"""How long Postgres stays stopped: a restart, or a failover, as a process sees it."""
_ON_THE_WIRE: Final = 0.5
"""Seconds for a request begun after its API froze to be sent (the load's loop may be
slow under fire); frozen, the API cannot answer it meanwhile."""
PROVIDER_MISHAP_WITHIN: Final = 120.0
"""How long the provider is left misbehaving for the mishap to meet a message: e-mail may
pause for a while under fire (the notification workers' group rebalancing after kills); the
table tells how long it took."""


@dataclass(frozen=True)
class Blow:
    at: float
    """Seconds since the run began."""
    what: str
    target: str
    detail: str = ""


@dataclass
class ChaosLog:
    blows: list[Blow] = field(default_factory=list)
    self_exits: Counter[str] = field(default_factory=Counter)
    backlog_before_freeze: int = 0
    backlog_peak_in_freeze: int = 0
    freeze_seconds: float = 0.0
    api_kills: list[tuple[str, int]] = field(default_factory=list)
    """Each API killed mid-request, and how many requests died with it."""
    sigterm_exits: list[tuple[str, int | None]] = field(default_factory=list)
    """Each replica stopped with SIGTERM and its exit code (0: it drained and stopped)."""
    send_sites: list[BlowSite] = field(default_factory=list)
    """Blows that may come between an e-mail's send and its record (a notification worker
    killed, Postgres stopped), with the logs to read what they interrupted: only these and
    the provider's dropped replies may explain a second copy of an e-mail."""
    database_down: float = 0.0
    """Seconds from the stop's start to Postgres taking connections again."""
    database_stopping: float = 0.0
    """Seconds the stop took (a fast shutdown: its checkpoint, on a loaded machine)."""
    database_starting: float = 0.0
    """Seconds from the start to Postgres taking connections (its recovery, then ready)."""
    database_killed: bool = False
    """Whether its fast shutdown outlasted the blow's limit and it was ended as a crash."""
    database_away: tuple[float, float] | None = None
    """When Postgres was stopped and when it took connections again (wall-clock times)."""
    provider_mishaps: Counter[str] = field(default_factory=Counter)
    """What the provider did on purpose (``hung``, ``dropped reply``), as its journal says."""
    hung_sends: list[str] = field(default_factory=list)
    """The Message-IDs of the e-mails the provider hung on."""
    handler_timeouts: int = 0
    """Deliveries the notification workers gave up at their handler's timeout."""

    @property
    def kills(self) -> int:
        return sum(blow.what.startswith("kill -9") for blow in self.blows)

    def counts(self) -> Counter[str]:
        return Counter(blow.what for blow in self.blows)


def schedule(kills: int, seed: int) -> list[str]:
    """The blows of a run, in order: ``kills`` SIGKILLs that reach every kind (each worker
    kind, the leading relay of each service that sends, each API mid-request) before any
    repeats, a SIGTERM after every fourth kill, one broker freeze half way, one Postgres
    restart, the provider hanging on a message, and dropping the line after taking one."""
    chooser = random.Random(seed)
    kinds = [
        *(f"kill -9 {kind}" for kind in WORKER_KINDS),
        *(f"kill -9 relay-leader {kind}" for kind in RELAY_KINDS),
        *(f"kill -9 {kind} mid-request" for kind in API_KINDS),
    ]
    blows = [kinds[n] if n < len(kinds) else chooser.choice(kinds) for n in range(kills)]
    chooser.shuffle(blows)
    # An API is killed mid-request only while checkouts flow: the blows run late behind a
    # freeze or a restart, and the last ones may land once the load has placed its orders.
    late = [n for n in range(len(blows) * 2 // 3, len(blows)) if blows[n].endswith("mid-request")]
    for n in reversed(late):
        blows.insert(chooser.randrange(len(blows) // 2), blows.pop(n))
    for position in range(len(blows) - 1, 0, -1):
        if position % 4 == 0:
            blows.insert(position, f"sigterm {chooser.choice(WORKER_KINDS)}")
    # Only checkouts add to the outbox while the broker is frozen: the load keeps its last
    # ones for the freeze (Load.hold_the_last), however late the blows before it run.
    blows.insert(len(blows) // 2, "freeze broker")
    blows.insert(len(blows) // 4, "provider hangs")
    blows.insert(len(blows) * 3 // 4, "restart postgres")
    blows.insert(len(blows) * 5 // 6, "provider drops a reply")
    return blows


class Monkey:
    def __init__(
        self,
        shop: ChaosShop,
        figures: LoadFigures,
        order_database_url: str,
        *,
        freeze_seconds: float,
        email_faults: ProviderFaults,
        seed: int,
    ) -> None:
        self.shop = shop
        self.email_faults = email_faults
        self.figures = figures
        self.order_database_url = order_database_url
        self.freeze_seconds = freeze_seconds
        self.chooser = random.Random(seed)
        self.log = ChaosLog()
        self.began = time.monotonic()
        self._busy: set[str] = set()
        """Replicas a blow is ending or starting again: no other blow or restart touches them."""
        self._tasks: list[asyncio.Task[None]] = []
        self.broker_frozen = asyncio.Event()
        """Set once the broker is frozen (the load's last checkouts wait for it)."""

    def _note(self, what: str, target: str, detail: str = "") -> None:
        self.log.blows.append(Blow(round(time.monotonic() - self.began, 1), what, target, detail))

    async def run(self, blows: list[str], progress: Callable[[], float]) -> None:
        """Deal the blows spread over the load's checkouts (blow ``i`` of ``n`` once a share
        ``(i + 1) / (n + 1)`` of them has left), restarting what ends meanwhile: each lands
        while checkouts and payments still flow, however the shop's pace varies."""
        keeper = asyncio.create_task(self._keep_replicas_up())
        try:
            for number, blow in enumerate(blows, start=1):
                while progress() < number / (len(blows) + 1):  # noqa: ASYNC110
                    await asyncio.sleep(0.1)
                await self._deal(blow)
            # Each restart done, and any failure of one raised here, not lost.
            await asyncio.gather(*self._tasks)
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper  # a failure of its own is raised here
            for task in self._tasks:  # left over when a blow failed: the failure is that
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _deal(self, blow: str) -> None:
        if blow in {"freeze broker", "restart postgres"}:
            # Every SIGTERM's drain done first: a frozen broker (or a database away) would
            # hold it up past its timeout, and the run would blame the drain.
            await asyncio.gather(*self._tasks)
            await (self._freeze() if blow == "freeze broker" else self._restart_database())
            return
        if blow == "provider hangs":
            await self._provider_mishap("hung", replace(self.email_faults, once="hung"))
            return
        if blow == "provider drops a reply":
            await self._provider_mishap(
                "dropped reply", replace(self.email_faults, once="dropped reply")
            )
            return
        verb, _, rest = blow.partition(" ")
        if verb == "sigterm":
            replica = self.chooser.choice(await self._idle(rest))
            # A graceful stop is asked of a worker that runs: one still importing its code
            # has no handler yet, takes nothing yet, and ends by the signal's default.
            await self.shop.wait_ready(replica)
            self._note("sigterm", replica.name)
            self._in_background(replica, self._stop_then_start(replica))
            return
        target = rest.removeprefix("-9 ")
        if target.startswith("relay-leader "):
            kind = target.removeprefix("relay-leader ")
            idle = await self._idle(kind)
            leader = await self.shop.relay_leader(kind)
            if leader in idle:
                await self._kill(leader, "kill -9 relay-leader")
            else:  # between two leaders (a takeover under way): any replica will do
                await self._kill(self.chooser.choice(idle), "kill -9 relay-leader", "none led")
        elif target.endswith(" mid-request"):
            api = target.removesuffix(" mid-request")
            [replica] = await self._idle(api)
            await self.shop.wait_ready(replica)
            self._busy.add(replica.name)
            cut_before = self.figures.cut[api]
            begun_before = self.figures.begun[api]
            # Frozen first, so that a request begun from now on is certainly under way
            # (sent, unanswered) when it dies. One in flight already may have had its
            # answer, not yet read: only one begun after the freeze is counted on.
            replica.process.send_signal(signal.SIGSTOP)
            try:
                await self._when_begun_since(api, begun_before)
                await asyncio.sleep(_ON_THE_WIRE)
                in_flight = self.figures.in_flight[api]
                await self._kill(replica, f"kill -9 {api} mid-request", f"{in_flight} in flight")
            except BaseException:
                replica.process.send_signal(signal.SIGKILL)  # never left frozen
                raise
            self.log.api_kills.append((api, await self._cut_since(api, cut_before)))
        else:
            await self._kill(self.chooser.choice(await self._idle(target)), f"kill -9 {target}")

    async def _idle(self, kind: str, within: float = 120) -> list[Replica]:
        """The running replicas of ``kind`` no blow is busy with (waiting for one)."""
        deadline = time.monotonic() + within
        while True:
            idle = [r for r in self.shop.of_kind(kind) if r.running() and r.name not in self._busy]
            if idle:
                return idle
            assert time.monotonic() < deadline, f"no {kind} came back within {within:g} s"
            await asyncio.sleep(0.1)

    async def _cut_since(self, api: str, before: int, within: float = 30) -> int:
        """How many requests to ``api`` died with it: each fails as its connection drops.
        A webhook cut is seen only once the gateway call it was part of has ended, which on
        a loaded machine took more than 5 s (66 calls in flight, none seen cut in 5 s)."""
        deadline = time.monotonic() + within
        while self.figures.cut[api] == before and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.05)
        return self.figures.cut[api] - before

    async def _kill(self, replica: Replica, what: str, detail: str = "") -> None:
        self._busy.add(replica.name)
        await self._sigkill(replica)
        self._note(what, replica.name, detail)

        async def restart() -> None:
            await asyncio.sleep(RESTART_AFTER)
            replica.start()

        self._in_background(replica, restart())

    async def _sigkill(self, replica: Replica) -> None:
        """SIGKILL, and note it where it may come between a send and its mark (not when the
        replica had exited by itself since it was chosen: it was dead already)."""
        was_running, killed_at = replica.running(), time.time()
        life = LogSlice(replica.log_path, replica.life_offset)
        await asyncio.to_thread(self.shop.end, replica, signal.SIGKILL, within=10)
        assert not replica.running(), f"{replica.name} outlived its SIGKILL"
        if was_running and replica.kind == SENDER_KIND:
            self.log.send_sites.append(
                BlowSite("notification worker killed", replica.name, killed_at, (life,))
            )

    async def _stop_then_start(self, replica: Replica) -> None:
        code = await asyncio.to_thread(self.shop.end, replica, signal.SIGTERM, within=60)
        self.log.sigterm_exits.append((replica.name, code))
        if code is None:  # it did not drain in time: ended as an orchestrator would end it
            await self._sigkill(replica)
        await asyncio.sleep(RESTART_AFTER)
        replica.start()

    def _in_background(self, replica: Replica, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` (which ends ``replica`` or starts it again) beside the next blows."""
        self._busy.add(replica.name)
        task = asyncio.create_task(work)
        task.add_done_callback(lambda _: self._busy.discard(replica.name))
        self._tasks.append(task)

    async def _when_begun_since(self, api: str, begun: int, within: float = 30) -> None:
        """Wait for a request to ``api`` begun after the first ``begun``, to cut it
        (webhooks stop for a while when payment-service's consumers rebalance after a
        kill)."""
        deadline = time.monotonic() + within
        # A poll of the load's own counter: it has no event to wait on, and 5 ms is short
        # beside a checkout.
        while self.figures.begun[api] <= begun and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.005)

    async def _freeze(self) -> None:
        # Checkouts flow while the broker is frozen, or the outbox has nothing to hold: an
        # order-api starting again after an earlier blow is waited for first.
        for replica in await self._idle("order-api"):
            await self.shop.wait_ready(replica)
        connection = await asyncpg.connect(self.order_database_url)
        try:
            self.log.backlog_before_freeze = await unsent(connection)
            self.shop.freeze_broker()
            self.broker_frozen.set()
            frozen_at = time.monotonic()
            self._note("freeze broker", self.shop.transport, f"{self.freeze_seconds:g} s")
            try:
                while time.monotonic() - frozen_at < self.freeze_seconds:
                    self.log.backlog_peak_in_freeze = max(
                        self.log.backlog_peak_in_freeze, await unsent(connection)
                    )
                    await asyncio.sleep(0.5)
            finally:
                self.shop.thaw_broker()
                self.log.freeze_seconds = time.monotonic() - frozen_at
        finally:
            await connection.close()

    async def _restart_database(self) -> None:
        """Postgres stopped (every connection cut) and started again on its port and data
        after a while: pools, the relays' LISTEN and the inboxes must reconnect by
        themselves, and no process may exit for it."""
        senders = tuple(LogSlice(r.log_path, r.life_offset) for r in self.shop.of_kind(SENDER_KIND))
        stopping_at = time.time()
        began = time.monotonic()
        self._note("restart postgres", "postgres", f"{DATABASE_DOWN:g} s down")
        stopped = await asyncio.to_thread(self.shop.stop_database, DATABASE_STEP_WITHIN)
        self.log.database_stopping = time.monotonic() - began
        self.log.database_killed = not stopped
        try:
            await asyncio.sleep(DATABASE_DOWN)
        finally:
            starting = time.monotonic()
            await self.shop.start_database()
            back_at = time.time()
            self.log.database_starting = time.monotonic() - starting
            self.log.database_down = time.monotonic() - began
            self.log.database_away = (stopping_at, back_at)
            self.log.send_sites.append(database_restart(stopping_at, back_at, senders))

    async def _provider_mishap(self, what: str, faults: ProviderFaults) -> None:
        """The provider does ``what`` to the next message it takes (``faults.once``: to one,
        however long it takes the journal to tell), then goes back to its usual faults."""
        journal = ProviderJournal(self.shop.mail_dir)
        before = sum(entry.what == what for entry in journal.read())
        faults.write(self.shop.mail_dir)
        began = time.monotonic()
        try:
            while sum(e.what == what for e in journal.read()) == before:
                waited = time.monotonic() - began
                assert waited < PROVIDER_MISHAP_WITHIN, f"no message met the provider's {what}"
                await asyncio.sleep(0.05)
        finally:
            self.email_faults.write(self.shop.mail_dir)
        self._note(
            f"provider {what}", "smtp", f"met a message after {time.monotonic() - began:.1f} s"
        )

    async def _keep_replicas_up(self) -> None:
        """Restart a replica that exited by itself (one no blow is busy with)."""
        while True:
            await asyncio.sleep(1.0)
            for replica in self.shop.exited():
                if replica.name in self._busy:
                    continue
                self.log.self_exits[replica.name] += 1
                self._note("exited by itself", replica.name, replica.process.last_log_line())
                replica.start()
