"""What must hold once the shop has drained after the chaos, read from the services' own
databases, the SMTP sink's folder and the dead-letter queues, and checked order by order
against what the load asked for:

- nothing committed is lost: every order the load placed is there, and no other;
- each valid payment moves its order to ``paid`` exactly once (one ``OrderPaid`` in its
  outbox) and is applied exactly once (one ``PaymentReceived``); nothing else is paid;
- an order not paid in its window is cancelled and its payment expired; one paid after its
  window is cancelled all the same and the money refunded at the gateway, once and in
  full; nothing else is refunded;
- every order has its e-mails recorded exactly once (confirmation; receipt or cancellation);
- each recorded e-mail reached the SMTP sink, and the sink holds no e-mail that was not
  recorded (by Message-ID, which is stable for an e-mail: its copies share it);
- each second copy of an e-mail is explained by a blow of its own that left that very
  e-mail sent and not recorded, as the evidence shows (a notification worker killed while
  its log shows the send open, Postgres stopped under an open send, the provider dropping
  the connection after taking that e-mail): one copy per e-mail a blow interrupted;
- the dead-letter queues hold the deliberately poisoned messages and nothing else;
- stock = initial - sold + released, for every product;
- the outboxes have drained."""

from __future__ import annotations

import dataclasses
import email.policy
import os
import re
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from email.parser import BytesHeaderParser
from pathlib import Path
from typing import TYPE_CHECKING, Final

import asyncpg

from .load import LoadFigures, PlannedOrder

if TYPE_CHECKING:  # the monkey reads the outbox with this module's unsent()
    from .monkey import ChaosLog

CONFIRMATION: Final = "order_confirmation"
RECEIPT: Final = "payment_receipt"
CANCELLATION: Final = "order_cancellation"
REVERSAL: Final = "payment_reversal"
EXPECTED_STATUS: Final = {
    "pay": "paid",
    "cancel": "cancelled",
    "wrong_amount": "cancelled",
    "expire": "cancelled",
    "late": "cancelled",
}
EXPECTED_PAYMENT: Final = {
    "pay": "paid",
    "cancel": "expired",
    "wrong_amount": "expired",
    "expire": "expired",
    "late": "refunded",
}
"""A wrong amount leaves the payment pending (and flagged) until its window closes: it then
expires like an unpaid one, the money taken left for a person. A payment after the window
is refunded."""
EXPECTED_EMAILS: Final = {
    "pay": {CONFIRMATION, RECEIPT},
    "cancel": {CONFIRMATION, CANCELLATION},
    "wrong_amount": {CONFIRMATION, CANCELLATION},
    "expire": {CONFIRMATION, CANCELLATION},
    "late": {CONFIRMATION, CANCELLATION, REVERSAL},
}


@dataclass(frozen=True)
class SentMail:
    subject: str
    received_at: float
    """When the sink wrote it (the file's modification time)."""
    message_id: str


@dataclass(frozen=True)
class SendBlow:
    """A blow that may leave an e-mail sent and not recorded, with its evidence: the
    e-mails it found being sent (by the local part of their Message-ID)."""

    what: str
    """``notification worker killed``, ``database restarted``, ``provider dropped its reply``,
    ``handler timed out``."""
    target: str
    at: float
    """Wall-clock time."""
    open_sends: frozenset[str]


@dataclass(frozen=True)
class DeadLetter:
    group: str
    message_type: str | None
    key: str | None
    body: bytes
    error: str


