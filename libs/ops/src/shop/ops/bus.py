"""The shop's bus as an operator reaches it (only for the consumers' lag, :mod:`shop.ops.lag`:
the dead letters are asked of the workers): where the broker is, and its failures said in
one line."""

from __future__ import annotations

from aiokafka.errors import KafkaConnectionError, KafkaError
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
)

from shop.messaging import MessagingSettings
from shop.messaging.errors import MessagingError
from shop.ops.errors import OpsError, Unreachable


def where(messaging: MessagingSettings) -> str:
    """The broker's address, as a person configured it."""
    if messaging.transport == "kafka":
        return messaging.kafka.bootstrap_servers
    if messaging.transport == "sqs":
        return messaging.sqs.endpoint_url or f"AWS ({messaging.sqs.region})"
    return "this process"


def bus_error(messaging: MessagingSettings, error: BaseException) -> OpsError:
    """``error`` of the bus as one line naming the broker."""
    if isinstance(error, OpsError):
        return error
    kind = "the Kafka broker" if messaging.transport == "kafka" else "the SQS/SNS endpoint"
    if isinstance(
        error, KafkaConnectionError | EndpointConnectionError | ConnectTimeoutError | OSError
    ):
        return Unreachable(kind, where(messaging))
    if isinstance(error, NoCredentialsError):
        return OpsError(
            "no AWS credentials: set SHOP_OPS_MESSAGING__SQS__ACCESS_KEY_ID and "
            "SHOP_OPS_MESSAGING__SQS__SECRET_ACCESS_KEY"
        )
    return OpsError(f"{kind} at {where(messaging)}: {error}")


BUS_ERRORS = (KafkaError, BotoCoreError, ClientError, MessagingError, OSError, TimeoutError)
"""What talking to a broker may raise, beside the library's own errors."""


def require_broker(messaging: MessagingSettings) -> None:
    if messaging.transport == "memory":
        raise OpsError(
            "the memory transport lives inside one process: set SHOP_OPS_MESSAGING__TRANSPORT "
            "to the shop's (kafka or sqs)"
        )
