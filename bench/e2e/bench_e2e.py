"""The whole shop, end to end, at a steady rate: ``make run``'s command (``python -m
shop.devstack up --procfile devstack.toml``, every process of the shop on the embedded
infrastructure) on Kafka or SQS/SNS (``--bus``), driven open loop by this process (orders
placed on a fixed schedule, each paid at the development gateway a moment after its 201;
``steady_load.py``). Run: ``make bench-e2e``.

In one run, on one stack:

1. steady: ``--rate`` orders/s for ``--seconds`` after ``--warmup``: order → confirmation
   e-mail and webhook → receipt e-mail p50/p99 (at the SMTP sink), the checkout's 201, what
   could not be sent on time, and each process's CPU seconds per order (from /proc);
2. the checkout alone at the same rate (``lone_checkout.py``): the 201's latency with the
   rest of the shop idle, the baseline of the pipeline's share (a whole shop has no bare
   twin to compare with; its goals are printed instead);
3. the search: the rate stepped up (``--search-from``, ``--search-step``) for
   ``--search-seconds`` each, to the first at which a confirmation took over 1 s, an e-mail
   was not sent, a checkout or a payment failed, or over 1% of checkouts could not be sent
   on time; then halved ``--search-refine`` times between the last rate sustained and the
   first not.

Each phase and each step starts once every e-mail of the orders before it has reached the
sink (``--catch-up-within`` seconds at most; a step begun on a backlog says so): a rate the
shop could not keep up with leaves one that would otherwise be measured as the next rate's
latency.

``--no-span-files`` runs the shop without its development span files (tracing exporter
``none``); ``--span-files-cost`` runs the steady load on a stack with them, then on one
without, and prints each process's CPU per order side by side. ``--json PATH`` writes every
figure. Client, shop and infrastructure share this machine's cores: the CPU table says how.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import uvloop
from lone_checkout import lone_checkout
from make_run import PROCFILE, RunningShop, procfile_without_span_files, running_shop, stock_up
from steady_load import Figures, Order, SinkWatch, SteadyLoad, until_sent

from shop.devstack.cpu import CORES, machine_ticks, own_seconds, process_seconds
from shop.devstack.load import Percentiles
from shop.ops.settings import OpsSettings
from shop.ops.tokens import customer_token

GOAL_P99: Final = 0.250
"""Order → confirmation p99 at 100 orders/s on Kafka, in seconds."""
GOAL_P99_RATE: Final = 100.0
GOAL_SUSTAINED: Final = 150.0
"""Orders/s sustained on Kafka with every confirmation within :data:`SUSTAINED_WITHIN`."""
SUSTAINED_WITHIN: Final = 1.0
LATE_SHARE: Final = 0.01
"""A rate is not sustained when more of its checkouts than this could not be sent on time."""
CUSTOMERS: Final = 64
NOTICEABLE_MS: Final = 0.5
"""CPU per order under which a process's share of a difference is not shown."""
LOAD_GENERATOR: Final = "load generator (this process)"
LONE_API: Final = "order-api alone"


class CpuWindow:
    """CPU seconds of every process named by ``read``, of this process, and of the machine,
    between :meth:`begin` and :meth:`end`."""

    def __init__(self, read: Callable[[], dict[str, float]]) -> None:
        self._read = read
        self.seconds: dict[str, float] = {}
        self.wall = 0.0
        self.machine_busy = 0.0
        """Cores busy on average, whoever kept them busy."""

    def begin(self) -> None:
        self._started = time.perf_counter()
        self._before = {**self._read(), LOAD_GENERATOR: own_seconds()}
        self._machine = machine_ticks()

    def end(self) -> None:
        self.wall = time.perf_counter() - self._started
        after = {**self._read(), LOAD_GENERATOR: own_seconds()}
        self.seconds = {name: after[name] - self._before.get(name, 0.0) for name in after}
        busy, total = machine_ticks()
        self.machine_busy = (busy - self._machine[0]) / max(1, total - self._machine[1]) * CORES

    def share(self, name: str) -> float:
        """Cores ``name`` kept busy on average."""
        return self.seconds.get(name, 0.0) / self.wall if self.wall else 0.0

    def per_order_ms(self, orders: int, *, idle: CpuWindow | None = None) -> dict[str, float]:
        """CPU milliseconds of each process per order; less what it spends when the shop
        is ``idle`` (its polling loops, its timers), when given."""
        if not orders:
            return {}
        return {
            name: (seconds - (idle.share(name) * self.wall if idle else 0.0)) * 1000 / orders
            for name, seconds in self.seconds.items()
        }

    @property
    def other(self) -> float:
        """Cores kept busy by processes of neither the shop nor the bench."""
        if not self.wall:
            return 0.0
        return max(0.0, self.machine_busy - sum(self.seconds.values()) / self.wall)


