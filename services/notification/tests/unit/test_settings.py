"""Settings that could only fail one e-mail at a time are refused at start-up."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from shop.database import DatabaseTimeouts
from shop.messaging import MessagingSettings
from shop.messaging.retention import LONGEST_REDELIVERY
from shop.notification.settings import NotificationSettings, SmtpSettings


def test_a_password_without_a_username_is_refused() -> None:
    with pytest.raises(ValidationError, match="both username and password"):
        SmtpSettings(password=SecretStr("s3cret"))


@pytest.mark.parametrize("sender", ["orders", "Shop <orders@localhost>", "Shop <@example.com>"])
def test_a_sender_without_a_full_address_is_refused(sender: str) -> None:
    with pytest.raises(ValidationError, match="needs an address like"):
        SmtpSettings(sender=sender)


def test_a_ca_file_that_is_not_there_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="ca_file"):
        SmtpSettings(ca_file=tmp_path / "missing.pem")


def test_fault_injection_is_refused_in_production() -> None:
    with pytest.raises(ValidationError, match="fault injection"):
        NotificationSettings(environment="production", faults={"enabled": True})  # type: ignore[arg-type]


def test_production_refuses_the_memory_transport_and_a_missing_namespace() -> None:
    with pytest.raises(ValidationError) as refused:
        NotificationSettings(environment="production")

    message = str(refused.value)
    assert "SHOP_NOTIFICATION_MESSAGING__TRANSPORT is memory" in message
    assert "SHOP_NOTIFICATION_MESSAGING__NAMESPACE is empty" in message
    assert "SHOP_NOTIFICATION_OPERATOR_TOKEN must be set" in message


def test_production_on_a_broker_with_a_namespace_starts() -> None:
    messaging = MessagingSettings(transport="sqs", namespace="prod")

    token = SecretStr("r3al-operator-token-of-production-0123")
    settings = NotificationSettings(
        environment="production", messaging=messaging, operator_token=token
    )
    assert settings.messaging == messaging


def test_without_an_environment_the_settings_name_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SHOP_NOTIFICATION_ENVIRONMENT", raising=False)
    with pytest.raises(ValidationError, match="SHOP_NOTIFICATION_ENVIRONMENT must be set"):
        NotificationSettings()


def test_an_empty_environment_counts_as_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_NOTIFICATION_ENVIRONMENT", "")
    with pytest.raises(ValidationError, match="SHOP_NOTIFICATION_ENVIRONMENT must be set"):
        NotificationSettings()


def test_tracing_is_off_by_default_and_set_by_its_variables(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert NotificationSettings(environment="test").tracing.exporter == "none"
    monkeypatch.setenv("SHOP_NOTIFICATION_TRACING__EXPORTER", "file")
    monkeypatch.setenv("SHOP_NOTIFICATION_TRACING__FILE_DIR", str(tmp_path))
    tracing = NotificationSettings(environment="test").tracing
    assert (tracing.exporter, tracing.file_dir) == ("file", tmp_path)


def test_sent_emails_marks_are_kept_longer_than_the_longest_redelivery_by_default() -> None:
    retention = NotificationSettings(environment="test").retention
    assert retention.sent_emails >= LONGEST_REDELIVERY


def test_sent_emails_marks_kept_less_than_the_longest_redelivery_are_refused_with_the_rule(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHOP_NOTIFICATION_RETENTION__SENT_EMAILS", "P13D")
    with pytest.raises(ValidationError) as refused:
        NotificationSettings(environment="test")
    message = str(refused.value)
    assert "retention.sent_emails" in message
    assert "must be at least 14 days" in message
    assert "sends it again" in message


def test_the_sent_emails_retention_is_read_from_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHOP_NOTIFICATION_RETENTION__SENT_EMAILS", "P90D")
    assert NotificationSettings(environment="test").retention.sent_emails == timedelta(days=90)


def test_an_idle_timeout_a_send_could_outlast_is_refused() -> None:
    # An e-mail is sent inside its hold's transaction: cut idle mid-send, its mark is lost.
    with pytest.raises(ValidationError, match="IDLE_IN_TRANSACTION_SECONDS must exceed"):
        NotificationSettings(
            environment="test",
            database_timeouts=DatabaseTimeouts(idle_in_transaction_seconds=60),
            messaging=MessagingSettings(handler_timeout=120),
        )
    NotificationSettings(
        environment="test",
        database_timeouts=DatabaseTimeouts(idle_in_transaction_seconds=0),
        messaging=MessagingSettings(handler_timeout=120),
    )


def test_the_database_timeouts_are_read_from_their_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SHOP_NOTIFICATION_DATABASE_TIMEOUTS__LOCK_SECONDS", "0.5")
    settings = NotificationSettings(environment="test")
    assert settings.database_timeouts.server_settings()["lock_timeout"] == "500"
