from __future__ import annotations

import asyncio

from shop.messaging.dispatch import KeyedDispatcher


async def test_one_key_runs_in_order_while_other_keys_run_beside_it() -> None:
    dispatcher = KeyedDispatcher(max_in_flight=10)
    log: list[str] = []
    gate = asyncio.Event()

    async def work(name: str, wait: bool = False) -> None:
        log.append(f"start {name}")
        if wait:
            await gate.wait()
        log.append(f"end {name}")

    await dispatcher.submit("a", lambda: work("a1", wait=True))
    await dispatcher.submit("a", lambda: work("a2"))
    await dispatcher.submit("b", lambda: work("b1"))
    await asyncio.sleep(0.05)
    assert log == ["start a1", "start b1", "end b1"]  # a2 waits for a1; b is not blocked
    gate.set()
    assert await dispatcher.drain(1)
    assert log[3:] == ["end a1", "start a2", "end a2"]


async def test_submit_waits_while_the_dispatcher_is_full() -> None:
    dispatcher = KeyedDispatcher(max_in_flight=2)
    gate = asyncio.Event()
    for key in ("a", "b"):
        await dispatcher.submit(key, gate.wait)  # type: ignore[arg-type]
    third = asyncio.create_task(dispatcher.submit("c", gate.wait))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    assert not third.done()
    gate.set()
    await asyncio.wait_for(third, 1)
    assert await dispatcher.drain(1)


async def test_drain_cancels_what_outlives_the_grace_period() -> None:
    dispatcher = KeyedDispatcher(max_in_flight=2)
    cancelled = asyncio.Event()

    async def stuck() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    await dispatcher.submit("a", stuck)
    await asyncio.sleep(0)
    assert not await dispatcher.drain(0.05)
    assert cancelled.is_set()
    assert dispatcher.in_flight == 0


async def test_a_failing_work_item_does_not_stop_the_others() -> None:
    dispatcher = KeyedDispatcher(max_in_flight=2)
    done: list[str] = []

    async def boom() -> None:
        raise RuntimeError("bug in settlement")

    async def fine() -> None:
        done.append("fine")

    await dispatcher.submit("a", boom)
    await dispatcher.submit("a", fine)
    assert await dispatcher.drain(1)
    assert done == ["fine"]


async def test_nothing_submitted_after_the_drain_began_runs() -> None:
    dispatcher = KeyedDispatcher(max_in_flight=1)
    gate = asyncio.Event()
    ran: list[str] = []

    async def first() -> None:
        await gate.wait()
        ran.append("first")

    async def late() -> None:
        ran.append("late")

    await dispatcher.submit("a", first)
    waiting = asyncio.create_task(dispatcher.submit("b", late))  # waits for the one slot
    await asyncio.sleep(0)
    draining = asyncio.create_task(dispatcher.drain(5))
    await asyncio.sleep(0)
    gate.set()
    assert await draining
    assert await waiting is False
    assert ran == ["first"]
