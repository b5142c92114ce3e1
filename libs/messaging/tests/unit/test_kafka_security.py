"""How the Kafka transport authenticates: settings that could never connect are refused
anywhere, production refuses a bus that does not know who its clients are, and the
settings become the one security object every client of the process is given.

Checked offline: the Tansu broker of the tests cannot serve SCRAM logins (its users are
made through an unauthenticated broker and live in memory storage, which a restart with
``--authentication`` loses) nor TLS (its ``--cert`` and ``--key`` refuse each other). So the
clients are shown to open with TLS against a listener that only reads their first byte."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
import trustme
from aiokafka.errors import KafkaError
from faststream.security import BaseSecurity, SASLScram256, SASLScram512
from pydantic import SecretStr, ValidationError

from shop.messaging.errors import MessagingError
from shop.messaging.settings import KafkaSettings, MessagingSettings
from shop.messaging.transports.kafka.client import _idempotence_accepted, _started_broker
from shop.messaging.transports.kafka.security import broker_security, client_options
from shop.messaging.transports.kafka.underneath import FastStreamLog

PASSWORD = "s" * 32
TLS_HANDSHAKE = b"\x16"


def scram(protocol: str = "SASL_SSL", **more: object) -> KafkaSettings:
    return KafkaSettings(
        security_protocol=protocol,  # type: ignore[arg-type]
        sasl_username="order-service",
        sasl_password=SecretStr(PASSWORD),
        **more,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A private CA and a client certificate it signed, as PEM files."""
    folder = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    client = ca.issue_cert("order-service")
    files = {
        "ssl_cafile": folder / "ca.pem",
        "ssl_certfile": folder / "client.pem",
        "ssl_keyfile": folder / "client.key",
    }
    ca.cert_pem.write_to_path(files["ssl_cafile"])
    client.cert_chain_pems[0].write_to_path(files["ssl_certfile"])
    client.private_key_pem.write_to_path(files["ssl_keyfile"])
    return files


# -- settings that could never connect ------------------------------------------------


def test_a_sasl_protocol_without_a_password_is_refused() -> None:
    with pytest.raises(ValidationError, match="SASL_SSL needs sasl_username and sasl_password"):
        KafkaSettings(security_protocol="SASL_SSL", sasl_username="order-service")


def test_a_client_certificate_without_its_key_is_refused() -> None:
    with pytest.raises(ValidationError, match="ssl_certfile and ssl_keyfile go together"):
        KafkaSettings(security_protocol="SSL", ssl_certfile=Path("client.pem"))


def test_tls_files_on_a_protocol_without_tls_are_refused() -> None:
    with pytest.raises(ValidationError, match="SASL_PLAINTEXT uses no TLS"):
        scram("SASL_PLAINTEXT", ssl_cafile=Path("ca.pem"))


def test_a_refused_setting_never_shows_the_password() -> None:
    with pytest.raises(ValidationError) as refused:
        # As the environment gives it: a plain string.
        KafkaSettings.model_validate({"security_protocol": "SASL_SSL", "sasl_password": PASSWORD})

    assert PASSWORD not in str(refused.value)


# -- production ---------------------------------------------------------------------


def production_problems(kafka: KafkaSettings, transport: str = "kafka") -> list[str]:
    messaging = MessagingSettings(transport=transport, namespace="prod", kafka=kafka)  # type: ignore[arg-type]
    return messaging.unfit_for_production("SHOP_ORDER_MESSAGING__")


def test_production_refuses_plaintext_naming_the_variable() -> None:
    (problem,) = production_problems(KafkaSettings())

    assert problem.startswith("SHOP_ORDER_MESSAGING__KAFKA__SECURITY_PROTOCOL is PLAINTEXT")


def test_production_refuses_a_login_sent_without_tls() -> None:
    (problem,) = production_problems(scram("SASL_PLAINTEXT"))

    assert "SASL_PLAINTEXT" in problem
    assert "set SASL_SSL" in problem


def test_production_refuses_tls_that_names_no_client() -> None:
    (problem,) = production_problems(KafkaSettings(security_protocol="SSL"))

    assert "without SHOP_ORDER_MESSAGING__KAFKA__SSL_CERTFILE" in problem


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "SCRAM-SHA-256"])
def test_production_takes_a_scram_login_over_tls(mechanism: str) -> None:
    assert production_problems(scram(sasl_mechanism=mechanism)) == []


def test_production_takes_mutual_tls() -> None:
    settings = KafkaSettings(
        security_protocol="SSL",
        ssl_certfile=Path("/etc/kafka/user.crt"),
        ssl_keyfile=Path("/etc/kafka/user.key"),
    )

    assert production_problems(settings) == []


