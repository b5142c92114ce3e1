"""``python bench/checkout/profiled_service.py``: order-service's API (``python -m
shop.order.api``) with cProfile switched on by SIGUSR1 and off by SIGUSR2, which also writes
the stats to ``$BENCH_PROFILE``: ``bench_checkout.py --profile FILE`` profiles only the
measured seconds, not start-up and warm-up."""

from __future__ import annotations

import cProfile
import os
import signal
from types import FrameType

from shop.order.api.__main__ import main

profiler = cProfile.Profile()


def start(_: int, __: FrameType | None) -> None:
    profiler.enable()


def stop(_: int, __: FrameType | None) -> None:
    profiler.disable()
    profiler.dump_stats(os.environ["BENCH_PROFILE"])


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    main()
