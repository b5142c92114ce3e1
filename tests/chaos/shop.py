"""The shop as the chaos suite runs it: ``make run``'s processes (``devstack.toml``) on an
embedded devstack of the suite's own, with two replicas of every worker kind (each runs its
service's consumers and a relay replica), one of each API, and a broker the suite may
freeze. Every replica is a process of its own that the suite kills (SIGKILL), stops
(SIGTERM) and starts again, as an orchestrator would restart a crashed pod."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import httpx
from aiobotocore.session import get_session
from prometheus_client.parser import text_string_to_metric_families

from shop.devstack.aws import AwsEndpoint
from shop.devstack.errors import DevstackError
from shop.devstack.ports import free_port
from shop.devstack.process import ManagedProcess, ready_at
from shop.devstack.procfile import Placeholders, ShopProcess, load
from shop.devstack.settings import DevstackSettings
from shop.devstack.stack import Devstack

ROOT: Final = Path(__file__).resolve().parents[2]
PROCFILE: Final = ROOT / "devstack.toml"

WORKER_KINDS: Final = ("order-worker", "payment-worker", "notification-worker")
API_KINDS: Final = ("order-api", "payment-api")
RELAY_KINDS: Final = ("order-worker", "payment-worker")
"""The worker kinds whose replicas each run a relay replica (notification-service sends
nothing)."""
OUTSIDE_KINDS: Final = ("gateway",)
"""The parties outside the shop that make run starts beside it (the development payment
gateway): started once, never under fire."""
REPLICAS_PER_WORKER: Final = 2


@dataclass
class Replica:
    """One process of a kind (``order-worker``), started again as often as it is ended."""

    name: str
    kind: str
    argv: list[str]
    env: dict[str, str]
    port: int
    """Its API port, or its worker's health port (``/metrics``, ``/readyz``)."""
    log_path: Path
    ready_path: str | None = None
    """What answers 200 once it is ready (else: its port accepts connections)."""
    process: ManagedProcess = field(init=False)
    starts: int = 0
    life_offset: int = 0
    """Where the log of its current life begins (each start appends to the same file)."""

    def __post_init__(self) -> None:
        self.process = ManagedProcess(self.name, self.argv, self.log_path, env=self.env)

    def start(self) -> None:
        self.life_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        self.process.start()
        self.starts += 1

    def running(self) -> bool:
        return self.process.running()

    def ready(self) -> bool:
        return self.running() and ready_at(self.port, self.ready_path)


def _replicas(process: ShopProcess, base_env: dict[str, str], logs: Path) -> list[Replica]:
    """``process`` as its replicas: two of a worker, each with a health port of its own."""
    if process.ready_port is None:
        raise DevstackError(f"{process.name}: the chaos suite needs its ready_port")
    count = REPLICAS_PER_WORKER if process.name in WORKER_KINDS else 1
    replicas = []
    for number in range(1, count + 1):
        port = process.ready_port if number == 1 else free_port()
        own = {
            name: str(port) if value == str(process.ready_port) else value
            for name, value in process.env.items()
        }
        name = f"{process.name}-{number}"
        replicas.append(
            Replica(
                name=name,
                kind=process.name,
                argv=process.argv,
                env={**base_env, **own},
                port=port,
                log_path=logs / f"{name}.log",
                ready_path=process.ready_path,
            )
        )
    return replicas


