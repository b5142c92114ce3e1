"""The Kafka transport against a broker that wants a login over TLS (Tansu with
``--authentication`` and a certificate from a private CA): with its principal's SCRAM login
every client the transport uses connects (the idempotence probe, the broker's producer and
admin client, and the consumers the broker builds, such as the dead-letter topic's
reader); with a wrong password, no login or a CA that did not sign the broker's
certificate, the start fails."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from aiokafka.errors import KafkaError
from pydantic import SecretStr

from shop.devstack.kafka import Certificate, TansuBroker
from shop.messaging.errors import MessagingError
from shop.messaging.settings import KafkaSettings
from shop.messaging.transports.kafka.client import KafkaClient

USER = "order-service"
PASSWORD = "a-scram-password-of-the-order-service-0123"


@dataclass(frozen=True)
class SecuredBroker:
    broker: TansuBroker
    ca_file: Path
    other_ca_file: Path

    def settings(self, **login: object) -> KafkaSettings:
        given: dict[str, object] = {
            "security_protocol": "SASL_SSL",
            "sasl_username": USER,
            "sasl_password": SecretStr(PASSWORD),
            "ssl_cafile": self.ca_file,
        }
        given.update(login)
        return KafkaSettings.model_validate(
            {
                "bootstrap_servers": self.broker.cluster.bootstrap_servers,
                "session_timeout_ms": 6_000,
                "request_timeout_ms": 5_000,
                **given,
            }
        )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredBroker]:
    """A broker of its own (the session's takes anyone), stopped with the module."""
    workdir = tmp_path_factory.mktemp("tansu-secured")
    ca, other_ca = trustme.CA(), trustme.CA()
    server = ca.issue_cert("127.0.0.1")
    certificate = Certificate(workdir / "server.pem", workdir / "server.key")
    server.cert_chain_pems[0].write_to_path(certificate.chain)
    server.private_key_pem.write_to_path(certificate.key)
    ca.cert_pem.write_to_path(workdir / "ca.pem")
    other_ca.cert_pem.write_to_path(workdir / "other-ca.pem")
    broker = TansuBroker(workdir, authentication=True, certificate=certificate)
    broker.start()
    try:
        broker.create_user(USER, PASSWORD, mechanism="scram512")
        yield SecuredBroker(broker, workdir / "ca.pem", workdir / "other-ca.pem")
    finally:
        broker.stop()


async def test_with_its_login_every_client_of_the_transport_connects(
    secured: SecuredBroker, unique_name: str
) -> None:
    client = KafkaClient(secured.settings())
    await client.start()
    try:
        await client.create_topics([unique_name])
        await client.send(unique_name, b"one", {}, "key")

        assert unique_name in await client.topics()
        assert [record.body for record in await client.read_topic(unique_name)] == [b"one"]
    finally:
        await client.close()


@pytest.mark.parametrize(
    "login",
    [
        pytest.param({"sasl_password": SecretStr("not-the-password-of-the-service-0")}, id="wrong"),
        pytest.param({"sasl_username": "payment-service"}, id="unknown-user"),
        pytest.param(
            {"security_protocol": "SSL", "sasl_username": None, "sasl_password": None},
            id="no-login",
        ),
    ],
)
async def test_without_the_right_login_the_start_fails(
    secured: SecuredBroker, login: dict[str, object]
) -> None:
    client = KafkaClient(secured.settings(**login))
    try:
        with pytest.raises((KafkaError, MessagingError)):
            await client.start()
    finally:
        await client.close()


async def test_a_broker_whose_certificate_another_ca_signed_is_refused(
    secured: SecuredBroker,
) -> None:
    client = KafkaClient(secured.settings(ssl_cafile=secured.other_ca_file))
    try:
        with pytest.raises((KafkaError, MessagingError)):
            await client.start()
    finally:
        await client.close()
