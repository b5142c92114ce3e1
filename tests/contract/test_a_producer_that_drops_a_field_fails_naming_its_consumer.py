"""A producer change that breaks a consumer fails the provider verification, and its report
names the consumer and the field. Proven on copies: a field is taken out of a copy of the
contract and of the producer's code that fills it, and the provider test is run in a fresh
process that imports the copies first. The real source is never touched."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from .messages import NOTIFICATION_SERVICE, ORDER_SERVICE, PAYMENT_SERVICE

REPOSITORY = Path(__file__).resolve().parents[2]
PROVIDER_TESTS = Path(__file__).with_name("test_producers_send_what_consumers_state.py")


@dataclass(frozen=True, slots=True)
class Removal:
    """One line taken out of one module of one package (``<dir>/src/shop/<name>``)."""

    package: str
    module: str
    line: str

    @property
    def source(self) -> Path:
        return REPOSITORY / self.package / self.module


@dataclass(frozen=True, slots=True)
class DroppedField:
    removals: tuple[Removal, ...]
    provider: str
    provider_test: str
    consumer: str
    field: str


PAYMENT_RECEIVED_WITHOUT_PAID_AT = DroppedField(
    removals=(
        Removal("contracts/src/shop/contracts", "payments.py", "    paid_at: AwareDatetime\n"),
        Removal(
            "services/payment/src/shop/payment",
            "service_layer/payments.py",
            "                    paid_at=paid_at,\n",
        ),
    ),
    provider=PAYMENT_SERVICE,
    provider_test="test_payment_service_sends_what_order_service_and_its_own_worker_state",
    consumer=ORDER_SERVICE,
    field="paid_at",
)
ORDER_PAID_WITHOUT_PAYMENT_REFERENCE = DroppedField(
    removals=(
        Removal(
            "contracts/src/shop/contracts", "orders.py", "    payment_reference: NonEmptyText\n"
        ),
        Removal(
            "services/order/src/shop/order",
            "service_layer/payments.py",
            "            payment_reference=payment.provider_event_id,\n",
        ),
    ),
    provider=ORDER_SERVICE,
    provider_test="test_order_service_sends_what_payment_and_notification_service_state",
    consumer=NOTIFICATION_SERVICE,
    field="payment_reference",
)


def copy_without(dropped: DroppedField, root: Path) -> Path:
    """Copies of the packages under ``root``, each removal made in its copy; ``root`` goes
    first on PYTHONPATH (``shop`` is a namespace package, so its copies come first)."""
    for package in {removal.package for removal in dropped.removals}:
        shutil.copytree(
            REPOSITORY / package,
            root / "shop" / Path(package).name,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    for removal in dropped.removals:
        copy = root / "shop" / Path(removal.package).name / removal.module
        text = copy.read_text()
        assert text.count(removal.line) == 1, f"{removal.line!r} is not once in {removal.source}"
        copy.write_text(text.replace(removal.line, ""))
    return root


def run_provider_test(dropped: DroppedField, copies: Path) -> subprocess.CompletedProcess[str]:
    python_path = os.pathsep.join(filter(None, [str(copies), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"{PROVIDER_TESTS}::{dropped.provider_test}",
            "-q",
            "--no-header",
            "-p",
            "no:cacheprovider",
        ],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": python_path},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def fingerprint(removals: tuple[Removal, ...]) -> dict[Path, str]:
    return {r.source: hashlib.sha256(r.source.read_bytes()).hexdigest() for r in removals}


@pytest.mark.parametrize(
    "dropped",
    [PAYMENT_RECEIVED_WITHOUT_PAID_AT, ORDER_PAID_WITHOUT_PAYMENT_REFERENCE],
    ids=["payment.received without paid_at", "order.paid without payment_reference"],
)
def test_the_provider_verification_fails_naming_the_consumer_and_the_field(
    dropped: DroppedField, tmp_path: Path
) -> None:
    before = fingerprint(dropped.removals)

    result = run_provider_test(dropped, copy_without(dropped, tmp_path))

    report = result.stdout + result.stderr
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, report
    assert f"Verifying a pact between {dropped.consumer} and {dropped.provider} - " in report, (
        report
    )
    assert f"$.payload -> Actual map is missing the following keys: {dropped.field}" in report, (
        report
    )
    assert fingerprint(dropped.removals) == before
