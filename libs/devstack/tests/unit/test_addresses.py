import pytest

from shop.devstack import AwsEndpoint, DevstackError, DevstackSettings, PostgresServer
from shop.devstack.parts import kafka_part, postgres_part


def test_a_postgres_url_is_parsed_and_rebuilt_with_quoting():
    server = PostgresServer.from_url("postgresql://shop:p%40ss@db.local:6543/orders")

    assert (server.host, server.port, server.user, server.password) == (
        "db.local",
        6543,
        "shop",
        "p@ss",
    )
    assert server.url() == "postgresql://shop:p%40ss@db.local:6543/orders"
    assert server.url("payments", driver="postgresql+asyncpg") == (
        "postgresql+asyncpg://shop:p%40ss@db.local:6543/payments"
    )


def test_something_that_is_not_a_postgres_url_is_refused():
    with pytest.raises(DevstackError, match="not a PostgreSQL URL"):
        PostgresServer.from_url("mysql://root@localhost/test")


def test_a_configured_server_is_used_instead_of_starting_one(tmp_path):
    settings = DevstackSettings(postgres_url="postgresql://postgres@127.0.0.1:5432/postgres")

    part, server = postgres_part(settings, tmp_path)

    assert part.name == "postgres"
    assert server.port == 5432
    assert not (tmp_path / "postgres").exists()


def test_a_malformed_bootstrap_address_is_refused(tmp_path):
    with pytest.raises(DevstackError, match="not host:port"):
        kafka_part(DevstackSettings(kafka_bootstrap="localhost"), tmp_path)


def test_settings_come_from_prefixed_environment_variables(monkeypatch):
    monkeypatch.setenv("SHOP_DEVSTACK_KAFKA_BOOTSTRAP", "127.0.0.1:19092")

    assert DevstackSettings().kafka_bootstrap == "127.0.0.1:19092"


def test_aws_client_arguments_include_the_endpoint_only_when_set():
    assert AwsEndpoint(url="http://127.0.0.1:5000").client_kwargs()["endpoint_url"] == (
        "http://127.0.0.1:5000"
    )
    assert "endpoint_url" not in AwsEndpoint(url=None).client_kwargs()


def test_tests_are_marked_by_their_tier_folder(request):
    assert request.node.get_closest_marker("unit") is not None
    assert request.node.get_closest_marker("integration") is None