@dataclass
class Reading:
    """The shop's state, read once it has drained."""

    statuses: dict[uuid.UUID, str] = field(default_factory=dict)
    numbers: dict[uuid.UUID, str] = field(default_factory=dict)
    lines: dict[uuid.UUID, list[tuple[str, int]]] = field(default_factory=dict)
    stock: dict[str, int] = field(default_factory=dict)
    paid_transitions: Counter[uuid.UUID] = field(default_factory=Counter)
    """``OrderPaid`` rows per order in order-service's outbox: one per transition."""
    payments_applied: Counter[uuid.UUID] = field(default_factory=Counter)
    """``PaymentReceived`` rows per order in payment-service's outbox."""
    payment_status: dict[uuid.UUID, str] = field(default_factory=dict)
    notifications: dict[uuid.UUID, Counter[str]] = field(default_factory=dict)
    recorded_message_ids: set[str] = field(default_factory=set)
    """The Message-IDs of the e-mails notification-service recorded as sent."""
    unsent: dict[str, int] = field(default_factory=dict)
    mails: list[SentMail] = field(default_factory=list)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    refunds: dict[uuid.UUID, list[int]] = field(default_factory=dict)
    """The amounts the gateway's ledger lists as refunded, by order (orders it charged)."""


@dataclass(frozen=True)
class Invariant:
    claim: str
    expected: str
    found: str
    holds: bool
    examples: tuple[str, ...] = ()
    awaits_drain: bool = True
    """It comes to hold as the shop drains (the drain waits for it); False for one that the
    drain cannot change, or that is read once the drain is over."""


@dataclass(frozen=True)
class Poison:
    """Messages put on the bus on purpose, each bound for the dead-letter queues."""

    garbage_bodies: tuple[bytes, ...]
    garbage_groups: tuple[str, ...]
    """The consumer groups of the topic the garbage went to: one dead letter each."""
    wrong_amount_group: str


async def read(order_db: str, payment_db: str, notification_db: str, mail_dir: Path) -> Reading:
    reading = Reading()
    orders = await asyncpg.connect(order_db)
    try:
        for row in await orders.fetch("SELECT id, number, status FROM orders"):
            reading.statuses[row["id"]] = row["status"]
            reading.numbers[row["id"]] = row["number"]
        for row in await orders.fetch("SELECT order_id, sku, quantity FROM order_items"):
            reading.lines.setdefault(row["order_id"], []).append((row["sku"], row["quantity"]))
        reading.stock = {r["sku"]: r["stock"] for r in await orders.fetch("SELECT * FROM products")}
        reading.paid_transitions = await _per_order(orders, "order.paid")
        reading.unsent["order-service"] = await unsent(orders, due_for=RELAY_GRACE)
    finally:
        await orders.close()
    payments = await asyncpg.connect(payment_db)
    try:
        reading.payments_applied = await _per_order(payments, "payment.received")
        for row in await payments.fetch("SELECT order_id, status FROM payments"):
            reading.payment_status[row["order_id"]] = row["status"]
        reading.unsent["payment-service"] = await unsent(payments, due_for=RELAY_GRACE)
    finally:
        await payments.close()
    notifications = await asyncpg.connect(notification_db)
    try:
        rows = await notifications.fetch(
            "SELECT order_id, kind, message_id FROM order_notifications"
        )
        for row in rows:
            reading.notifications.setdefault(row["order_id"], Counter())[row["kind"]] += 1
            reading.recorded_message_ids.add(row["message_id"])
    finally:
        await notifications.close()
    reading.mails = list(sink_mails(mail_dir))
    return reading


async def _per_order(connection: asyncpg.Connection, message_type: str) -> Counter[uuid.UUID]:
    # Sent rows stay in the outbox for the retention period (days): each is one event.
    rows = await connection.fetch(
        "SELECT (convert_from(body, 'UTF8')::jsonb -> 'payload' ->> 'order_id')::uuid AS id "
        "FROM outbox WHERE message_type = $1",
        message_type,
    )
    return Counter(row["id"] for row in rows)


RELAY_GRACE: Final = 10.0
"""Seconds a row may be due and unsent without being a backlog: the relay looks for rows
that fell due once a second, later on a loaded machine."""


async def unsent(connection: asyncpg.Connection, *, due_for: float = 0.0) -> int:
    """Outbox rows due to be published (for at least ``due_for`` seconds) and not yet
    published."""
    return int(
        await connection.fetchval(
            "SELECT count(*) FROM outbox WHERE published_at IS NULL "
            "AND coalesce(due_at, created_at) <= now() - $1 * interval '1 second'",
            due_for,
        )
    )