def test_the_kafka_settings_of_another_transport_are_not_judged() -> None:
    assert production_problems(KafkaSettings(), transport="sqs") == []


# -- the security object --------------------------------------------------------------


def test_plaintext_gives_the_clients_no_security() -> None:
    assert broker_security(KafkaSettings()) is None
    assert client_options(None) == {}


def test_scram_over_tls_logs_in_with_the_mechanism_asked_over_a_verifying_context() -> None:
    security = broker_security(scram(sasl_mechanism="SCRAM-SHA-512"))

    assert isinstance(security, SASLScram512)
    options = client_options(security)
    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert options["sasl_plain_username"] == "order-service"
    assert options["sasl_plain_password"] == PASSWORD
    context = options["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname


def test_scram_sha_256_is_given_as_asked() -> None:
    security = broker_security(scram(sasl_mechanism="SCRAM-SHA-256"))

    assert isinstance(security, SASLScram256)
    assert client_options(security)["sasl_mechanism"] == "SCRAM-SHA-256"


def test_a_login_without_tls_is_given_as_sasl_plaintext_outside_production() -> None:
    options = client_options(broker_security(scram("SASL_PLAINTEXT")))

    assert options["security_protocol"] == "SASL_PLAINTEXT"
    assert options["ssl_context"] is None


def test_mutual_tls_presents_the_client_certificate(tls_files: dict[str, Path]) -> None:
    security = broker_security(KafkaSettings(security_protocol="SSL", **tls_files))  # type: ignore[arg-type]

    assert type(security) is BaseSecurity
    options = client_options(security)
    assert options["security_protocol"] == "SSL"
    assert "sasl_mechanism" not in options
    assert isinstance(options["ssl_context"], ssl.SSLContext)


def test_a_tls_file_that_is_missing_stops_the_start_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "ca.pem"

    with pytest.raises(MessagingError, match="cannot use the Kafka TLS files"):
        broker_security(scram(ssl_cafile=missing))


def test_a_client_key_that_does_not_match_its_certificate_stops_the_start(
    tls_files: dict[str, Path],
) -> None:
    settings = KafkaSettings(
        security_protocol="SSL",
        ssl_certfile=tls_files["ssl_certfile"],
        ssl_keyfile=tls_files["ssl_cafile"],  # a certificate, not a key
    )

    with pytest.raises(MessagingError, match="cannot use the Kafka TLS files"):
        broker_security(settings)


# -- every client the transport builds -------------------------------------------------


class FirstBytes:
    """A listener that keeps the first byte of each connection, then hangs up: a TLS
    client opens with a handshake record (0x16), a plaintext Kafka client with the length
    of its first request (0x00)."""

    def __init__(self) -> None:
        self.first: list[bytes] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> FirstBytes:
        self._server = await asyncio.start_server(self._keep, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    @property
    def address(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"{host}:{port}"

    async def _keep(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.first.append(await reader.read(1))
        writer.close()


async def first_bytes_of_every_client(settings: KafkaSettings) -> dict[str, set[bytes]]:
    """What each client the transport builds sends first to the brokers: the idempotence
    probe and the broker (its producer and admin client; its subscribers' consumers are
    FastStream's, made with the broker's security); each fails, the listener being no
    broker."""
    found: dict[str, set[bytes]] = {}
    security = broker_security(settings)
    async with FirstBytes() as listener:
        settings = settings.model_copy(update={"bootstrap_servers": listener.address})

        async def attempt(name: str, connect: Callable[[], Awaitable[object]]) -> None:
            before = len(listener.first)
            with pytest.raises(KafkaError):
                await connect()
            found[name] = set(listener.first[before:])

        await attempt("probe", lambda: _idempotence_accepted(settings, security))
        await attempt(
            "broker",
            lambda: _started_broker(settings, FastStreamLog(), idempotent=False, security=security),
        )
    return found


async def test_every_client_the_transport_builds_opens_with_tls(
    tls_files: dict[str, Path],
) -> None:
    settings = scram(ssl_cafile=tls_files["ssl_cafile"], request_timeout_ms=1_000)

    assert await first_bytes_of_every_client(settings) == {
        "probe": {TLS_HANDSHAKE},
        "broker": {TLS_HANDSHAKE},
    }


async def test_on_plaintext_no_client_opens_with_tls() -> None:
    found = await first_bytes_of_every_client(KafkaSettings(request_timeout_ms=1_000))

    assert set(found) == {"probe", "broker"}
    assert all(first and TLS_HANDSHAKE not in first for first in found.values())
