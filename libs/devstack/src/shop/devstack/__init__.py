"""Embedded infrastructure for development and tests, started on free ports and stopped after.
What stands in for the shop's outside parties (identity provider, payment gateway, an
e-mail provider's faults) is :mod:`shop.simulators`.

The pytest fixtures live in :mod:`shop.devstack.pytest_plugin`, registered by this package's
``pytest11`` entry point; helpers for tests that run processes in :mod:`shop.devstack.testing`.
"""

from shop.devstack.aws import AwsEndpoint, MotoServer
from shop.devstack.errors import DevstackError
from shop.devstack.kafka import KafkaCluster, TansuBroker
from shop.devstack.postgres import EmbeddedPostgres, PostgresServer
from shop.devstack.settings import DevstackSettings
from shop.devstack.smtp import ReceivedMail, SmtpAddress, SmtpSink
from shop.devstack.stack import Devstack, Endpoints

__all__ = [
    "AwsEndpoint",
    "Devstack",
    "DevstackError",
    "DevstackSettings",
    "EmbeddedPostgres",
    "Endpoints",
    "KafkaCluster",
    "MotoServer",
    "PostgresServer",
    "ReceivedMail",
    "SmtpAddress",
    "SmtpSink",
    "TansuBroker",
]
