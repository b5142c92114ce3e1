"""A Kafka worker killed with SIGKILL while 8 messages are in flight, one of them slow:
nothing is lost, the slow message comes again to the next worker, and only what shared its
partition behind it is delivered twice (no commit ever passed it)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from shop.contracts import OrderCreated, examples, wrap
from shop.devstack.kafka import KafkaCluster
from shop.messaging import MessagingSettings, Naming
from shop.messaging.testing import on_kafka, outgoing
from shop.messaging.transports.kafka import KafkaTransport

SCRIPT = Path(__file__).with_name("kafka_worker_process.py")
FAST = [f"fast-{n}" for n in range(30)]
COMMIT_ROUNDS = 2.0
"""Seconds for the consumer's periodic commits (every 0.5 s) to write what finished."""


async def publish_all(cluster: KafkaCluster, naming: Naming, keys: list[str]) -> None:
    settings = on_kafka(MessagingSettings(namespace=naming.namespace), cluster.bootstrap_servers)
    transport = KafkaTransport(settings.kafka, naming)
    await transport.start()
    try:
        event = examples.examples()[OrderCreated]
        await transport.publish([outgoing(wrap(event, key=k), naming=naming) for k in keys])
    finally:
        await transport.close()


def worker(slow_seconds: float, cluster: KafkaCluster, naming: Naming) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            str(SCRIPT),
            str(slow_seconds),
            cluster.bootstrap_servers,
            naming.namespace,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )


def read_until(
    process: subprocess.Popen[str], done: set[str], *, within: float = 90.0
) -> list[str]:
    """Lines the worker printed, until each of ``done`` has been printed."""
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + within
    while not done <= set(lines):
        assert time.monotonic() < deadline, f"never printed {done - set(lines)}: {lines}"
        line = process.stdout.readline()
        assert line or process.poll() is None, f"the worker exited: {lines}"
        lines.append(line.strip())
    return lines


def stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)


def test_a_worker_killed_with_8_in_flight_loses_nothing_and_the_slow_one_comes_again(
    kafka_cluster: KafkaCluster, unique_name: str
) -> None:
    naming = Naming(unique_name)
    asyncio.run(publish_all(kafka_cluster, naming, ["slow", *FAST]))

    first = worker(300, kafka_cluster, naming)
    try:
        seen = read_until(first, {"started slow", *(f"handled {k}" for k in FAST)})
        time.sleep(COMMIT_ROUNDS)
        first.kill()  # SIGKILL: no drain, no last commit
    finally:
        stop(first)
    assert "handled slow" not in seen

    second = worker(0, kafka_cluster, naming)
    try:
        again = read_until(second, {"handled slow"})
        time.sleep(COMMIT_ROUNDS)  # let anything else redelivered show itself
        second.terminate()
        assert second.wait(timeout=30) == 0
        assert second.stdout is not None
        again += [line.strip() for line in second.stdout.read().splitlines()]
    finally:
        stop(second)

    handled = {line.removeprefix("handled ") for line in seen + again if line.startswith("handled")}
    assert handled == {"slow", *FAST}, "nothing is lost"
    redelivered = {line.removeprefix("handled ") for line in again if line.startswith("handled")}
    # Commits went on past the finished messages of the other partition, never past the
    # slow one: only the messages behind it on its own partition come twice.
    assert "slow" in redelivered
    assert len(redelivered - {"slow"}) < len(FAST)
