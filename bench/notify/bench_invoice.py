"""The CPU a payment receipt costs the notification worker, part by part, without SMTP, bus
or database: the invoice PDF (``domain/invoice.py``) for a typical order and a long one,
then what the receipt does besides (its words, the MIME message with the PDF attached and
base64-encoded, the bytes sent), next to an order confirmation.

    python bench/notify/bench_invoice.py [--rounds N] [--invoices N] [--against REV]

``--against REV`` renders the same invoices, in turns with the current renderer, with the
invoice module as it was at the git revision REV (read with ``git show``, loaded beside the
current one): a before and after measured in one run, on the same machine at the same time.
CPU is this process's (``time.process_time``), so what other work on the machine takes is
not counted in; the load average at the start is printed, as the figures drift with it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from baseline_sender import order_email

from shop.contracts import OrderCreated, OrderPaid
from shop.contracts.examples import examples
from shop.notification.adapters.smtp import flattened, mime_message
from shop.notification.domain import invoice
from shop.notification.domain.emails import CONFIRMATION, RECEIPT
from shop.notification.domain.rendering import EmailRenderer, ShopIdentity

REPO: Final = Path(__file__).resolve().parents[2]
INVOICE_MODULE: Final = "services/notification/src/shop/notification/domain/invoice.py"
SHOP: Final = ShopIdentity(
    name="Glow Lab",
    address="Jl. Kemang Raya 12, Jakarta Selatan 12730",
    support_email="help@glowlab.example",
    website="https://glowlab.example",
)
SENDER: Final = "Glow Lab <orders@glowlab.example>"
DOMAIN: Final = "glowlab.example"

Render = Callable[[OrderPaid, ShopIdentity], bytes]


def paid_order(lines: list[dict[str, Any]]) -> OrderPaid:
    total = sum(line["quantity"] * line["unit_price"] for line in lines)
    example = examples()[OrderPaid].model_dump()
    return OrderPaid.model_validate({**example, "lines": lines, "total": total})


def orders() -> dict[str, OrderPaid]:
    """The contract's example (two lines, what bench_notify.py sends), three lines with a
    name long enough to wrap, and a forty-line order over two pages."""
    example = examples()[OrderPaid]
    three = [line.model_dump() for line in example.lines] + [
        {
            "sku": "TONER-AHA-BHA-150",
            "name": "Exfoliating Toner with 7% Glycolic Acid, 2% Salicylic Acid and Centella "
            "Asiatica Extract 150 ml",
            "quantity": 3,
            "unit_price": 139000,
        }
    ]
    forty = [
        {"sku": f"MASK-{i:02d}", "name": f"Sheet Mask no. {i}", "quantity": 1, "unit_price": 25000}
        for i in range(1, 41)
    ]
    return {
        "2 lines": example,
        "3 lines, one wrapped": paid_order(three),
        "40 lines, 2 pages": paid_order(forty),
    }


def renderer_at(revision: str) -> Render:
    """``render_invoice`` as the invoice module had it at ``revision``."""
    source = subprocess.run(
        ["git", "show", f"{revision}:{INVOICE_MODULE}"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType(f"invoice_at_{revision}")
    sys.modules[module.__name__] = module
    exec(compile(source, f"{revision}:{INVOICE_MODULE}", "exec"), module.__dict__)
    render: Render = module.render_invoice
    return render


def cpu_ms(work: Callable[[], object], times: int) -> float:
    """CPU milliseconds one call of ``work`` takes, over ``times`` calls."""
    start = time.process_time()
    for _ in range(times):
        work()
    return (time.process_time() - start) / times * 1000


def receipt_parts(render: Render, times: int) -> dict[str, float]:
    """CPU ms of each part of a receipt of the example order, and of a confirmation's."""
    words = EmailRenderer(SHOP)
    paid = examples()[OrderPaid]
    created = examples()[OrderCreated]

    receipt = order_email(RECEIPT, paid, words, render(paid, SHOP), DOMAIN)
    confirmation = order_email(CONFIRMATION, created, words, None, DOMAIN)
    receipt_mime = mime_message(receipt, sender=SENDER)
    confirmation_mime = mime_message(confirmation, sender=SENDER)
    return {
        "receipt: words (templates)": cpu_ms(lambda: words.render(RECEIPT, paid), times),
        "receipt: invoice PDF": cpu_ms(lambda: render(paid, SHOP), times),
        "receipt: MIME, PDF attached": cpu_ms(lambda: mime_message(receipt, sender=SENDER), times),
        "receipt: flattened to bytes": cpu_ms(lambda: flattened(receipt_mime), times),
        "confirmation: words": cpu_ms(lambda: words.render(CONFIRMATION, created), times),
        "confirmation: MIME": cpu_ms(lambda: mime_message(confirmation, sender=SENDER), times),
        "confirmation: flattened": cpu_ms(lambda: flattened(confirmation_mime), times),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--invoices", type=int, default=200, help="of each order a round")
    parser.add_argument("--against", metavar="REV", help="a git revision to compare with")
    args = parser.parse_args()

    renderers: dict[str, Render] = {"current": invoice.render_invoice}
    if args.against:
        renderers = {f"at {args.against}": renderer_at(args.against), **renderers}
    cases = orders()
    load = ", ".join(f"{average:.2f}" for average in os.getloadavg())
    print(f"load average at start (1, 5, 15 min): {load} on {os.cpu_count()} cores")
    for name, render in renderers.items():
        for case, event in cases.items():
            data = render(event, SHOP)
            render(event, SHOP)  # warm: fpdf2 loads a core font's metrics once
            print(f"{name:>14}  {case:<28} {len(data):>6} bytes")

    # Turns, round after round, so that a drift in the machine's speed reaches every figure.
    figures: dict[tuple[str, str], list[float]] = {}
    parts: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for case, event in cases.items():
            times = max(args.invoices // 10, 10) if len(event.lines) > 10 else args.invoices
            for name, render in renderers.items():
                ms = cpu_ms(lambda render=render, event=event: render(event, SHOP), times)
                figures.setdefault((name, case), []).append(ms)
        for name, render in renderers.items():
            for part, ms in receipt_parts(render, args.invoices // 2).items():
                parts.setdefault((name, part), []).append(ms)

    print("\ninvoice PDF, CPU ms an invoice: median of the rounds (each round's)")
    for (name, case), rounds in figures.items():
        each = " ".join(f"{ms:.2f}" for ms in rounds)
        print(f"  {name:>14}  {case:<28} {statistics.median(rounds):6.2f}   ({each})")

    print("\na receipt and a confirmation (the example orders), CPU ms an e-mail by part, median")
    for (name, part), rounds in parts.items():
        each = " ".join(f"{ms:.2f}" for ms in rounds)
        print(f"  {name:>14}  {part:<28} {statistics.median(rounds):6.3f}   ({each})")


if __name__ == "__main__":
    main()
