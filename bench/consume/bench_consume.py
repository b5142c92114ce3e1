"""Consuming: CPU per message of a worker whose handler does one INSERT in its transaction
(inbox included), next to a bare consumer doing the same SQL with the same commit
discipline, measured in the same run on the same messages. Run: ``make bench-consume``
(``--bus sqs`` for SNS/SQS).

Four consumers on Kafka, three on SQS, each in a process of its own whose CPU is all it does:
- ``bare``: aiokafka (or aiobotocore's SQS client) and an asyncpg pool of 4, 16 messages
  in flight; per message, one transaction of the inbox INSERT and the handler's INSERT;
  on Kafka, offsets committed every 0.5 s; on SQS, each received batch deleted at once;
- ``faststream`` (Kafka only: FastStream has no SQS transport): a FastStream
  ``KafkaBroker`` subscriber configured as the shop's transport configures its own (no
  dependency injection, the transport's parser and decoder, offsets committed explicitly
  every 0.5 s), handing each record to a task doing the bare side's SQL, 16 in flight:
  the floor the framework the shop must run on sets, without the shop's pipeline;
- ``library``: the shop's :class:`~shop.messaging.Worker` (every middleware, metrics,
  the dead-letter collector), a transactional subscriber whose handler does the INSERT,
  tracing off (production samples; a sampled-out message costs what an unsampled one does);
- ``library+spans``: the same with every message traced to span files, as under
  ``make run``.

The messages are OrderCreated envelopes as the relay publishes them. On Kafka they are
published once and each turn reads them all under a new consumer group; on SQS each round
publishes them again, to one queue per consumer. The consumers take turns, round after
round, so that all see the machine's drift alike; each child measures its own CPU
(``time.process_time``: every thread) from its first handled message to its last.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg

from shop.devstack.cpu import family_seconds
from shop.devstack.parts import Part, aws_part, kafka_part, postgres_part
from shop.devstack.settings import DevstackSettings

HERE = Path(__file__).resolve().parent
SIDES = ("bare", "faststream", "library", "library+spans")
KAFKA_ONLY = frozenset({"faststream"})
"""Sides with no SQS twin: FastStream has no SQS transport."""
PARTITIONS = 6
IN_FLIGHT = 16
POOL = 4

TABLE = """
CREATE TABLE IF NOT EXISTS consumed (
    consumer text NOT NULL,
    event_id uuid NOT NULL,
    order_number text NOT NULL,
    PRIMARY KEY (consumer, event_id)
)"""


@dataclass(frozen=True)
class Infrastructure:
    database_url: str
    """asyncpg's form (postgresql://…)."""
    bootstrap: str | None
    aws: dict[str, str] | None
    postgres_pid: int | None


@contextlib.contextmanager
def infrastructure(bus: str, workdir: Path) -> Iterator[Infrastructure]:
    settings = DevstackSettings()
    postgres, server = postgres_part(settings, workdir)
    parts: list[Part] = [postgres]
    bootstrap = aws = None
    if bus == "kafka":
        kafka, cluster = kafka_part(settings, workdir)
        parts.append(kafka)
    else:
        moto, endpoint = aws_part(settings, workdir)
        parts.append(moto)
    try:
        for part in parts:
            part.spawn()
        for part in parts:
            part.wait_ready()
        if bus == "kafka":
            bootstrap = cluster.bootstrap_servers
        else:
            aws = endpoint.client_kwargs()
        database = asyncio.run(server.create_database(prefix="bench"))
        process = getattr(postgres, "process", None)
        yield Infrastructure(
            server.url(database), bootstrap, aws, process.pid if process is not None else None
        )
    finally:
        for part in reversed(parts):
            part.stop()


async def prepare_database(url: str) -> None:
    from sqlalchemy.ext.asyncio import create_async_engine  # noqa: PLC0415

    from shop.messaging.schema import create_tables  # noqa: PLC0415

    engine = create_async_engine(url.replace("postgresql://", "postgresql+asyncpg://", 1))
    async with engine.begin() as connection:
        await create_tables(connection)
    await engine.dispose()
    connection = await asyncpg.connect(url)
    try:
        await connection.execute(TABLE)
    finally:
        await connection.close()