@dataclass
class Measured:
    figures: Figures
    cpu: CpuWindow
    idle: CpuWindow | None = None
    """The same processes with no load, just before."""

    def per_order_ms(self, *, net: bool = False) -> dict[str, float]:
        return self.cpu.per_order_ms(self.figures.placed, idle=self.idle if net else None)


@dataclass
class Step:
    figures: Figures
    shortfall: str | None
    """Why the rate was not sustained; None when it was."""


@dataclass
class ShopRun:
    """What one stack measured."""

    span_files: bool
    steady: Measured | None = None
    alone: Measured | None = None
    steps: list[Step] = field(default_factory=list)
    orders: list[Order] = field(default_factory=list)
    """Every order placed on the stack, whose e-mails a load waits for before it begins."""
    second_emails: int = 0
    """E-mails whose subject had come before: an order told twice."""

    @property
    def sustained(self) -> float | None:
        """The highest rate of the search the shop kept up with."""
        kept = [s.figures.rate for s in self.steps if s.shortfall is None]
        return max(kept) if kept else None

    @property
    def bounded(self) -> bool:
        """Whether a rate fell short: without one, :attr:`sustained` is a lower bound."""
        return any(step.shortfall is not None for step in self.steps)


def shortfall(figures: Figures) -> str | None:
    """Why the shop did not keep up with ``figures``' rate; None when it did."""
    slowest = figures.order_to_confirmation
    reasons = (
        (
            figures.late > LATE_SHARE * figures.offered,
            f"{figures.late} of {figures.offered} checkouts not sent on time",
        ),
        (bool(figures.errors), f"{sum(figures.errors.values())} checkouts failed"),
        (bool(figures.payment_errors), f"{sum(figures.payment_errors.values())} payments failed"),
        (
            bool(figures.unconfirmed),
            f"{figures.unconfirmed} confirmations not sent when the bench stopped waiting",
        ),
        (
            bool(figures.unreceipted),
            f"{figures.unreceipted} receipts not sent when the bench stopped waiting",
        ),
        (
            slowest is not None and slowest.max > SUSTAINED_WITHIN,
            f"slowest confirmation {slowest.max * 1000 if slowest else 0:.0f} ms",
        ),
    )
    return next((why for short, why in reasons if short), None)


def confirmation_overdue(waiting: Sequence[Order]) -> bool:
    """An order placed over :data:`SUSTAINED_WITHIN` ago still unconfirmed: the step failed."""
    now = time.time()
    return any(
        order.answered_at is not None
        and order.confirmed_at is None
        and now - order.answered_at > SUSTAINED_WITHIN
        for order in waiting
    )


# --- the phases ---------------------------------------------------------------------------


def customer_tokens(shop: RunningShop) -> list[str]:
    """Tokens as ``shopctl token`` issues them, from the stack's ``shop.env``."""
    settings = OpsSettings(_env_file=shop.workdir / "shop.env")
    return [
        customer_token(settings, f"bench-{n:02d}", f"bench-{n:02d}@example.com")
        for n in range(CUSTOMERS)
    ]


def _load(shop: RunningShop, watch: SinkWatch | None, args: argparse.Namespace) -> SteadyLoad:
    return SteadyLoad(
        shop.order_api,
        shop.gateway,
        customer_tokens(shop),
        watch,
        connections=args.connections,
        pay_after=args.pay_after,
    )


