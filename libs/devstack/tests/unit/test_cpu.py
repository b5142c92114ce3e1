"""CPU time read from /proc for the benchmarks: a family (PostgreSQL's postmaster and its
backends) keeps the time of the children that have ended, so that its figure over a
measured window never goes back when a pool renews a connection."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from shop.devstack.cpu import family_seconds, process_seconds

pytestmark = pytest.mark.unit

SPIN = "import time\nwhile time.process_time() < 0.3:\n    pass\n"


def test_a_family_keeps_the_cpu_of_a_child_that_has_ended() -> None:
    me = os.getpid()
    before = family_seconds(me) - process_seconds(me)
    subprocess.run([sys.executable, "-c", SPIN], check=True)
    after = family_seconds(me) - process_seconds(me)
    assert after - before >= 0.25