def messaging_settings(bus: str, infra: Infrastructure, namespace: str) -> dict[str, Any]:
    """What every child's MessagingSettings are made of (JSON: passed on the command line)."""
    settings: dict[str, Any] = {"transport": bus, "namespace": namespace}
    if bus == "kafka":
        settings["kafka"] = {"bootstrap_servers": infra.bootstrap, "partitions": PARTITIONS}
    else:
        assert infra.aws is not None
        settings["sqs"] = {
            "endpoint_url": infra.aws["endpoint_url"],
            "region": infra.aws["region_name"],
            "access_key_id": infra.aws["aws_access_key_id"],
            "secret_access_key": infra.aws["aws_secret_access_key"],
            "wait_time_seconds": 1,
        }
    return settings


# --- the driver --------------------------------------------------------------------------


@dataclass
class Turn:
    side: str
    cpu: float
    wall: float
    handled: int
    postgres_cpu: float

    @property
    def cpu_ms_per_message(self) -> float:
        return self.cpu / max(1, self.handled - 1) * 1000

    @property
    def rate(self) -> float:
        return (self.handled - 1) / self.wall if self.wall else 0.0


@dataclass(frozen=True)
class Run:
    """What every turn of a run shares."""

    bus: str
    count: int
    settings: dict[str, Any]
    infra: Infrastructure
    profile: Path | None


def child_command(run: Run, side: str, group: str) -> list[str]:
    profile = run.profile
    profiled = ["-m", "cProfile", "-o", str(profile / f"{group}.prof")] if profile else []
    return [
        sys.executable,
        *profiled,
        str(HERE / "consumers.py"),
        "--side", side,
        "--group", group,
        "--count", str(run.count),
        "--messaging", json.dumps(run.settings),
        "--database-url", run.infra.database_url,
    ]  # fmt: skip


def run_child(
    side: str, command: list[str], postgres_pid: int | None, timeout: float
) -> tuple[dict[str, Any], float]:
    """The child's figures, and PostgreSQL's CPU seconds while it ran."""
    postgres_before = family_seconds(postgres_pid) if postgres_pid else 0.0
    finished = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    postgres_cpu = (family_seconds(postgres_pid) if postgres_pid else 0.0) - postgres_before
    if finished.returncode != 0:
        raise SystemExit(f"{side} failed ({finished.returncode}):\n{finished.stderr[-3000:]}")
    result_lines = [line for line in finished.stdout.splitlines() if line.startswith("{")]
    if not result_lines:
        raise SystemExit(f"{side} printed no figures:\n{finished.stderr[-3000:]}")
    return json.loads(result_lines[-1]), postgres_cpu


async def publish(settings: dict[str, Any], count: int, groups: list[str]) -> None:
    """``count`` OrderCreated envelopes, each with a key of its own, through the shop's
    transport (as the relay publishes them); on SQS, ``groups``' queues are declared first
    so that each gets every message."""
    from shop.contracts import OrderCreated, examples, wrap  # noqa: PLC0415
    from shop.messaging import MessagingSettings, Router, create_transport  # noqa: PLC0415
    from shop.messaging.message import OutgoingMessage  # noqa: PLC0415
    from shop.messaging.outbox import outbox_row  # noqa: PLC0415
    from shop.messaging.pipeline import Pipeline  # noqa: PLC0415

    transport = create_transport(MessagingSettings.model_validate(settings))
    await transport.start()
    try:
        for group in groups:
            router = Router(group)
            router.subscriber(OrderCreated, transactional=False)(_nothing)
            await transport.declare(Pipeline(router))
        event = examples.examples()[OrderCreated]
        batch: list[OutgoingMessage] = []
        for n in range(count):
            row = outbox_row(wrap(event, key=f"order-{n}"))
            batch.append(
                OutgoingMessage(
                    topic=transport.naming.topic(str(row["message_type"])),
                    key=str(row["key"]),
                    body=bytes(row["body"]),
                    headers=row["headers"],
                )
            )
            if len(batch) == 500:
                await transport.publish(batch)
                batch = []
        if batch:
            await transport.publish(batch)
    finally:
        await transport.close()


async def _nothing(_: object, __: object) -> None:
    return None