_HEADERS_END: Final = re.compile(rb"\r?\n\r?\n")
_HEAD_BYTES: Final = 64 * 1024
_sink_seen: dict[Path, SentMail] = {}
"""Mails read once each: the sink never changes a file it finished, and a drain reads
thousands of them (receipts with their PDFs) every round. Keyed by path: each run's sink
numbers its files in a folder of the run's own, so a name is never used twice."""


def sink_mails(mail_dir: Path) -> Iterable[SentMail]:
    for path in mail_dir.glob("*.eml"):
        mail = _sink_seen.get(path)
        if mail is None:
            mail, complete = _sink_mail(path)
            if complete:
                _sink_seen[path] = mail
        yield mail


def _sink_mail(path: Path) -> tuple[SentMail, bool]:
    """The mail's headers alone (never its body), and whether they were all written yet."""
    with path.open("rb") as file:
        head = file.read(_HEAD_BYTES)
        received_at = os.fstat(file.fileno()).st_mtime
    end = _HEADERS_END.search(head)
    headers = BytesHeaderParser(policy=email.policy.default).parsebytes(
        head[: end.end()] if end else head
    )
    # A long Message-ID is folded onto its own line: unfolded, it keeps a leading space.
    message_id = str(headers["Message-ID"]).strip()
    return SentMail(str(headers["Subject"]), received_at, message_id), end is not None


def _holds(claim: str, expected: str, wrong: list[str], found: str | None = None) -> Invariant:
    return Invariant(
        claim, expected, found or (f"{len(wrong)} wrong" if wrong else expected), not wrong,
        tuple(wrong[:5]),
    )  # fmt: skip


@dataclass
class Expectations:
    """What the run asked of the shop, to check its reading against."""

    orders: list[PlannedOrder]
    initial_stock: dict[str, int]
    poison: Poison
    send_blows: list[SendBlow]
    """The blows that may have come between a send and its mark, with their evidence."""

    @property
    def placed(self) -> dict[uuid.UUID, PlannedOrder]:
        return {order.id: order for order in self.orders if order.id is not None}


