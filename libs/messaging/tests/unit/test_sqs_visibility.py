"""A received message is kept hidden through a stall of the SQS endpoint."""

from __future__ import annotations

import asyncio
import time

from shop.messaging.transports.sqs.visibility import keep_hidden

TIMEOUT = 1.5


async def extensions_landing(stall: float, calls: int) -> list[float]:
    """When each of ``calls`` extensions lands (the first stalls for ``stall`` seconds),
    in seconds since the message was received."""
    received = time.monotonic()
    landed: list[float] = []
    done = asyncio.Event()

    async def extend() -> None:
        if not landed:
            await asyncio.sleep(stall)
        landed.append(time.monotonic() - received)
        if len(landed) == calls:
            done.set()

    keeper = asyncio.create_task(keep_hidden(extend, TIMEOUT))
    try:
        await asyncio.wait_for(done.wait(), 10)
    finally:
        keeper.cancel()
    return landed


async def test_each_extension_lands_before_the_last_one_runs_out_through_a_stall() -> None:
    # A stall of 60% of the timeout on the first extension (the chaos suite freezes the
    # broker for 12 s against a 30 s timeout): each extension must land while the message
    # is still hidden, that is within the timeout of the one before (or of the receive).
    landed = await extensions_landing(stall=0.6 * TIMEOUT, calls=4)
    hidden_until = TIMEOUT
    for at in landed:
        assert at < hidden_until, f"landed at {at:.2f} s, hidden only until {hidden_until:.2f}"
        hidden_until = at + TIMEOUT


async def test_extensions_start_a_third_of_the_timeout_apart() -> None:
    landed = await extensions_landing(stall=0.0, calls=3)
    gaps = [later - earlier for earlier, later in zip([0.0, *landed], landed, strict=False)]
    assert all(abs(gap - TIMEOUT / 3) < 0.15 for gap in gaps), gaps