class ChaosShop:
    """Start with :meth:`start`, end with :meth:`stop` (always: it stops every process and
    server it started, a frozen broker thawed first)."""

    def __init__(self, workdir: Path, transport: str, extra_env: dict[str, str]) -> None:
        self.workdir = workdir
        self.transport = transport
        self.extra_env = extra_env
        # A devstack of the suite's own, never a shared server named by SHOP_DEVSTACK_*:
        # the suite freezes its broker.
        self.devstack = Devstack(
            DevstackSettings(
                workdir=workdir, postgres_url=None, kafka_bootstrap=None, aws_endpoint=None
            )
        )
        self.replicas: list[Replica] = []
        self.shop_env: dict[str, str] = {}
        self.database_urls: dict[str, str] = {}
        """Each service's own database, by package (``order``, …): the suite reads its
        invariants off the real stores; shopctl and the console never do."""
        self.mail_dir = workdir / "mail"
        self.aws: AwsEndpoint | None = None
        self._frozen = False

    # -- starting and stopping ------------------------------------------------------------

    def start(self, timeout: float = 120) -> None:
        endpoints = self.devstack.start()
        self.mail_dir = endpoints.mail_dir
        self.aws = endpoints.aws
        # Ports of its own, never make run's (8001, …): a developer's shop may be running.
        placeholders = Placeholders(endpoints, self.workdir, preferred_ports=False)
        procfile = load(PROCFILE, placeholders, transport=self.transport)
        self.shop_env = procfile.shop_env
        self.database_urls = {
            package: placeholders.resolve(f"{{database_url:shop_{package}}}")
            for package in ("order", "payment", "notification")
        }
        procfile.write_shop_env(self.workdir)
        base_env = {**os.environ, **self.extra_env}
        logs = self.workdir / "logs"
        for process in procfile.processes:
            if process.name not in WORKER_KINDS + API_KINDS + OUTSIDE_KINDS:
                continue  # the console: not under fire
            env = {**base_env, **process.env, **self.extra_env}
            for step in process.setup:
                done = subprocess.run(step, env=env, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise DevstackError(f"{process.name}: {step[1:]} failed: {done.stderr[-500:]}")
            self.replicas += _replicas(process, {**base_env, **self.extra_env}, logs)
        for replica in self.replicas:
            replica.start()
        for replica in self.replicas:
            replica.process.wait_until(
                replica.ready, timeout, f"ready on {replica.port}{replica.ready_path or ''}"
            )

    def stop(self) -> None:
        if self._frozen:
            self.thaw_broker()
        try:
            if not self.devstack.part_running("postgres"):
                # Stopped by a blow that failed half way: every process stops against it.
                self.devstack.spawn_part("postgres")
                self.devstack.wait_part_ready("postgres")
        finally:
            for replica in self.replicas:
                replica.process.stop(timeout=30)
            self.devstack.stop()

    async def queues_not_empty(self) -> dict[str, tuple[int, int]]:
        """On SQS, each queue that still holds messages: how many are visible and how many
        hidden (received, or waiting out a retry), by queue. Where a message that was
        neither handled nor dead-lettered would be, if it reached its queue at all."""
        if self.transport != "sqs" or self.aws is None:
            return {}
        depths = {}
        async with get_session().create_client("sqs", **self.aws.client_kwargs()) as sqs:
            urls = (await sqs.list_queues()).get("QueueUrls", [])
            for url in urls:
                names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
                reply = await sqs.get_queue_attributes(QueueUrl=url, AttributeNames=names)
                visible, hidden = (int(reply["Attributes"][name]) for name in names)
                if visible or hidden:
                    depths[url.rsplit("/", 1)[-1]] = (visible, hidden)
        return depths

    # -- what the chaos does ------------------------------------------------------------------

    def of_kind(self, kind: str) -> list[Replica]:
        return [replica for replica in self.replicas if replica.kind == kind]

    def end(self, replica: Replica, signum: signal.Signals, *, within: float = 60) -> int | None:
        """Send ``signum`` and wait for the process to exit: its exit code."""
        replica.process.send_signal(signum)
        return replica.process.wait(within)

    def exited(self) -> list[Replica]:
        """Replicas not running (ended by the suite, or exited by themselves)."""
        return [replica for replica in self.replicas if not replica.running()]

    def freeze_broker(self) -> None:
        """SIGSTOP the bus's server: connections stay open and nothing answers."""
        self.devstack_process("kafka" if self.transport == "kafka" else "aws", signal.SIGSTOP)
        self._frozen = True

    def thaw_broker(self) -> None:
        self.devstack_process("kafka" if self.transport == "kafka" else "aws", signal.SIGCONT)
        self._frozen = False

    def stop_database(self, within: float) -> bool:
        """Stop Postgres with a fast shutdown (its sessions end, every connection drops, and
        each commit it acknowledged is written): True when it stopped so within ``within``
        s. Otherwise it is ended as a crash, which may lose the last commits it acknowledged
        (asynchronous commits), and the invariants would read that as the shop's loss."""
        return self.devstack.stop_postgres(within)

    async def start_database(self) -> None:
        """Start Postgres again, on its port and data: every process must reconnect."""
        self.devstack.spawn_part("postgres")  # quick; servers start from the main thread
        await asyncio.to_thread(self.devstack.wait_part_ready, "postgres")

    def devstack_process(self, part: str, signum: signal.Signals) -> None:
        pid = self.devstack.pid_of(part)
        if pid is None:
            raise DevstackError(f"the devstack runs no {part} process of its own")
        os.kill(pid, signum)

    async def relay_leader(self, kind: str) -> Replica | None:
        """The replica of ``kind`` whose relay holds the lead (publishes), if one does."""
        async with httpx.AsyncClient(timeout=2) as client:
            for replica in self.of_kind(kind):
                if not replica.running():
                    continue
                try:
                    reply = await client.get(f"http://127.0.0.1:{replica.port}/metrics")
                except httpx.HTTPError:
                    continue
                for family in text_string_to_metric_families(reply.text):
                    if family.name == "messaging_relay_leader" and any(
                        sample.value == 1 for sample in family.samples
                    ):
                        return replica
        return None

    async def wait_ready(self, replica: Replica, within: float = 60) -> None:
        deadline = time.monotonic() + within
        while not replica.ready():
            if not replica.running():
                raise DevstackError(f"{replica.name} exited: {replica.process.last_log_line()}")
            if time.monotonic() > deadline:
                raise DevstackError(
                    f"{replica.name} not ready within {within:g} s: {await _readiness(replica)}"
                )
            await asyncio.sleep(0.1)


async def _readiness(replica: Replica) -> str:
    """What ``replica``'s readiness path answers (which of its parts are not ready), or why
    it does not answer: the first thing to know of a replica that stays unready."""
    try:
        async with httpx.AsyncClient(timeout=5) as client:
            reply = await client.get(f"http://127.0.0.1:{replica.port}{replica.ready_path or ''}")
    except httpx.HTTPError as error:
        return f"no answer ({error!r})"
    return f"{reply.status_code} {reply.text}"