async def at_rest(read: Callable[[], dict[str, float]], seconds: float) -> CpuWindow:
    """What each process spends with no load (its polling loops, its timers)."""
    window = CpuWindow(read)
    window.begin()
    await asyncio.sleep(seconds)
    window.end()
    return window


async def steady(
    shop: RunningShop, watch: SinkWatch, args: argparse.Namespace, run: ShopRun
) -> Measured:
    idle = await at_rest(shop.cpu_seconds, args.idle_seconds)
    window = CpuWindow(shop.cpu_seconds)
    async with _load(shop, watch, args) as load:
        orders = await load.offer(args.rate, args.seconds, warmup=args.warmup, window=window)
        run.orders += orders
        await load.settle(orders, pay=True, within=args.drain)
    return Measured(Figures.of(orders, args.rate, args.seconds), window, idle)


async def checkout_alone(
    shop: RunningShop, url: str, pid: int, args: argparse.Namespace
) -> Measured:
    def read() -> dict[str, float]:
        return {**shop.cpu_seconds(), LONE_API: process_seconds(pid)}

    idle = await at_rest(read, args.idle_seconds)
    window = CpuWindow(read)
    async with SteadyLoad(
        url, shop.gateway, customer_tokens(shop), None, connections=args.connections
    ) as load:
        warmup = min(args.warmup, 5.0)
        orders = await load.offer(args.rate, args.seconds, warmup=warmup, pay=False, window=window)
        await load.settle(orders, pay=False, within=args.drain)
    return Measured(Figures.of(orders, args.rate, args.seconds), window, idle)


async def caught_up(watch: SinkWatch, args: argparse.Namespace, run: ShopRun) -> None:
    """Wait until the shop has sent every e-mail of the orders placed so far."""
    waited, due = await until_sent(watch, run.orders, args.catch_up_within)
    if due:
        print(
            f"  !! {due} e-mails of the earlier orders still not sent after {waited:.0f} s: "
            "what follows is measured on that backlog"
        )
    elif waited > 1:
        print(f"  (the shop took {waited:.0f} s to send the earlier orders' e-mails)")


async def search(
    shop: RunningShop, watch: SinkWatch, args: argparse.Namespace, run: ShopRun
) -> None:
    print(
        f"search: {args.search_seconds:g} s a step, from {args.search_from:g}/s by "
        f"{args.search_step:g}/s, until a confirmation takes over {SUSTAINED_WITHIN:g} s, "
        "an e-mail is not sent, a checkout or payment fails or over "
        f"{LATE_SHARE:.0%} are not sent on time; then halved {args.search_refine} times"
    )
    print(
        f"  {'rate':>7}{'placed':>8}{'late':>6}{'confirmation ms':>24}{'receipt ms':>18}  verdict"
    )
    print(f"  {'':21}{'p50':>8}{'p99':>8}{'max':>8}{'p50':>9}{'p99':>9}")
    async with _load(shop, watch, args) as load:

        async def kept_up(rate: float) -> bool:
            await caught_up(watch, args, run)
            orders = await load.offer(rate, args.search_seconds)
            run.orders += orders
            await load.settle(orders, pay=True, within=args.drain, hopeless=confirmation_overdue)
            figures = Figures.of(orders, rate, args.search_seconds)
            step = Step(figures, shortfall(figures))
            run.steps.append(step)
            print(_step_line(step), flush=True)
            return step.shortfall is None

        kept, rate = 0.0, args.search_from
        while rate <= args.search_up_to and await kept_up(rate):
            kept, rate = rate, rate + args.search_step
        if rate > args.search_up_to:
            return
        short = rate
        for _ in range(args.search_refine):
            middle = (kept + short) / 2
            if await kept_up(middle):
                kept = middle
            else:
                short = middle