async def consumed(url: str, consumer: str) -> int:
    """The handler's rows of ``consumer``: one a message, or a message was lost or doubled."""
    connection = await asyncpg.connect(url)
    try:
        rows: int = await connection.fetchval(
            "SELECT count(*) FROM consumed WHERE consumer = $1", consumer
        )
        return rows
    finally:
        await connection.close()


def measure(run: Run, sides: list[str], rounds: int) -> list[Turn]:
    """Every side's turns, in alternation, round after round."""
    print(f"{run.bus}: {run.count} OrderCreated messages a turn, {rounds} rounds; "
          f"{IN_FLIGHT} in flight, pool of {POOL}", flush=True)  # fmt: skip
    if run.bus == "kafka":
        asyncio.run(publish(run.settings, run.count, []))
    turns = []
    for round_ in range(1, rounds + 1):
        groups = {side: f"{side.replace('+', '-')}-{round_}" for side in sides}
        if run.bus == "sqs":
            asyncio.run(publish(run.settings, run.count, list(groups.values())))
        for side in sides:
            command = child_command(run, side, groups[side])
            figures, postgres_cpu = run_child(side, command, run.infra.postgres_pid, timeout=600)
            turn = Turn(side, figures["cpu"], figures["wall"], figures["handled"], postgres_cpu)
            turns.append(turn)
            rows = asyncio.run(consumed(run.infra.database_url, groups[side]))
            if rows != run.count:
                print(f"  !! {side}: {rows} rows for {run.count} messages", flush=True)
            print(f"  round {round_} {side:14} {turn.cpu_ms_per_message:6.3f} ms CPU/message"
                  f"  {turn.rate:7.0f} messages/s"
                  f"  (PostgreSQL {postgres_cpu / run.count * 1000:5.3f} ms/message)",
                  flush=True)  # fmt: skip
    return turns


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bus", choices=("kafka", "sqs"), default="kafka")
    parser.add_argument(
        "--messages", type=int, default=None, help="per turn (5000 Kafka, 2000 SQS)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--profile", type=Path, default=None,
                        help="write each turn's cProfile statistics to this folder")  # fmt: skip
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()
    count = args.messages or (5000 if args.bus == "kafka" else 2000)
    sides = [side for side in args.sides.split(",") if side]
    unknown = set(sides) - set(SIDES)
    if unknown:
        parser.error(f"unknown sides {sorted(unknown)}; choose among {SIDES}")
    if args.bus == "sqs" and KAFKA_ONLY & set(sides):
        print(f"sqs: leaving out {', '.join(sorted(KAFKA_ONLY & set(sides)))} "
              "(FastStream has no SQS transport)", flush=True)  # fmt: skip
        sides = [side for side in sides if side not in KAFKA_ONLY]

    with (
        tempfile.TemporaryDirectory(prefix="bench-consume-") as tmp,
        infrastructure(args.bus, Path(tmp)) as infra,
    ):
        asyncio.run(prepare_database(infra.database_url))
        settings = messaging_settings(args.bus, infra, f"bench{os.getpid() % 100000}")
        run = Run(args.bus, count, settings, infra, args.profile)
        turns = measure(run, sides, args.rounds)

    summary = {
        side: {
            "cpu_ms_per_message": median([t.cpu_ms_per_message for t in turns if t.side == side]),
            "messages_per_second": median([t.rate for t in turns if t.side == side]),
        }
        for side in sides
    }
    print(f"\n{args.bus}: medians of {args.rounds} rounds")
    for side, figures in summary.items():
        print(f"  {side:14} {figures['cpu_ms_per_message']:6.3f} ms CPU/message"
              f"  {figures['messages_per_second']:7.0f} messages/s")  # fmt: skip
    for base in ("bare", "faststream"):
        if base not in summary:
            continue
        floor = summary[base]["cpu_ms_per_message"]
        for side in sides:
            if side in {"bare", base}:
                continue
            ratio = summary[side]["cpu_ms_per_message"] / floor
            goal = " (goal: at most 1.5x)" if (side, base) == ("library", "bare") else ""
            print(f"  {side} / {base}: {ratio:.2f}x CPU per message{goal}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps({"bus": args.bus, "messages": count, "rounds": args.rounds,
                        "summary": summary, "turns": [t.__dict__ for t in turns]}, indent=2)
        )  # fmt: skip


if __name__ == "__main__":
    main()
