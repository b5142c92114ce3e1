"""``shopctl``'s error paths: each failure is one line on stderr and exit code 1. Where a
part of the shop is needed, it is at a port nothing listens on."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
import structlog
from pydantic import SecretStr
from typer.testing import CliRunner

from shop.console.shopctl.app import app
from shop.order.api.auth import authenticate
from shop.order.settings import DEVELOPMENT_JWT_SECRET, OrderSettings

runner = CliRunner()


@pytest.fixture(autouse=True)
def logging_left_as_it_was() -> Iterator[None]:
    """shopctl quiets the logs of the process it runs in; a test of it must not leave them
    quiet (or pointed at its captured stderr) for the tests after it."""
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


@pytest.fixture(autouse=True)
def in_development(monkeypatch: pytest.MonkeyPatch) -> None:
    """shopctl as a developer runs it: ``make run``'s env file says where it runs."""
    monkeypatch.setenv("SHOP_OPS_ENVIRONMENT", "development")


def test_without_its_environment_shopctl_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SHOP_OPS_ENVIRONMENT")
    monkeypatch.setenv("SHOP_OPS_ENV_FILE", "/nonexistent/shop.env")
    assert "SHOP_OPS_ENVIRONMENT" in one_line_failure(["lag"])


@pytest.fixture
def closed_port() -> int:
    """A port that refuses connections (it was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def one_line_failure(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr.strip()


@pytest.mark.parametrize(
    "command",
    [
        [],
        ["token"],
        ["order"],
        ["pay"],
        ["demo"],
        ["lag"],
        ["consumers"],
        ["timeline"],
        ["mail"],
        ["outbox", "status"],
        ["dlq", "list"],
        ["dlq", "show"],
        ["dlq", "redrive"],
        ["dlq", "purge"],
        ["forget-customer"],
    ],
)
def test_every_command_explains_itself(command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.stdout


def test_a_token_is_printed_alone_for_the_customer_named() -> None:
    result = runner.invoke(app, ["token", "--customer", "42", "--email", "ayu@example.com"])
    assert result.exit_code == 0, result.output
    token = result.stdout.strip()
    customer = authenticate(
        OrderSettings(environment="test", jwt_secret=SecretStr(DEVELOPMENT_JWT_SECRET)), token
    )
    assert (customer.id, customer.email) == ("42", "ayu@example.com")


def test_a_token_signed_with_a_real_key_must_be_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = "a-real-signing-key-of-order-service-0123456789"
    monkeypatch.setenv("SHOP_OPS_JWT_SECRET", real)
    assert one_line_failure(["token"]).startswith("SHOP_OPS_JWT_SECRET is not the development key")
    asked = runner.invoke(app, ["token", "--real-key"])
    assert asked.exit_code == 0, asked.output
    assert authenticate(
        OrderSettings(environment="test", jwt_secret=SecretStr(real)), asked.stdout.strip()
    )


def test_an_order_api_that_does_not_answer_is_named_with_what_to_do(
    monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    monkeypatch.setenv("SHOP_OPS_ORDER_API_URL", f"http://127.0.0.1:{closed_port}")
    assert one_line_failure(["order", "--sku", "SERUM-NIA-30", "--qty", "2"]) == (
        f"cannot reach order-service at http://127.0.0.1:{closed_port}: is `make run` running?"
    )


def test_a_service_whose_internal_api_does_not_answer_is_named(
    monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    monkeypatch.setenv("SHOP_OPS_ORDER_WORKER_URL", f"http://127.0.0.1:{closed_port}")
    reason = one_line_failure(["outbox", "status"])
    assert reason == (
        f"cannot reach order-service's worker at http://127.0.0.1:{closed_port}: "
        "is `make run` running?"
    )


def test_forgetting_a_customer_asks_first_naming_them_masked() -> None:
    result = runner.invoke(app, ["forget-customer", "ayu@example.com"], input="n\n")
    assert result.exit_code == 1, result.output
    assert "Forget a***@example.com in every service?" in result.stdout
    assert "ayu@example.com" not in result.stdout


def test_forgetting_a_customer_needs_the_operator_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_OPS_ENV_FILE", "/nonexistent/shop.env")
    monkeypatch.delenv("SHOP_OPS_OPERATOR_TOKEN", raising=False)
    reason = one_line_failure(["forget-customer", "ayu@example.com", "--yes"])
    assert reason == "forgetting a customer needs the operator token: set SHOP_OPS_OPERATOR_TOKEN"


def test_a_worker_that_does_not_answer_is_named(
    monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    for service in ("ORDER", "PAYMENT", "NOTIFICATION"):
        monkeypatch.setenv(f"SHOP_OPS_{service}_WORKER_URL", f"http://127.0.0.1:{closed_port}")
    assert one_line_failure(["consumers"]).startswith("cannot reach notification-service's worker")


def test_a_broker_that_does_not_answer_is_named(
    monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    monkeypatch.setenv("SHOP_OPS_MESSAGING__KAFKA__BOOTSTRAP_SERVERS", f"127.0.0.1:{closed_port}")
    assert one_line_failure(["lag"]) == (
        f"cannot reach the Kafka broker at 127.0.0.1:{closed_port}: is `make run` running?"
    )


def test_a_payment_service_that_does_not_answer_is_named(
    monkeypatch: pytest.MonkeyPatch, closed_port: int
) -> None:
    monkeypatch.setenv("SHOP_OPS_PAYMENT_WORKER_URL", f"http://127.0.0.1:{closed_port}")
    assert one_line_failure(["pay", "SK-7KQ4-M2XD", "--wait", "0"]).startswith(
        "cannot reach payment-service's worker"
    )


def test_the_memory_transport_is_refused_as_out_of_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_OPS_MESSAGING__TRANSPORT", "memory")
    assert "memory transport lives inside one process" in one_line_failure(["lag"])


@pytest.mark.parametrize("command", [["dlq", "list"], ["dlq", "show", "0-1"]])
def test_dead_letters_are_asked_of_the_workers_not_the_bus(
    monkeypatch: pytest.MonkeyPatch, closed_port: int, command: list[str]
) -> None:
    monkeypatch.setenv("SHOP_OPS_MESSAGING__TRANSPORT", "memory")
    for service in ("ORDER", "PAYMENT", "NOTIFICATION"):
        monkeypatch.setenv(f"SHOP_OPS_{service}_WORKER_URL", f"http://127.0.0.1:{closed_port}")
    assert one_line_failure(command).startswith("cannot reach notification-service's worker")


def test_an_invalid_setting_is_named_by_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_OPS_MESSAGING__TRANSPORT", "carrier-pigeon")
    assert one_line_failure(["lag"]).startswith("invalid setting SHOP_OPS_MESSAGING__TRANSPORT")


def test_each_quantity_belongs_to_a_sku() -> None:
    reason = one_line_failure(["order", "--sku", "SERUM-NIA-30", "--qty", "2", "--qty", "1"])
    assert reason == "each --qty belongs to a --sku (1 sku, 2 qty)"


def test_a_redrive_is_of_one_letter_or_of_a_filter_not_both() -> None:
    reason = one_line_failure(["dlq", "redrive", "0-1", "--type", "order.created"])
    assert "not both" in reason


def test_a_demo_latency_that_is_no_range_is_refused() -> None:
    assert "LOW-HIGH" in one_line_failure(["demo", "--email-latency", "soon"])


def test_demo_faults_need_the_mail_folder_before_anything_is_ordered() -> None:
    assert "SHOP_OPS_MAIL_DIR" in one_line_failure(["demo", "--email-failure", "0.2"])


def test_an_unexpected_failure_is_one_line_too(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken(*_: object, **__: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr("shop.console.shopctl.bus.outbox_status", broken)
    assert one_line_failure(["outbox", "status"]) == (
        "unexpected ZeroDivisionError: division by zero (--traceback shows where)"
    )
    result = runner.invoke(app, ["--traceback", "outbox", "status"])
    assert isinstance(result.exception, ZeroDivisionError)