def measure_shop(args: argparse.Namespace, *, span_files: bool, whole: bool) -> ShopRun:
    """One stack, started and stopped: the steady load, then (``whole``) the checkout alone
    and the search."""
    run = ShopRun(span_files)
    with _workdir(args.workdir, span_files) as workdir:
        procfile = PROCFILE if span_files else procfile_without_span_files(PROCFILE, workdir)
        print(f"starting make run's stack on {args.bus}, span files {_on(span_files)} …")
        with (
            running_shop(workdir / "shop", args.bus, procfile) as shop,
            asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner,
            SinkWatch(shop.mail_dir) as watch,
        ):
            runner.run(stock_up(shop.order_database))
            print(f"steady: {args.rate:g}/s, {args.warmup:g} s warm-up, {args.seconds:g} s …")
            run.steady = runner.run(steady(shop, watch, args, run))
            print_measured("steady", run.steady, args)
            if whole and not args.no_checkout_alone:
                runner.run(caught_up(watch, args, run))
                print(f"the checkout alone: {args.rate:g} orders/s, {args.seconds:g} s …")
                with lone_checkout(shop) as lone:
                    run.alone = runner.run(checkout_alone(shop, lone.url, lone.pid, args))
                print_measured("checkout alone", run.alone, args, alone=True)
            if whole and not args.no_search:
                runner.run(search(shop, watch, args, run))
            run.second_emails = watch.copies
    return run


@contextmanager
def _workdir(kept: Path | None, span_files: bool) -> Iterator[Path]:
    if kept is not None:
        own = kept.resolve() / ("span-files" if span_files else "no-span-files")
        own.mkdir(parents=True, exist_ok=True)
        yield own
        return
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as temporary:
        yield Path(temporary)


# --- output -------------------------------------------------------------------------------


def _on(flag: bool) -> str:
    return "on" if flag else "off"


def _ms(p: Percentiles | None, attribute: str, width: int = 8) -> str:
    return f"{'-':>{width}}" if p is None else f"{getattr(p, attribute) * 1000:{width}.0f}"


def _step_line(step: Step) -> str:
    f = step.figures
    c, r = f.order_to_confirmation, f.webhook_to_receipt
    return (
        f"  {f.rate:6g}/s{f.placed:8d}{f.late:6d}{_ms(c, 'p50')}{_ms(c, 'p99')}{_ms(c, 'max')}"
        f"{_ms(r, 'p50', 9)}{_ms(r, 'p99', 9)}  {step.shortfall or 'sustained'}"
    )


def print_measured(
    title: str, measured: Measured, args: argparse.Namespace, *, alone: bool = False
) -> None:
    f = measured.figures
    print(
        f"{title}: {f.offered} orders offered at {f.rate:g}/s over {f.seconds:g} s: "
        f"{f.placed} placed, {f.late} not sent on time (> 100 ms late), "
        f"{sum(f.errors.values())} failed"
        + ("" if alone else f", {f.paid} paid ({args.pay_after:g} s after the 201)")
    )
    rows = [("checkout 201 (from its scheduled time)", f.checkout)]
    if not alone:
        rows += [
            ("order -> confirmation e-mail", f.order_to_confirmation),
            ("webhook -> receipt e-mail", f.webhook_to_receipt),
        ]
    print(f"  {'':40}{'p50 ms':>8}{'p99 ms':>8}{'max ms':>8}{'count':>7}")
    for label, p in rows:
        count = 0 if p is None else p.count
        print(f"  {label:40}{_ms(p, 'p50')}{_ms(p, 'p99')}{_ms(p, 'max')}{count:7d}")
    if not alone and (f.unconfirmed or f.unreceipted):
        print(f"  !! never came: {f.unconfirmed} confirmations, {f.unreceipted} receipts")
    why = None if alone else shortfall(f)
    if why is not None:
        print(
            f"  !! not sustained at {f.rate:g}/s ({why}): the CPU per order below counts only "
            "the work done within the measured seconds"
        )
    for error, times in [*f.errors.most_common(3), *f.payment_errors.most_common(3)]:
        print(f"  !! {times} x {error}")
    print_cpu(measured)


