"""The lag reader's Kafka clients log in as the services' own do: a bus that requires
SCRAM over TLS refuses any client without that login."""

from __future__ import annotations

from pydantic import SecretStr

from shop.messaging.settings import KafkaSettings
from shop.ops.lag import kafka_client_options


def test_the_lag_readers_clients_log_in_with_the_settings_scram_login_over_tls() -> None:
    kafka = KafkaSettings(
        security_protocol="SASL_SSL",
        sasl_username="console",
        sasl_password=SecretStr("s" * 32),
    )
    options = kafka_client_options(kafka)
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert options["sasl_plain_username"] == "console"
    assert options["ssl_context"] is not None


def test_on_a_plaintext_bus_the_lag_reader_needs_no_login() -> None:
    options = kafka_client_options(KafkaSettings())
    assert options.get("security_protocol", "PLAINTEXT") == "PLAINTEXT"
    assert "sasl_plain_username" not in options
