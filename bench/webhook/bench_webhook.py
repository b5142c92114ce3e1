"""The signed webhook: ``POST /v1/payments/webhook`` of payment-service (``python -m
shop.payment.api``) next to the same endpoint with its signature check turned off
(``unverified_service.py``), each on a database of its own in one PostgreSQL, measured in
turns in the same run:

- saturation: requests/s and p50/p99 with ``--connections`` clients sending as fast as they
  are answered (closed loop);
- latency at a fixed offered rate: ``--rate`` requests/s sent on schedule whatever the
  answers do (open loop), latency counted from each request's scheduled time, so a slow
  answer is not hidden by the requests it held back.

Every request is a new notification (a new event id), signed as a gateway signs it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from shop.devstack.open_loop import OpenLoopFigures, open_loop
from shop.devstack.parts import postgres_part
from shop.devstack.ports import free_port
from shop.devstack.process import ManagedProcess, port_accepts
from shop.devstack.settings import DevstackSettings
from shop.payment.migrations import migrate
from shop.simulators.gateway import SHOP_SIGNATURE_HEADER, shop_signature

HERE = Path(__file__).resolve().parent
SECRET = "whsec_bench-secret"
ORDER_ID = str(uuid.uuid4())
LATE_MS = 5.0
"""An open-loop request sent later than this after its scheduled time counts as late."""


@dataclass(frozen=True, slots=True)
class Server:
    name: str
    argv: list[str]
    port: int
    database_url: str


@dataclass
class Figures:
    latencies_ms: list[float]
    seconds: float
    errors: int = 0

    @property
    def per_second(self) -> float:
        return len(self.latencies_ms) / self.seconds if self.seconds else 0.0

    def percentile(self, p: float) -> float:
        ordered = sorted(self.latencies_ms)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def signed_request() -> tuple[bytes, dict[str, str]]:
    body = json.dumps(
        {
            "event_id": f"evt_{uuid.uuid4().hex}",
            "type": "payment.paid",
            "created": int(time.time()),
            "data": {
                "order_id": ORDER_ID,
                "amount": 178000,
                "currency": "IDR",
                "provider_payment_id": "pay_bench",
            },
        }
    ).encode()
    headers = {
        SHOP_SIGNATURE_HEADER: shop_signature(body, SECRET, int(time.time())),
        "Content-Type": "application/json",
    }
    return body, headers


@contextmanager
def databases(workdir: Path) -> Iterator[tuple[str, str]]:
    part, server = postgres_part(DevstackSettings(), workdir)
    part.spawn()
    part.wait_ready()
    try:
        names = [asyncio.run(server.create_database(prefix="bench")) for _ in range(2)]
        urls = [server.url(name) for name in names]
        for url in urls:
            migrate(url)
        yield urls[0], urls[1]
    finally:
        part.stop()


@contextmanager
def serving(server: Server, workdir: Path) -> Iterator[None]:
    env = {
        "SHOP_PAYMENT_DATABASE_URL": server.database_url,
        "SHOP_PAYMENT_HOST": "127.0.0.1",
        "SHOP_PAYMENT_PORT": str(server.port),
        "SHOP_PAYMENT_WEBHOOK_SECRETS": json.dumps([SECRET]),
        "SHOP_PAYMENT_ENVIRONMENT": "test",
        "SHOP_PAYMENT_LOG_JSON": "true",
    }
    process = ManagedProcess(
        server.name, server.argv, workdir / f"{server.name}.log", env={**os.environ, **env}
    )
    process.start()
    try:
        process.wait_until(lambda: port_accepts("127.0.0.1", server.port), 60, "listening")
        yield
    finally:
        process.stop()


async def closed_loop(url: str, connections: int, seconds: float) -> Figures:
    figures = Figures([], seconds)
    deadline = time.perf_counter() + seconds
    connector = aiohttp.TCPConnector(limit=connections)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client() -> None:
            while time.perf_counter() < deadline:
                body, headers = signed_request()
                started = time.perf_counter()
                async with session.post(url, data=body, headers=headers) as reply:
                    await reply.read()
                    if reply.status != 200:
                        figures.errors += 1
                figures.latencies_ms.append((time.perf_counter() - started) * 1000)

        await asyncio.gather(*(client() for _ in range(connections)))
    return figures


async def offered_load(url: str, rate: int, seconds: float) -> tuple[Figures, OpenLoopFigures]:
    """``rate`` requests/s on schedule (:mod:`shop.devstack.open_loop`), each on a connection
    of its own if need be: the figures for the table, and the open loop's (what was late)."""
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:

        async def send() -> str | None:
            body, headers = signed_request()
            async with session.post(url, data=body, headers=headers) as reply:
                await reply.read()
                return None if reply.status == 200 else str(reply.status)

        offered = await open_loop(send, rate=rate, seconds=seconds, late_ms=LATE_MS)
    figures = Figures(offered.latencies_ms, seconds, errors=sum(offered.failed.values()))
    return figures, offered