def print_cpu(measured: Measured) -> None:
    cpu, idle = measured.cpu, measured.idle
    per_order, net = measured.per_order_ms(), measured.per_order_ms(net=True)
    print(
        f"  CPU over the measured {cpu.wall:.1f} s ({CORES} cores: {CORES * 100}%), busiest "
        f"first; idle: with no load, over {idle.wall if idle else 0:.0f} s just before; net: "
        "less idle"
    )
    print(f"    {'process':34}{'% core':>8}{'idle':>6}{'ms/order':>10}{'net':>8}")
    for name, _ in sorted(cpu.seconds.items(), key=lambda item: -item[1]):
        idle_share = f"{idle.share(name):6.0%}" if idle else f"{'-':>6}"
        print(
            f"    {name:34}{cpu.share(name):8.0%}{idle_share}"
            f"{per_order.get(name, float('nan')):10.2f}{net.get(name, float('nan')):8.2f}"
        )
    print(
        f"    {'other processes of the machine':34}{cpu.other:8.0%}\n"
        f"    {'machine busy':34}{cpu.machine_busy:8.0%}"
    )


def print_span_file_cost(with_files: Measured, without: Measured) -> None:
    """Each process's CPU per order with span files and without (net of its idle CPU), and
    what they cost."""
    on, off = with_files.per_order_ms(net=True), without.per_order_ms(net=True)
    print("span files: CPU ms per order (net), same load, one stack with them, one without")
    print(f"    {'process':34}{'with':>8}{'without':>9}{'cost':>8}{'share':>8}")
    for name in sorted(on, key=lambda n: -on[n]):
        if name in off:
            cost = on[name] - off[name]
            # A share of next to nothing is noise, however large.
            share = f"{cost / on[name]:8.0%}" if on[name] >= NOTICEABLE_MS else f"{'-':>8}"
            print(f"    {name:34}{on[name]:8.2f}{off[name]:9.2f}{cost:8.2f}{share}")


def _met(flag: bool) -> str:
    return "met" if flag else "MISSED"


def print_summary(args: argparse.Namespace, run: ShopRun, without: ShopRun | None) -> None:
    assert run.steady is not None
    f = run.steady.figures
    goals_of = "" if args.bus == "kafka" else " (goals set for Kafka)"
    print(f"== e2e summary: {args.bus}, span files {_on(run.span_files)}{goals_of} ==")
    c, r, k = f.order_to_confirmation, f.webhook_to_receipt, f.checkout
    print(
        f"  {args.rate:g} orders/s for {args.seconds:g} s: {f.placed} placed, {f.late} late, "
        f"{sum(f.errors.values())} failed, {f.unconfirmed} unconfirmed, {f.unreceipted} "
        "without receipt"
    )
    p99 = c.p99 if c is not None else float("inf")
    print(
        f"  order -> confirmation   p50 {_ms(c, 'p50', 5)} ms  p99 {_ms(c, 'p99', 5)} ms   "
        f"goal p99 <= {GOAL_P99 * 1000:.0f} ms at {GOAL_P99_RATE:g}/s: "
        + (
            _met(p99 <= GOAL_P99)
            if args.rate == GOAL_P99_RATE
            else f"(measured at {args.rate:g}/s)"
        )
    )
    print(f"  webhook -> receipt      p50 {_ms(r, 'p50', 5)} ms  p99 {_ms(r, 'p99', 5)} ms")
    print(f"  checkout 201, shop      p50 {_ms(k, 'p50', 5)} ms  p99 {_ms(k, 'p99', 5)} ms")
    if run.alone is not None:
        a = run.alone.figures.checkout
        print(
            f"  checkout 201, alone     p50 {_ms(a, 'p50', 5)} ms  p99 {_ms(a, 'p99', 5)} ms"
            "   (baseline: the same rate, the rest of the shop idle)"
        )
    if run.steps:
        sustained = run.sustained or 0
        # The search stopped at --search-up-to with every step sustained: a bound, not a limit.
        at_least = "" if run.bounded else "at least "
        print(
            f"  sustained rate          {at_least}{sustained:g}/s (every confirmation within "
            f"{SUSTAINED_WITHIN:g} s)   goal >= {GOAL_SUSTAINED:g}/s: "
            f"{_met(sustained >= GOAL_SUSTAINED)}"
        )
    if run.second_emails:
        print(f"  !! {run.second_emails} e-mails came a second time")
    per_order = run.steady.per_order_ms(net=True)
    busiest = sorted(per_order.items(), key=lambda item: -item[1])[:4]
    print("  CPU ms/order (net)      " + ", ".join(f"{n} {ms:.2f}" for n, ms in busiest))
    if without is not None and without.steady is not None:
        off = without.steady.per_order_ms(net=True)
        costs = {
            n: per_order[n] - off[n]
            for n in per_order
            if n in off and per_order[n] >= NOTICEABLE_MS
        }
        top = sorted(costs.items(), key=lambda item: -item[1])[:3]
        print(
            "  span files cost         "
            + ", ".join(f"{n} {ms:.2f} ms/order ({ms / per_order[n]:.0%})" for n, ms in top)
        )


