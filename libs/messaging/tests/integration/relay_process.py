"""A relay as its own process, for tests that kill it: ``relay_process.py DATABASE_URL
BOOTSTRAP NAMESPACE``. Publishes the outbox to Kafka in small batches until killed."""

from __future__ import annotations

import asyncio
import sys

from shop.messaging import KafkaSettings, Naming, Relay, RelaySettings
from shop.messaging.logging import configure_logging
from shop.messaging.transports.kafka import KafkaTransport


async def main(database_url: str, bootstrap: str, namespace: str) -> None:
    configure_logging(level="WARNING")
    transport = KafkaTransport(
        KafkaSettings(bootstrap_servers=bootstrap, partitions=3), Naming(namespace)
    )
    await transport.start()
    relay = Relay(
        database_url,
        transport,
        settings=RelaySettings(batch_size=200, poll_interval=0.2),
    )
    try:
        await relay.run()
    finally:
        await transport.close()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