def check(reading: Reading, expectations: Expectations) -> list[Invariant]:
    orders, initial_stock = expectations.orders, expectations.initial_stock
    placed = expectations.placed
    results = []

    lost = [f"order {o.index} never answered 201" for o in orders if o.id is None]
    lost += [f"{i} placed but not in the database" for i in placed if i not in reading.statuses]
    unknown = [
        f"{reading.numbers[i]} committed, never placed" for i in reading.statuses if i not in placed
    ]
    results.append(
        _holds(
            "every committed order is kept, once",
            f"{len(orders)} orders",
            lost + unknown,
            f"{len(reading.statuses)} orders" if not lost + unknown else None,
        )
    )

    wrong_status = [
        f"{o.number}: {reading.statuses.get(i)} (planned {o.plan})"
        for i, o in placed.items()
        if reading.statuses.get(i) != EXPECTED_STATUS[o.plan]
    ]
    by_plan = Counter(o.plan for o in placed.values())
    results.append(
        _holds(
            "each order ends as its payments say",
            ", ".join(f"{n} {EXPECTED_STATUS[p]}" for p, n in sorted(by_plan.items())),
            wrong_status,
        )
    )

    valid = {i for i, o in placed.items() if o.plan == "pay"}
    transitions = [
        f"{o.number}: {reading.paid_transitions[i]} paid transition(s)"
        for i, o in placed.items()
        if reading.paid_transitions[i] != (1 if i in valid else 0)
    ]
    results.append(
        _holds(
            "one paid transition per valid payment",
            f"{len(valid)} transitions",
            transitions,
            f"{sum(reading.paid_transitions.values())} transitions" if not transitions else None,
        )
    )

    applied = [
        f"{o.number}: applied {reading.payments_applied[i]} time(s)"
        for i, o in placed.items()
        if reading.payments_applied[i] != (1 if i in valid else 0)
    ]
    results.append(
        _holds(
            "no payment applied twice (nor a wrong one once)",
            f"{len(valid)} applied once",
            applied,
            f"{sum(reading.payments_applied.values())} applied" if not applied else None,
        )
    )
    payments = [
        f"{o.number}: {reading.payment_status.get(i)} (planned {o.plan})"
        for i, o in placed.items()
        if reading.payment_status.get(i) != EXPECTED_PAYMENT[o.plan]
    ]
    results.append(
        _holds(
            "each payment ends as its order says",
            ", ".join(f"{n} {EXPECTED_PAYMENT[p]}" for p, n in sorted(by_plan.items())),
            payments,
        )
    )

    late = {i for i, o in placed.items() if o.plan == "late"}
    refunds = [
        f"{o.number}: refunded {reading.refunds.get(i, [])} (planned {o.plan})"
        for i, o in placed.items()
        if reading.refunds.get(i, []) != ([o.due.amount] if i in late and o.due else [])
    ]
    results.append(
        _holds(
            "each late payment refunded once, in full, at the gateway; nothing else",
            f"{len(late)} refunds",
            refunds,
        )
    )

    mails = []
    for i, o in placed.items():
        recorded = reading.notifications.get(i, Counter())
        expected = EXPECTED_EMAILS[o.plan]
        if set(recorded) != expected or any(n != 1 for n in recorded.values()):
            mails.append(f"{o.number}: {dict(recorded)} (planned {o.plan})")
    results.append(
        _holds(
            "e-mails recorded exactly once each",
            f"{sum(len(EXPECTED_EMAILS[o.plan]) for o in placed.values())} e-mails",
            mails,
        )
    )

    in_sink = {mail.message_id for mail in reading.mails}
    unsent_records = sorted(reading.recorded_message_ids - in_sink)
    unrecorded = sorted(in_sink - reading.recorded_message_ids)
    results.append(
        _holds(
            "each recorded e-mail reached the sink, and no other did",
            f"{len(reading.recorded_message_ids)} Message-IDs",
            [f"recorded, not in the sink: {m}" for m in unsent_records]
            + [f"in the sink, not recorded: {m}" for m in unrecorded],
            f"{len(in_sink)} in the sink" if not unsent_records + unrecorded else None,
        )
    )
    results.append(_duplicates(reading.mails, expectations.send_blows))
    results.append(check_dead_letters(reading, expectations))

    released = Counter[str]()
    taken = Counter[str]()
    for i, order_lines in reading.lines.items():
        for sku, quantity in order_lines:
            taken[sku] += quantity
            if reading.statuses.get(i) == "cancelled":
                released[sku] += quantity
    stock = [
        f"{sku}: {reading.stock.get(sku)} != {start} - {taken[sku]} + {released[sku]}"
        for sku, start in initial_stock.items()
        if reading.stock.get(sku) != start - taken[sku] + released[sku]
    ]
    results.append(
        _holds(
            "stock = initial - sold + released",
            f"{len(initial_stock)} products",
            stock,
            f"{sum(taken.values())} taken, {sum(released.values())} released"
            if not stock
            else None,
        )
    )

    backlog = [f"{service}: {n} unsent" for service, n in reading.unsent.items() if n]
    results.append(_holds("the outboxes drained", "0 unsent", backlog))
    return results


def local_part(message_id: str) -> str:
    """``order_confirmation.<order id>`` of ``<order_confirmation.<order id>@shop.example>``."""
    return message_id.strip().strip("<>").rpartition("@")[0]


def _duplicates(mails: list[SentMail], blows: list[SendBlow]) -> Invariant:
    """Every copy of an e-mail beyond its first, each explained by a blow of its own that
    found that very e-mail being sent: an e-mail sent k + 1 times needs k such blows. A blow
    explains at most one copy of each e-mail it interrupted (a kill with three sends under
    way may leave three e-mails sent twice, never one e-mail sent thrice)."""
    copies = Counter(mail.message_id for mail in mails)
    causes = Counter[str]()
    unexplained = []
    for message_id, n in sorted(copies.items()):
        if n == 1:
            continue
        wanted = local_part(message_id)
        found = [blow for blow in blows if wanted in blow.open_sends]
        causes.update(blow.what for blow in found[: n - 1])
        if len(found) < n - 1:
            unexplained.append(
                f"{message_id}: sent {n} times, {len(found)} blow(s) found it being sent"
            )
    duplicates = sum(n - 1 for n in copies.values())
    explained = ", ".join(f"{n} ({cause})" for cause, n in sorted(causes.items())) or "none"
    return Invariant(
        "each duplicate e-mail explained by a blow of its own",
        f"each by a blow that found it being sent ({len(blows)} such blow(s))",
        f"{duplicates} duplicate(s): {explained}",
        not unexplained,
        tuple(unexplained[:5]),
        awaits_drain=False,
    )


