"""A TCP proxy that delays everything it carries: ``python latency_proxy.py LISTEN_PORT
TARGET_HOST TARGET_PORT ROUND_TRIP_MS``. ``bench_checkout.py --db-round-trip-ms`` puts it
between the servers and PostgreSQL, so that each statement costs a round trip as a database
across a network does (on loopback a round trip costs next to nothing, and how long a lock
is held is then CPU alone). Each direction waits half the round trip; bytes keep their
order. The event loop's timers wake to the millisecond, so a round trip through it takes
somewhat more than asked: ``bench_checkout.py`` measures and prints what it takes.
"""

from __future__ import annotations

import asyncio
import sys
import time


async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Forward what ``reader`` gives to ``writer``, each chunk ``delay`` seconds after it came."""
    chunks: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def forward() -> None:
        try:
            while True:
                due, data = await chunks.get()
                if not data:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    forwarding = asyncio.create_task(forward())
    try:
        while data := await reader.read(65536):
            chunks.put_nowait((time.monotonic() + delay, data))
    except ConnectionError:
        pass
    chunks.put_nowait((time.monotonic() + delay, b""))
    await forwarding


async def serve(listen_port: int, target_host: str, target_port: int, round_trip: float) -> None:
    async def connected(
        client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter
    ) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(target_host, target_port)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pump(client_reader, server_writer, round_trip / 2),
            pump(server_reader, client_writer, round_trip / 2),
            return_exceptions=True,
        )

    server = await asyncio.start_server(connected, "127.0.0.1", listen_port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    listen, host, port, milliseconds = sys.argv[1:5]
    asyncio.run(serve(int(listen), host, int(port), float(milliseconds) / 1000))