def merged(parts: list[Figures]) -> Figures:
    return Figures(
        [ms for part in parts for ms in part.latencies_ms],
        sum(part.seconds for part in parts),
        sum(part.errors for part in parts),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=5.0, help="per server per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=int, default=300, help="offered requests/s, open loop")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-webhook-") as directory:
        workdir = Path(directory)
        with databases(workdir) as (signed_db, unverified_db):
            servers = [
                Server(
                    "signed", [sys.executable, "-m", "shop.payment.api"], free_port(), signed_db
                ),
                Server(
                    "unverified",
                    [sys.executable, str(HERE / "unverified_service.py")],
                    free_port(),
                    unverified_db,
                ),
            ]
            saturated: dict[str, list[Figures]] = {s.name: [] for s in servers}
            offered: dict[str, list[Figures]] = {s.name: [] for s in servers}
            behind = {s.name: OpenLoopFigures(rate=args.rate, seconds=0) for s in servers}
            for _ in range(args.rounds):
                for server in servers:  # in turns, so a drift of the machine hits both
                    url = f"http://127.0.0.1:{server.port}/v1/payments/webhook"
                    with serving(server, workdir):
                        asyncio.run(closed_loop(url, args.connections, 1.0))  # warm-up
                        saturated[server.name].append(
                            asyncio.run(closed_loop(url, args.connections, args.seconds))
                        )
                        figures, schedule = asyncio.run(offered_load(url, args.rate, args.seconds))
                        offered[server.name].append(figures)
                        behind[server.name].add(schedule)
    report(
        args,
        {k: merged(v) for k, v in saturated.items()},
        {k: merged(v) for k, v in offered.items()},
        saturated,
        behind,
    )


def report(
    args: argparse.Namespace,
    saturated: dict[str, Figures],
    offered: dict[str, Figures],
    rounds: dict[str, list[Figures]],
    behind: dict[str, OpenLoopFigures],
) -> None:
    print(
        f"POST /v1/payments/webhook: {args.rounds} rounds of {args.seconds:g} s per server, in "
        f"turns; saturation at {args.connections} connections, then {args.rate} req/s offered"
    )
    print(
        f"{'':28}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}   at {args.rate}/s: p50, p99"
    )
    for name, label in (("unverified", "verification off"), ("signed", "signed (the service)")):
        s, o = saturated[name], offered[name]
        print(
            f"  {label:26}{s.per_second:9.0f}{s.percentile(50):9.1f}{s.percentile(99):9.1f}"
            f"{s.errors + o.errors:8d}   {o.percentile(50):6.1f} {o.percentile(99):6.1f} ms"
        )
    ratio = saturated["signed"].per_second / saturated["unverified"].per_second
    cost = 1 - ratio
    p99 = offered["signed"].percentile(99)
    print(
        f"  ratio signed/unverified     {ratio:.2f}   goals: verification costs <= 10% "
        f"{'met' if cost <= 0.10 else 'MISSED'} ({cost:.0%}), p99 <= 20 ms at {args.rate}/s "
        f"{'met' if p99 <= 20 else 'MISSED'} ({p99:.1f} ms)"
    )
    by_round = ", ".join(
        f"{u.per_second:.0f}/{s.per_second:.0f}"
        for u, s in zip(rounds["unverified"], rounds["signed"], strict=True)
    )
    print(f"  by round (unverified/signed req/s): {by_round}")
    for name, schedule in behind.items():
        if schedule.late or schedule.not_sent:
            print(
                f"  !! {name}, open loop: {schedule.late} of {schedule.due} requests sent more "
                f"than {LATE_MS:g} ms behind schedule (the client fell behind), "
                f"{schedule.not_sent} not sent"
            )


if __name__ == "__main__":
    main()
