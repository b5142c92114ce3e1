"""The example at the top of libs/messaging/README.md runs as written: on a real database,
through a worker on the memory transport."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from shop.contracts import PaymentFailed, PaymentReceived, decode, wrap
from shop.messaging import MessagingSettings, Router, Worker
from shop.messaging.schema import outbox
from shop.messaging.testing import eventually, publish, running, wait_until
from shop.messaging.transports.memory import MemoryBroker, MemoryTransport

README = Path(__file__).parents[2] / "README.md"


def readme_example() -> dict[str, Any]:
    """The names the README's first Python block defines, as it defines them."""
    [code] = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)[:1]
    names: dict[str, Any] = {}
    exec(compile(code, str(README), "exec"), names)
    return names


def payment(amount: int, currency: str) -> PaymentReceived:
    return PaymentReceived(
        payment_id=uuid.uuid4(),
        order_id=uuid.uuid4(),
        provider_event_id=f"evt_{uuid.uuid4().hex[:8]}",
        amount=amount,
        currency=currency,
        paid_at=datetime.now(UTC),
    )


async def test_the_readme_example_refuses_a_foreign_payment_and_dead_letters_an_empty_one(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    router: Router = readme_example()["router"]
    broker = MemoryBroker()
    transport = MemoryTransport(broker)
    worker = Worker(MessagingSettings(), transport, routers=[router], sessions=sessions)
    foreign, empty = payment(89000, "SGD"), payment(0, "IDR")

    async with running(worker):
        await publish(transport, wrap(foreign, key=str(foreign.order_id)))
        await publish(transport, wrap(empty, key=str(empty.order_id)))
        await wait_until(
            lambda: len(broker.dead_letters[transport.naming.dead_letters(router.group)]) == 1
        )

        async def refused() -> bool:
            async with sessions() as session:
                return (await session.execute(select(outbox.c.body))).first() is not None

        await eventually(refused, what="the refusal in the outbox")

    async with sessions() as session:
        [body] = (await session.execute(select(outbox.c.body))).scalars().all()
    refusal = decode(body)
    assert refusal.type == "payment.failed"
    assert isinstance(refusal.payload, PaymentFailed)
    assert refusal.payload.order_id == foreign.order_id
    [dead] = broker.dead_letters[transport.naming.dead_letters(router.group)].values()
    assert (dead.error_type, dead.error_message) == ("PermanentError", "a payment of nothing")
    assert dead.attempts == 1