def _percentiles(p: Percentiles | None) -> dict[str, float] | None:
    if p is None:
        return None
    return {
        "count": p.count,
        "p50_ms": p.p50 * 1000,
        "p95_ms": p.p95 * 1000,
        "p99_ms": p.p99 * 1000,
        "max_ms": p.max * 1000,
    }


def _figures(f: Figures) -> dict[str, Any]:
    return {
        "rate": f.rate,
        "seconds": f.seconds,
        "offered": f.offered,
        "placed": f.placed,
        "late": f.late,
        "failed": sum(f.errors.values()),
        "errors": dict(f.errors),
        "paid": f.paid,
        "payment_errors": dict(f.payment_errors),
        "unconfirmed": f.unconfirmed,
        "unreceipted": f.unreceipted,
        "checkout": _percentiles(f.checkout),
        "order_to_confirmation": _percentiles(f.order_to_confirmation),
        "webhook_to_receipt": _percentiles(f.webhook_to_receipt),
    }


def _measured(m: Measured | None) -> dict[str, Any] | None:
    if m is None:
        return None
    return {
        **_figures(m.figures),
        "cpu": {
            "wall_seconds": m.cpu.wall,
            "seconds": m.cpu.seconds,
            "ms_per_order": m.per_order_ms(),
            "net_ms_per_order": m.per_order_ms(net=True),
            "idle_cores": None if m.idle is None else {n: m.idle.share(n) for n in m.idle.seconds},
            "machine_busy_cores": m.cpu.machine_busy,
            "other_cores": m.cpu.other,
            "cores": CORES,
        },
    }


def _run(run: ShopRun) -> dict[str, Any]:
    return {
        "span_files": run.span_files,
        "steady": _measured(run.steady),
        "checkout_alone": _measured(run.alone),
        "search": [{**_figures(step.figures), "shortfall": step.shortfall} for step in run.steps],
        "sustained_rate": run.sustained,
        "second_emails": run.second_emails,
    }


def _summary(run: ShopRun) -> dict[str, Any]:
    """The figures a report quotes, flat (milliseconds)."""

    def ms(p: Percentiles | None, attribute: str) -> float | None:
        return None if p is None else float(getattr(p, attribute)) * 1000

    steady = run.steady.figures if run.steady is not None else None
    alone = run.alone.figures.checkout if run.alone is not None else None
    confirmation = steady.order_to_confirmation if steady else None
    receipt = steady.webhook_to_receipt if steady else None
    checkout = steady.checkout if steady else None
    return {
        "order_to_confirmation_p50_ms": ms(confirmation, "p50"),
        "order_to_confirmation_p99_ms": ms(confirmation, "p99"),
        "webhook_to_receipt_p50_ms": ms(receipt, "p50"),
        "webhook_to_receipt_p99_ms": ms(receipt, "p99"),
        "checkout_p50_ms": ms(checkout, "p50"),
        "checkout_p99_ms": ms(checkout, "p99"),
        "checkout_alone_p50_ms": ms(alone, "p50"),
        "checkout_alone_p99_ms": ms(alone, "p99"),
        "sustained_rate": run.sustained,
        "cpu_ms_per_order_net": None if run.steady is None else run.steady.per_order_ms(net=True),
    }


