"""A Kafka worker as its own process, for a test that kills it with SIGKILL: 8 messages in
flight, and the message keyed ``slow`` held for as long as the first argument says.
Prints a line when a message starts and when it is handled, so that the test can see what
finished."""

from __future__ import annotations

import asyncio
import sys

from shop.contracts import OrderCreated
from shop.messaging import MessageContext, MessagingSettings, Naming, Router, Worker
from shop.messaging.logging import configure_logging
from shop.messaging.testing import on_kafka
from shop.messaging.transports.kafka import KafkaTransport

GROUP = "notification-service"


async def main(slow_seconds: float, bootstrap_servers: str, namespace: str) -> None:
    configure_logging(level="WARNING")
    router = Router(GROUP)

    @router.subscriber(OrderCreated, transactional=False)
    async def send_confirmation(event: OrderCreated, ctx: MessageContext) -> None:
        key = ctx.envelope.key
        print(f"started {key}", flush=True)
        await asyncio.sleep(slow_seconds if key == "slow" else 0.05)
        print(f"handled {key}", flush=True)

    settings = on_kafka(
        MessagingSettings(namespace=namespace, max_in_flight=8, drain_timeout=5),
        bootstrap_servers,
    )
    transport = KafkaTransport(settings.kafka, Naming(namespace))
    worker = Worker(settings, transport, routers=[router])
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main(float(sys.argv[1]), sys.argv[2], sys.argv[3]))
