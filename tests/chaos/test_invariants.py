"""The chaos suite's invariants catch what they claim to: each is shown a reading of a shop
that broke its promise in one way, and must say so (and hold on the same shop unbroken)."""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from pathlib import Path

import pytest

from shop.simulators.gateway import Format

from .invariants import (
    CANCELLATION,
    CONFIRMATION,
    RECEIPT,
    DeadLetter,
    Expectations,
    Invariant,
    Poison,
    Reading,
    SentMail,
    blows_landed,
    check,
    sink_mails,
)
from .load import LoadFigures, Plan, PlannedOrder
from .monkey import ChaosLog

GARBAGE = b"{not json"
POISON = Poison((GARBAGE,), ("notification-service", "payment-service"), "payment-service")


def planned(index: int, plan: Plan) -> PlannedOrder:
    return PlannedOrder(
        index, plan, Format.SHOP, 1, [("SERUM-NIA-30", 2)], "token", id=uuid.uuid4(),
        number=f"SO-{index:04d}",
    )  # fmt: skip


def a_shop_that_kept_its_promises() -> tuple[Reading, Expectations]:
    paid, cancelled, wrong = planned(1, "pay"), planned(2, "cancel"), planned(3, "wrong_amount")
    orders = [paid, cancelled, wrong]
    reading = Reading()
    for order, status, mails in (
        (paid, "paid", [CONFIRMATION, RECEIPT]),
        (cancelled, "cancelled", [CONFIRMATION, CANCELLATION]),
        (wrong, "pending", [CONFIRMATION]),
    ):
        assert order.id is not None
        assert order.number is not None
        reading.statuses[order.id] = status
        reading.numbers[order.id] = order.number
        reading.lines[order.id] = list(order.lines)
        reading.notifications[order.id] = Counter(mails)
        reading.payment_status[order.id] = {"paid": "paid", "cancelled": "expired"}.get(
            status, "pending"
        )
        ids = [f"<{kind}.{order.id}@shop.example>" for kind in mails]
        reading.mails += [
            SentMail(f"{kind} {order.number}", 100.0, message_id)
            for kind, message_id in zip(mails, ids, strict=True)
        ]
        reading.recorded_message_ids |= set(ids)
    assert paid.id is not None
    assert wrong.id is not None
    reading.paid_transitions[paid.id] = 1
    reading.payments_applied[paid.id] = 1
    # 100 at the start; 3 orders of 2 taken, the cancelled order's 2 released.
    reading.stock = {"SERUM-NIA-30": 96}
    reading.unsent = {"order-service": 0, "payment-service": 0}
    reading.dead_letters = [
        DeadLetter("notification-service", None, "garbage-0", GARBAGE, "undecodable"),
        DeadLetter("payment-service", None, "garbage-0", GARBAGE, "undecodable"),
        DeadLetter("payment-service", "payment.process", str(wrong.id), b"{}", "amount"),
    ]
    return reading, Expectations(orders, {"SERUM-NIA-30": 100}, POISON, [])


def broken(claim: str, invariants: list[Invariant]) -> list[str]:
    """The claims that do not hold, ``claim`` among them (a breach may break others too:
    an order lost is also an order whose status is wrong)."""
    failing = [invariant.claim for invariant in invariants if not invariant.holds]
    assert any(claim in failed for failed in failing), f"{claim!r} held: {invariants}"
    return failing


def test_every_invariant_holds_on_a_shop_that_kept_its_promises() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    assert [i.claim for i in check(reading, expectations) if not i.holds] == []


def test_an_email_recorded_as_sent_that_never_reached_the_sink_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.mails.pop()
    assert "each recorded e-mail" in " ".join(broken("sink", check(reading, expectations)))


def test_an_email_in_the_sink_that_was_never_recorded_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.mails.append(SentMail("stray", 100.0, "<stray@shop.example>"))
    assert "each recorded e-mail" in " ".join(broken("sink", check(reading, expectations)))