def write_json(path: Path, args: argparse.Namespace, run: ShopRun, without: ShopRun | None) -> None:
    steady = run.steady.figures if run.steady is not None else None
    p99 = steady.order_to_confirmation.p99 if steady and steady.order_to_confirmation else None
    document = {
        "bench": "e2e",
        "bus": args.bus,
        "settings": {
            "rate": args.rate,
            "seconds": args.seconds,
            "warmup": args.warmup,
            "pay_after": args.pay_after,
            "connections": args.connections,
            "search_from": args.search_from,
            "search_step": args.search_step,
            "search_refine": args.search_refine,
            "search_seconds": args.search_seconds,
        },
        "goals": {
            "order_to_confirmation_p99_ms": {
                "goal": GOAL_P99 * 1000,
                "at_rate": GOAL_P99_RATE,
                "value": None if p99 is None else p99 * 1000,
                "met": None if p99 is None or args.rate != GOAL_P99_RATE else p99 <= GOAL_P99,
            },
            "sustained_rate": {
                "goal": GOAL_SUSTAINED,
                "within_seconds": SUSTAINED_WITHIN,
                "value": run.sustained,
                "met": None if not run.steps else (run.sustained or 0) >= GOAL_SUSTAINED,
            },
            "bus_the_goals_are_set_for": "kafka",
        },
        "summary": _summary(run),
        "run": _run(run),
        "without_span_files": None if without is None else _run(without),
    }
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(f"figures written to {path}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--bus", choices=["kafka", "sqs"], default=os.environ.get("SHOP_TRANSPORT") or "kafka"
    )
    parser.add_argument("--rate", type=float, default=100.0, help="orders/s offered (steady)")
    parser.add_argument("--seconds", type=float, default=60.0, help="measured, at --rate")
    parser.add_argument("--warmup", type=float, default=10.0, help="at --rate, not measured")
    parser.add_argument(
        "--pay-after", type=float, default=1.0, help="seconds from an order's 201 to its payment"
    )
    parser.add_argument(
        "--drain",
        type=float,
        default=30.0,
        help="seconds to wait, after the last order, for the e-mails still due",
    )
    parser.add_argument(
        "--idle-seconds",
        type=float,
        default=5.0,
        help="before each load, each process's CPU with none (subtracted in the net figures)",
    )
    parser.add_argument(
        "--connections", type=int, default=64, help="checkouts (and payments) at once, at most"
    )
    parser.add_argument("--search-from", type=float, default=25.0)
    parser.add_argument("--search-step", type=float, default=25.0)
    parser.add_argument(
        "--search-refine",
        type=int,
        default=2,
        help="halvings between the last rate sustained and the first not",
    )
    parser.add_argument(
        "--catch-up-within",
        type=float,
        default=300.0,
        help="seconds, at most, to wait for the e-mails of the orders before a load begins",
    )
    parser.add_argument("--search-up-to", type=float, default=1000.0)
    parser.add_argument("--search-seconds", type=float, default=20.0, help="per step")
    parser.add_argument("--no-search", action="store_true", help="skip the search")
    parser.add_argument("--no-checkout-alone", action="store_true", help="skip the checkout alone")
    parser.add_argument(
        "--no-span-files",
        action="store_true",
        help="run the shop without its span files (tracing exporter none)",
    )
    parser.add_argument(
        "--span-files-cost",
        action="store_true",
        help="the steady load on a stack with span files, then on one without, side by side",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="write the figures there")
    parser.add_argument(
        "--workdir", type=Path, help="keep each stack's folder (logs, e-mails, spans) here"
    )
    args = parser.parse_args()
    if args.span_files_cost:
        run = measure_shop(args, span_files=True, whole=False)
        without = measure_shop(args, span_files=False, whole=False)
        assert run.steady is not None
        assert without.steady is not None
        print_span_file_cost(run.steady, without.steady)
    else:
        run = measure_shop(args, span_files=not args.no_span_files, whole=True)
        without = None
    print_summary(args, run, without)
    if args.json is not None:
        write_json(args.json, args, run, without)


if __name__ == "__main__":
    main()