def check_dead_letters(reading: Reading, expectations: Expectations) -> Invariant:
    """Each poisoned message in the dead-letter queue of each group it reached, and nothing
    else there. A message may be there twice: a consumer keeps the dead letter first and
    settles the original after, so a crash in between repeats it (never loses it)."""
    letters, poison = reading.dead_letters, expectations.poison
    wrong_orders = {str(i) for i, o in expectations.placed.items() if o.plan == "wrong_amount"}
    expected = {(group, body) for group in poison.garbage_groups for body in poison.garbage_bodies}
    expected |= {(poison.wrong_amount_group, key.encode()) for key in wrong_orders}
    found: set[tuple[str, bytes]] = set()
    stray = []
    for letter in letters:
        if letter.body in poison.garbage_bodies and letter.group in poison.garbage_groups:
            found.add((letter.group, letter.body))
        elif (
            letter.group == poison.wrong_amount_group
            and letter.message_type == "payment.process"
            and letter.key in wrong_orders
        ):
            found.add((letter.group, letter.key.encode()))
        else:
            stray.append(f"{letter.group}: {letter.message_type} {letter.key}: {letter.error}")
    missing = [f"{group}: {what!r} missing" for group, what in sorted(expected - found)]
    verdict = _holds(
        "dead letters: the poisoned messages only",
        f"{len(expected)} poisoned",
        stray + missing,
        f"{len(found)} poisoned, in {len(letters)} letters" if not stray + missing else None,
    )
    return dataclasses.replace(verdict, awaits_drain=False)


def table(invariants: list[Invariant], figures: list[tuple[str, str]]) -> str:
    """The invariants and the run's figures, as a plain-text table."""
    width = max(len(i.claim) for i in invariants)
    lines = [f"{'invariant':<{width}}  ok   expected / found"]
    for invariant in invariants:
        mark = "yes" if invariant.holds else "NO "
        lines.append(
            f"{invariant.claim:<{width}}  {mark}  {invariant.expected} / {invariant.found}"
        )
        lines += [f"{'':<{width}}       {example}" for example in invariant.examples]
    lines.append("")
    name_width = max(len(name) for name, _ in figures)
    lines += [f"{name:<{name_width}}  {value}" for name, value in figures]
    return "\n".join(lines)


DATABASE_STEP_WITHIN: Final = 30.0
"""How long Postgres' fast shutdown, and then its start, may each take for the blow to be a
restart (its down time aside): a loaded machine takes seconds over its shutdown checkpoint
and its recovery, which only lengthens the outage the shop rides through; past this, it
hung. A shutdown past it is ended as a crash (and the blow fails), a start past it fails."""


UNAVAILABLE_AFTER: Final = 10.0
"""How long after Postgres is back a request may still be answered 503: its API's pool
drops the dead connections as it meets them."""


def _unavailable_only_while_away(log: ChaosLog, figures: LoadFigures) -> Invariant:
    away = log.database_away
    # Each 503 came between its request's leaving and its answer's reading: it is the
    # outage's when that span meets the time Postgres was away (and a moment after).
    wrong = [
        f"{api}: 503 between {sent:.1f} and {read:.1f}"
        for api, sent, read in figures.unavailable
        if away is None or read < away[0] or sent > away[1] + UNAVAILABLE_AFTER
    ]
    return Invariant(
        "a 503 only while Postgres was away (a moment after it too)",
        "none outside",
        f"{len(figures.unavailable)} 503(s), {len(wrong)} outside",
        not wrong,
        tuple(wrong[:5]),
        awaits_drain=False,
    )


