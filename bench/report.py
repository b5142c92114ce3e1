"""``make bench``: every benchmark in turn, on this machine, into one report,
``bench/results/REPORT.md`` (committed), with each benchmark's JSON figures beside it
where it writes them. Each benchmark measures its own baseline in the same run and prints
its figures beside it; the report adds the machine, the commit, how busy the machine was
when each began, and the database's own ceiling for the checkout (pgbench).

Directly: ``python bench/report.py [--only NAME,...]`` (a partial run rewrites the report
with those sections alone).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


@dataclass(frozen=True)
class Bench:
    name: str
    title: str
    script: str
    args: tuple[str, ...] = ()
    json: bool = False


BENCHES = (
    Bench(
        "ceiling",
        "The database's ceiling for the checkout (pgbench)",
        "checkout/ceiling.py",
        json=True,
    ),
    Bench("relay", "Outbox relay", "relay/bench_relay.py"),
    Bench(
        "consume-kafka",
        "Consuming, Kafka: CPU per message",
        "consume/bench_consume.py",
        ("--bus", "kafka"),
        json=True,
    ),
    Bench(
        "consume-sqs",
        "Consuming, SQS: CPU per message",
        "consume/bench_consume.py",
        ("--bus", "sqs"),
        json=True,
    ),
    Bench(
        "checkout",
        "Checkout: saturation, hot product, latency at fixed rates",
        "checkout/bench_checkout.py",
        json=True,
    ),
    Bench(
        "checkout-remote-db",
        "Checkout with the database a network round trip away (1 ms)",
        "checkout/bench_checkout.py",
        ("--db-round-trip-ms", "1", "--rate", "off"),
        json=True,
    ),
    Bench("notify", "Order e-mails", "notify/bench_notify.py"),
    Bench("webhook", "Payment webhook", "webhook/bench_webhook.py"),
    Bench("retention", "Retention of the growing tables", "retention/bench_retention.py"),
    Bench(
        "e2e-kafka",
        "The whole shop end to end, Kafka",
        "e2e/bench_e2e.py",
        ("--bus", "kafka"),
        json=True,
    ),
)


def machine() -> list[str]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor() or "unknown",
    )
    memory = next(
        (
            f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        ),
        "unknown",
    )
    return [
        f"- CPU: {model}, {os.cpu_count()} cores; memory {memory}",
        f"- {platform.system()} {platform.release()}; Python {platform.python_version()}",
    ]


def commit() -> str:
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    dirty = subprocess.run(  # the results a run rewrites are not a change of the code
        ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{head or 'unknown'}{' with uncommitted changes' if dirty else ''}"


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


LOG_LINE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}\S* \[")
"""A log line of the processes a benchmark starts (the broker's client's warnings, say),
which its figures do not need."""


def figures_only(output: str) -> str:
    return "\n".join(line for line in output.splitlines() if not LOG_LINE.match(line))


def run(bench: Bench) -> tuple[str, float, int]:
    command = [sys.executable, str(HERE / bench.script), *bench.args]
    if bench.json:
        command += ["--json", str(RESULTS / f"{bench.name}.json")]
    print(f"== {bench.name}: {' '.join(command[1:])}", flush=True)
    started = time.monotonic()
    finished = subprocess.run(command, capture_output=True, text=True, check=False)
    output = finished.stdout + (
        f"\n(exit {finished.returncode})\n{finished.stderr[-3000:]}" if finished.returncode else ""
    )
    print(output, flush=True)
    return output, time.monotonic() - started, finished.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--only", default="", help="names, comma-separated: " + ", ".join(b.name for b in BENCHES)
    )
    args = parser.parse_args()
    chosen = [b for b in BENCHES if not args.only or b.name in args.only.split(",")]
    RESULTS.mkdir(exist_ok=True)
    started, measured = datetime.now(UTC), commit()
    sections, failed = [], []
    for bench in chosen:
        before = load()
        output, seconds, code = run(bench)
        if code:
            failed.append(bench.name)
        command = f"python bench/{bench.script} {' '.join(bench.args)}".strip()
        sections += [
            f"## {bench.title}",
            "",
            f"`{command}`: {seconds:.0f} s; at its start, {before}."
            + (f" Figures as JSON: `results/{bench.name}.json`." if bench.json else ""),
            "",
            "```",
            figures_only(output).rstrip(),
            "```",
            "",
        ]
    report = [
        "# Benchmark report",
        "",
        f"Written by `make bench` on {started:%Y-%m-%d %H:%M} UTC, commit {measured}.",
        "Every figure is printed beside its baseline, measured in the same run; on two cores",
        "client, servers and infrastructure share the machine, as each section's CPU lines show.",
        "",
        *machine(),
        "",
        *sections,
    ]
    (RESULTS / "REPORT.md").write_text("\n".join(report))
    print(f"written: {RESULTS / 'REPORT.md'}")
    if failed:
        sys.exit(f"benchmarks that failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
