"""A worker as its own process, for tests that signal it: memory transport, one slow
subscriber, health on the port given as the first argument. Prints a line per handled
message so that the test can see what finished."""

from __future__ import annotations

import asyncio
import sys

from shop.contracts import OrderCreated, examples, wrap
from shop.messaging import MessageContext, MessagingSettings, Router, Worker
from shop.messaging.logging import configure_logging
from shop.messaging.testing import publish
from shop.messaging.transports.memory import MemoryTransport


async def main(port: int) -> None:
    configure_logging(level="WARNING")
    router = Router("notification-service")

    @router.subscriber(OrderCreated, transactional=False)
    async def send_confirmation(event: OrderCreated, ctx: MessageContext) -> None:
        print(f"started {ctx.envelope.key}", flush=True)
        await asyncio.sleep(1.0)  # a slow email provider
        print(f"handled {ctx.envelope.key}", flush=True)

    transport = MemoryTransport()
    worker = Worker(
        MessagingSettings(drain_timeout=10), transport, routers=[router], health_port=port
    )
    run = asyncio.create_task(worker.run())
    await worker.started.wait()
    await publish(transport, wrap(examples.examples()[OrderCreated], key="order-1"))
    await run


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
