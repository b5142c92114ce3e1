"""The whole development stack at once: what ``make run`` starts."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from shop.devstack.aws import AwsEndpoint
from shop.devstack.errors import DevstackError
from shop.devstack.kafka import KafkaCluster
from shop.devstack.parts import Part, aws_part, kafka_part, postgres_part
from shop.devstack.postgres import EmbeddedPostgres, PostgresServer
from shop.devstack.process import ManagedProcess
from shop.devstack.settings import DevstackSettings
from shop.devstack.smtp import SmtpAddress, SmtpSink


@dataclass(frozen=True)
class Endpoints:
    postgres: PostgresServer
    kafka: KafkaCluster
    aws: AwsEndpoint
    smtp: SmtpAddress
    mail_dir: Path


class Devstack:
    """Postgres, Kafka-protocol broker, SQS/SNS endpoint and SMTP sink, started together
    (in parallel: each part is spawned first, then each is awaited) and stopped in reverse."""

    def __init__(self, settings: DevstackSettings) -> None:
        self.settings = settings
        self._own_workdir = settings.workdir is None
        self.workdir = settings.workdir or Path(tempfile.mkdtemp(prefix="shop-devstack-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        postgres, self._postgres = postgres_part(settings, self.workdir)
        kafka, self._kafka = kafka_part(settings, self.workdir)
        aws, self._aws = aws_part(settings, self.workdir)
        self.mail_dir = self.workdir / "mail"
        self.smtp = SmtpSink(mail_dir=self.mail_dir)
        self._parts: list[Part] = [postgres, kafka, aws, self.smtp]
        self._started: list[Part] = []

    def start(self) -> Endpoints:
        try:
            for part in self._parts:
                part.spawn()
                self._started.append(part)
            for part in self._parts:
                part.wait_ready()
        except BaseException:
            # Whatever interrupted the start (a part that failed, Ctrl-C), stop what runs.
            self.stop()
            raise
        return Endpoints(
            postgres=self._postgres,
            kafka=self._kafka,
            aws=self._aws,
            smtp=self.smtp.address,
            mail_dir=self.mail_dir,
        )

    def pid_of(self, part: str) -> int | None:
        """The process id of the part named ``part`` (``postgres``, ``kafka``, ``aws``) when
        this devstack runs it as a process of its own; None for a server someone else runs.
        Chaos tests pause the broker with it (SIGSTOP, SIGCONT)."""
        try:
            process: ManagedProcess = getattr(self._own_part(part), "process")  # noqa: B009
        except DevstackError:
            return None
        return process.pid

    def stop_postgres(self, within: float) -> bool:
        """Stop this devstack's own Postgres, keeping its data and port, to start it again
        with :meth:`spawn_part` (chaos tests restart it): True when its fast shutdown
        finished within ``within`` s, False when it was ended as a crash
        (:meth:`EmbeddedPostgres.shut_down`)."""
        postgres = self._own_part("postgres")
        assert isinstance(postgres, EmbeddedPostgres)  # the one Postgres run as a process
        return postgres.shut_down(within)

    def spawn_part(self, part: str) -> None:
        """Start the part again (from the main thread, as every server here); wait for it
        with :meth:`wait_part_ready`, from any thread."""
        self._own_part(part).spawn()

    def wait_part_ready(self, part: str) -> None:
        self._own_part(part).wait_ready()

    def part_running(self, part: str) -> bool:
        process = getattr(self._own_part(part), "process", None)
        return isinstance(process, ManagedProcess) and process.running()

    def _own_part(self, part: str) -> Part:
        for started in self._started:
            if started.name == part and isinstance(
                getattr(started, "process", None), ManagedProcess
            ):
                return started
        raise DevstackError(f"the devstack runs no {part} process of its own")

    def stop(self) -> None:
        while self._started:
            self._started.pop().stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Endpoints:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
