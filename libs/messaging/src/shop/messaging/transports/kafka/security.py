"""How the transport proves who it is to the brokers: the settings' protocol, login and TLS
files as one of FastStream's security objects, given to the broker (its producer, admin
client and every consumer it builds) and to the aiokafka clients the transport builds
itself, so that no connection of the process is left unauthenticated."""

from __future__ import annotations

import ssl
from typing import Any

from aiokafka.helpers import create_ssl_context
from faststream.kafka.security import parse_security
from faststream.security import BaseSecurity, SASLScram256, SASLScram512

from shop.messaging.errors import MessagingError
from shop.messaging.settings import KafkaSettings

__all__ = ["broker_security", "client_options"]


def broker_security(settings: KafkaSettings) -> BaseSecurity | None:
    """What ``KafkaBroker(security=…)`` takes; None for PLAINTEXT. Reads the TLS files now,
    so that a missing or unreadable one stops the process at start, naming it."""
    if settings.security_protocol == "PLAINTEXT":
        return None
    context = _ssl_context(settings) if settings.uses_tls else None
    if not settings.uses_sasl:
        return BaseSecurity(ssl_context=context, use_ssl=True)
    if settings.sasl_username is None or settings.sasl_password is None:
        # KafkaSettings refuses this already; kept for the type checker.
        raise MessagingError(f"{settings.security_protocol} needs a username and a password")
    scram = SASLScram512 if settings.sasl_mechanism == "SCRAM-SHA-512" else SASLScram256
    return scram(
        settings.sasl_username,
        settings.sasl_password.get_secret_value(),
        ssl_context=context,
        use_ssl=context is not None,
    )


def client_options(security: BaseSecurity | None) -> dict[str, Any]:
    """The keyword arguments an aiokafka client takes for ``security``, translated by
    FastStream exactly as it does for the broker's own clients."""
    return parse_security(security)


def _ssl_context(settings: KafkaSettings) -> ssl.SSLContext:
    # aiokafka's helper: the system's trust store unless a CA is named, hostname checks on.
    key_password = settings.ssl_key_password
    try:
        context: ssl.SSLContext = create_ssl_context(
            cafile=None if settings.ssl_cafile is None else str(settings.ssl_cafile),
            certfile=None if settings.ssl_certfile is None else str(settings.ssl_certfile),
            keyfile=None if settings.ssl_keyfile is None else str(settings.ssl_keyfile),
            password=None if key_password is None else key_password.get_secret_value(),
        )
    except (OSError, ssl.SSLError) as error:
        raise MessagingError(f"cannot use the Kafka TLS files: {error}") from error
    return context
