"""The checkout alone: a second order-service API beside the running shop, started as the
shop's own (its environment, its span files), on a database of its own in the shop's
PostgreSQL that no worker reads. Its outbox fills and nothing relays it: what it measures is
the checkout with the rest of the shop idle, on the same machine, in the same run."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from make_run import RunningShop, stock_up

from shop.devstack.ports import free_port
from shop.devstack.postgres import PostgresServer
from shop.devstack.process import ManagedProcess, ready_at


@dataclass(frozen=True)
class LoneCheckout:
    url: str
    pid: int


def _prepare(env: dict[str, str]) -> None:
    """What make run does before it starts order-service's API: migrate, seed."""
    for step in ("migrate", "seed"):
        done = subprocess.run(
            [sys.executable, "-m", "shop.order", step],
            env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"order-service {step} failed: {(done.stderr or done.stdout)[-500:]}")


@contextlib.contextmanager
def lone_checkout(shop: RunningShop) -> Iterator[LoneCheckout]:
    server = PostgresServer.from_url(shop.order_database)
    database = server.url(asyncio.run(server.create_database(prefix="checkout_alone")))
    port = free_port()
    env = {
        **shop.processes["order-api"].environ(),
        "SHOP_ORDER_DATABASE_URL": database,
        "SHOP_ORDER_PORT": str(port),
    }
    _prepare(env)
    asyncio.run(stock_up(database))
    log = Path(shop.workdir) / "logs" / "order-api-alone.log"
    process = ManagedProcess(
        "order-api-alone", [sys.executable, "-m", "shop.order.api"], log, env=env
    )
    process.start()
    try:
        process.wait_until(lambda: ready_at(port, "/readyz"), 60, f"ready on {port}/readyz")
        assert process.pid is not None
        yield LoneCheckout(f"http://127.0.0.1:{port}", process.pid)
    finally:
        process.stop(timeout=30)