def test_an_order_lost_after_its_201_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    lost = expectations.orders[0].id
    del reading.statuses[lost]  # type: ignore[arg-type]
    assert "every committed order is kept, once" in broken("kept", check(reading, expectations))


def test_a_second_order_for_one_idempotency_key_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    twin = uuid.uuid4()
    reading.statuses[twin] = "pending"
    reading.numbers[twin] = "SO-9999"
    broken("every committed order is kept, once", check(reading, expectations))


def test_an_order_paid_twice_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    paid = expectations.orders[0].id
    reading.paid_transitions[paid] = 2  # type: ignore[index]
    broken("one paid transition per valid payment", check(reading, expectations))


def test_a_payment_applied_twice_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.payments_applied[expectations.orders[0].id] = 2  # type: ignore[index]
    broken("no payment applied twice", check(reading, expectations))


def test_a_wrong_amount_that_was_applied_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    wrong = expectations.orders[2].id
    reading.payments_applied[wrong] = 1  # type: ignore[index]
    reading.payment_status[wrong] = "paid"  # type: ignore[index]
    failing = broken("no payment applied twice", check(reading, expectations))
    assert "each payment ends as its order says" in failing


def test_an_order_left_pending_after_its_payment_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.statuses[expectations.orders[0].id] = "pending"  # type: ignore[index]
    broken("each order ends as its payments say", check(reading, expectations))


def test_a_cancelled_orders_payment_left_pending_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.payment_status[expectations.orders[1].id] = "pending"  # type: ignore[index]
    assert broken("each payment ends as its order says", check(reading, expectations)) == [
        "each payment ends as its order says"
    ]


def test_a_dead_letter_of_another_type_for_a_poisoned_order_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    wrong = reading.dead_letters[-1]
    reading.dead_letters.append(DeadLetter(wrong.group, "order.created", wrong.key, b"{}", "x"))
    broken("dead letters: the poisoned messages only", check(reading, expectations))


@pytest.mark.parametrize("missing", [CONFIRMATION, RECEIPT])
def test_a_missing_email_is_caught(missing: str) -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    del reading.notifications[expectations.orders[0].id][missing]  # type: ignore[index]
    broken("e-mails recorded exactly once each", check(reading, expectations))


def test_a_second_email_with_no_kill_between_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.mails.append(dataclasses.replace(reading.mails[0], received_at=130.0))
    broken("a duplicate e-mail only across a kill", check(reading, expectations))


def test_a_second_email_across_a_kill_between_send_and_mark_is_allowed_and_counted() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.mails.append(dataclasses.replace(reading.mails[0], received_at=130.0))
    expectations.send_kills.append(("e-mail sent, not marked", 101.0))
    [duplicates] = [i for i in check(reading, expectations) if "duplicate" in i.claim]
    assert duplicates.holds
    assert duplicates.found == "1 duplicate(s): 1 (e-mail sent, not marked)"


def test_a_second_email_sent_before_the_kill_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.mails.append(
        dataclasses.replace(reading.mails[0], received_at=100.5)
    )  # the first at 100 s
    expectations.send_kills.append(("e-mail sent, not marked", 103.0))
    broken("a duplicate e-mail only across a kill", check(reading, expectations))


def test_a_first_email_long_after_a_notification_workers_kill_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.mails.append(dataclasses.replace(reading.mails[0], received_at=130.0))
    expectations.send_kills.append(("e-mail sent, not marked", 91.0))  # 9 s before the first
    broken("a duplicate e-mail only across a kill", check(reading, expectations))


def test_a_duplicate_behind_a_relays_kill_is_allowed_a_while_after_it() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.mails.append(dataclasses.replace(reading.mails[0], received_at=130.0))
    expectations.send_kills.append(("relay published, not marked", 80.0))  # 20 s before
    assert all(i.holds for i in check(reading, expectations))


