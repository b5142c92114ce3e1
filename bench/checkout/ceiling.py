"""The database's own ceiling for the checkout: pgbench running the checkout's statements
(``ceiling.sql``, statement for statement as order-service sends them) against PostgreSQL
as the benchmarks run it, at the same 32 connections, over products spread and on one hot
product. Every checkout figure reads as a fraction of it. Run by ``make bench``; directly:
``python bench/checkout/ceiling.py [--seconds S] [--json PATH]``.

pgbench runs on this machine as the shop's processes would, taking a core's share from
PostgreSQL as they do; it sends no HTTP and decodes no JSON, so the figure is the most the
database gives this transaction here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import asyncpg

from shop.devstack.parts import postgres_part
from shop.devstack.postgres import EmbeddedPostgres
from shop.devstack.settings import DevstackSettings
from shop.order.migrations import migrate

HERE = Path(__file__).resolve().parent
PRODUCTS = 1000
"""As many as the checkout benchmark spreads its baskets over (its ``--products``)."""
CONNECTIONS = 32


async def seed(url: str) -> None:
    connection = await asyncpg.connect(url)
    try:
        await connection.executemany(
            "INSERT INTO products (sku, name, description, price, stock)"
            " VALUES ($1, $2, '', $3, $4)",
            [
                (f"CEILING-{n:04d}", f"Ceiling product {n}", 100_000 + n, 2_000_000_000)
                for n in range(1, PRODUCTS + 1)
            ],
        )
    finally:
        await connection.close()


def pgbench(binary: str, url: str, *, products: int, seconds: float) -> float:
    """Transactions a second, from pgbench's own report."""
    finished = subprocess.run(
        [
            binary, "--no-vacuum", "--protocol=extended",
            f"--client={CONNECTIONS}", "--jobs=2", f"--time={max(1, round(seconds))}",
            f"--define=products={products}", f"--file={HERE / 'ceiling.sql'}", url,
        ],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if finished.returncode != 0:
        raise SystemExit(f"pgbench failed:\n{finished.stderr[-2000:]}")
    found = re.search(r"tps = ([\d.]+)", finished.stdout)
    if found is None:
        raise SystemExit(f"pgbench printed no rate:\n{finished.stdout[-2000:]}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-ceiling-") as tmp:
        part, server = postgres_part(DevstackSettings(), Path(tmp))
        binary = (
            str(part.bin / "pgbench")
            if isinstance(part, EmbeddedPostgres)
            else shutil.which("pgbench")
        )
        if binary is None:
            sys.exit("pgbench is not installed (nor the embedded server's)")
        try:
            part.spawn()
            part.wait_ready()
            database = asyncio.run(server.create_database(prefix="ceiling"))
            url = server.url(database)
            migrate(url)
            asyncio.run(seed(url))
            pgbench(binary, url, products=PRODUCTS, seconds=3)  # warm-up
            spread = pgbench(binary, url, products=PRODUCTS, seconds=args.seconds)
            hot = pgbench(binary, url, products=1, seconds=args.seconds)
        finally:
            part.stop()
    print(
        f"pgbench, the checkout's statements, {CONNECTIONS} connections, {args.seconds:.0f} s each:"
    )
    print(f"  spread over {PRODUCTS} products   {spread:8.0f} checkouts/s")
    print(f"  one hot product             {hot:8.0f} checkouts/s   ({hot / spread:.2f}x spread)")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"spread": spread, "hot": hot, "connections": CONNECTIONS}))


if __name__ == "__main__":
    main()