def _hung_sends_retried(log: ChaosLog, reading: Reading) -> Invariant:
    hung = set(log.hung_sends)
    in_sink = {mail.message_id for mail in reading.mails}
    wrong = [f"{message_id}: never sent after the hang" for message_id in sorted(hung - in_sink)]
    if not hung:
        wrong.append("the provider hung on no message")
    if log.handler_timeouts < len(hung):
        wrong.append(f"{log.handler_timeouts} handler timeout(s) for {len(hung)} hung send(s)")
    return Invariant(
        "each send the provider hung on timed out, then went",
        "≥ 1 hung, each timed out and sent",
        f"{len(hung)} hung, {log.handler_timeouts} timed out",
        not wrong,
        tuple(wrong[:5]),
        awaits_drain=False,
    )


def blows_landed(log: ChaosLog, figures: LoadFigures, reading: Reading) -> list[Invariant]:
    """The chaos did what it says, and the shop took it: each API died with a request under
    way, and a live one never answered 5xx; each worker asked to stop drained and exited 0,
    none crashed by itself (Postgres' restart included); the frozen broker held the outbox
    back until it thawed; each e-mail the provider hung on was given up at its handler's
    timeout and sent after; the provider did drop a reply after taking an e-mail."""
    uncut = [f"{api}: killed with no request under way" for api, cut in log.api_kills if not cut]
    sigterms = [f"{name} exited {code}" for name, code in log.sigterm_exits if code != 0]
    backlog = (
        f"{log.backlog_before_freeze} → {log.backlog_peak_in_freeze} → "
        f"{reading.unsent.get('order-service')}"
    )
    return [
        Invariant(
            "each API killed mid-request cut a request under way",
            f"{len(log.api_kills)} kill(s), each ≥ 1 cut",
            ", ".join(f"{api} {cut}" for api, cut in log.api_kills) + " cut",
            not uncut,
            tuple(uncut),
            awaits_drain=False,
        ),
        Invariant(
            "no API answered 5xx but 503 (a killed one's cut requests aside)",
            "0",
            str(len(figures.server_errors)),
            not figures.server_errors,
            tuple(figures.server_errors[:5]),
            awaits_drain=False,
        ),
        Invariant(
            "every SIGTERM drained and exited 0",
            f"{len(log.sigterm_exits)} x 0",
            f"{len(log.sigterm_exits) - len(sigterms)} x 0",
            not sigterms,
            tuple(sigterms),
            awaits_drain=False,
        ),
        Invariant(
            "no process exited by itself",
            "0",
            str(sum(log.self_exits.values())),
            not log.self_exits,
            tuple(f"{name} x{n}" for name, n in log.self_exits.items()),
            awaits_drain=False,
        ),
        _unavailable_only_while_away(log, figures),
        Invariant(
            "Postgres was down ≥ 5 s, stopped by its fast shutdown (never killed), "
            f"started within {DATABASE_STEP_WITHIN:g} s",
            f"≥ 5 s; fast shutdown; start ≤ {DATABASE_STEP_WITHIN:g} s",
            f"{log.database_down:.1f} s ("
            + ("killed" if log.database_killed else "fast shutdown")
            + f" after {log.database_stopping:.1f} s, start {log.database_starting:.1f} s)",
            log.database_down >= 5
            and not log.database_killed
            and log.database_starting <= DATABASE_STEP_WITHIN,
            awaits_drain=False,
        ),
        _hung_sends_retried(log, reading),
        Invariant(
            "the provider dropped its reply after taking an e-mail",
            "≥ 1",
            str(log.provider_mishaps["dropped reply"]),
            log.provider_mishaps["dropped reply"] >= 1,
            awaits_drain=False,
        ),
        Invariant(
            "the outbox grew while the broker was frozen, then drained",
            "before < peak, then 0",
            backlog,
            log.backlog_peak_in_freeze > log.backlog_before_freeze
            and reading.unsent.get("order-service") == 0,
            awaits_drain=False,
        ),
    ]
