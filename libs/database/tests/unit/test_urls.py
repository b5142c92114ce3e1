import pytest

from shop.database import sqlalchemy_url


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("postgresql://shop@db:5432/order", "postgresql+asyncpg://shop@db:5432/order"),
        ("postgres://shop@db/order", "postgresql+asyncpg://shop@db/order"),
        ("postgresql+asyncpg://shop@db/order", "postgresql+asyncpg://shop@db/order"),
    ],
)
def test_a_plain_postgres_url_gets_the_asyncpg_driver(given: str, expected: str) -> None:
    assert sqlalchemy_url(given) == expected