def test_a_second_email_long_after_an_unrelated_kill_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.mails.append(dataclasses.replace(reading.mails[0], received_at=300.0))
    expectations.send_kills.append(("e-mail sent, not marked", 250.0))  # 150 s after the first
    broken("a duplicate e-mail only across a kill", check(reading, expectations))


def test_a_dead_letter_nobody_poisoned_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    stray = DeadLetter("order-service", "payment.received", "x", b"{}", "boom")
    reading.dead_letters.append(stray)
    broken("dead letters: the poisoned messages only", check(reading, expectations))


def test_a_poisoned_message_missing_from_the_dead_letters_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.dead_letters.pop()
    broken("dead letters: the poisoned messages only", check(reading, expectations))


def test_a_repeated_dead_letter_of_a_poisoned_message_is_allowed() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.dead_letters.append(reading.dead_letters[-1])
    assert all(i.holds for i in check(reading, expectations))


def test_stock_not_released_by_a_cancellation_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading.stock["SERUM-NIA-30"] -= 2
    broken("stock = initial - sold + released", check(reading, expectations))


def test_an_outbox_that_did_not_drain_is_caught() -> None:
    reading, expectations = a_shop_that_kept_its_promises()
    reading = dataclasses.replace(reading, unsent={"order-service": 3, "payment-service": 0})
    broken("the outboxes drained", check(reading, expectations))


def test_a_long_message_id_folded_in_the_sinks_file_reads_as_sent(tmp_path: Path) -> None:
    message_id = f"<payment_receipt.{uuid.uuid4()}@skincare-shop.example>"
    (tmp_path / "00001.eml").write_bytes(
        f"Subject: Receipt\r\nMessage-ID:\r\n {message_id}\r\n\r\nhi\r\n".encode()
    )
    [mail] = sink_mails(tmp_path)
    assert mail.message_id == message_id


def blows_that_landed() -> tuple[ChaosLog, LoadFigures, Reading]:
    log = ChaosLog(
        backlog_before_freeze=0,
        backlog_peak_in_freeze=40,
        api_kills=[("order-api", 2), ("payment-api", 1)],
        sigterm_exits=[("order-worker-1", 0)],
    )
    reading, _ = a_shop_that_kept_its_promises()
    return log, LoadFigures(), reading


def blows_broken(claim: str, log: ChaosLog, figures: LoadFigures, reading: Reading) -> None:
    failing = [i.claim for i in blows_landed(log, figures, reading) if not i.holds]
    assert failing == [claim], failing


def test_the_blows_invariants_hold_when_every_blow_landed_and_was_taken() -> None:
    assert all(invariant.holds for invariant in blows_landed(*blows_that_landed()))


def test_an_api_killed_with_no_request_under_way_is_caught() -> None:
    log, figures, reading = blows_that_landed()
    log.api_kills.append(("order-api", 0))
    blows_broken("each API killed mid-request cut a request under way", log, figures, reading)


def test_a_5xx_from_a_live_api_is_caught() -> None:
    log, figures, reading = blows_that_landed()
    figures.server_errors.append("order-api: 500 Internal Server Error")
    blows_broken("no API answered 5xx (a killed one's cut requests aside)", log, figures, reading)


def test_a_worker_that_did_not_exit_0_on_sigterm_is_caught() -> None:
    log, figures, reading = blows_that_landed()
    log.sigterm_exits.append(("payment-worker-2", 1))
    blows_broken("every SIGTERM drained and exited 0", log, figures, reading)


def test_a_process_that_exited_by_itself_is_caught() -> None:
    log, figures, reading = blows_that_landed()
    log.self_exits["notification-worker-1"] += 1
    blows_broken("no process exited by itself", log, figures, reading)


def test_a_freeze_the_outbox_did_not_feel_is_caught() -> None:
    log, figures, reading = blows_that_landed()
    log.backlog_peak_in_freeze = log.backlog_before_freeze
    blows_broken("the outbox grew while the broker was frozen, then drained", log, figures, reading)
