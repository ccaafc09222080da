"""The DDR channel's fast path (`DdrChannel._reserve_at_rate`) grants exactly what the plain
segment-by-segment loop of `bandwidth.py`'s docstring grants: same extra cycles, same timeline."""

from __future__ import annotations

import math
import random

from pypto.runtime.sim.bandwidth import DdrChannel


def _reference_reserve(ch: DdrChannel, start: int, cycles: int, nbytes: int) -> int:
    """The grant loop as the module docstring states it, one segment at a time."""
    if nbytes <= 0:
        return 0
    rate, left = nbytes / max(cycles, 1), float(nbytes)
    i = ch._split(start)
    while True:
        give = min(rate, ch.capacity - ch.used[i])
        a = ch.times[i]
        b = ch.times[i + 1] if i + 1 < len(ch.times) else None
        if give > 1e-9:
            need = math.ceil(left / give - 1e-9)
            if b is None or a + need <= b:
                if b is None or a + need < b:
                    ch._split(a + need)
                ch.used[i] += give
                return max(0, a + need - (start + cycles))
            ch.used[i] += give
            left -= give * (b - a)
        i += 1


def test_fast_grants_equal_the_segment_loop_with_and_without_contention() -> None:
    rng = random.Random(7)
    paths = {"fast": 0, "loop": 0}

    def counted(ch: DdrChannel):
        inner = ch._reserve_at_rate

        def run(*a):
            r = inner(*a)
            paths["loop" if r is None else "fast"] += 1
            return r
        ch._reserve_at_rate = run  # type: ignore[method-assign]
        return ch
    for _ in range(1500):
        cap = rng.choice([100, 64.0, 173.5, 1000])
        fast, ref = counted(DdrChannel(cap)), DdrChannel(cap)
        t = 0
        for _ in range(rng.randrange(1, 50)):
            t += rng.randrange(0, 300)
            if rng.random() < 0.2:
                fast.forget_before(t)
                ref.forget_before(t)
            cycles = rng.randrange(0, 2000)
            nbytes = rng.choice([0, rng.randrange(1, 400000), rng.randrange(1, 100)])
            got = fast.reserve(t, cycles, nbytes)
            want = _reference_reserve(ref, t, cycles, nbytes)
            assert got == want
            assert fast.times == ref.times and fast.used == ref.used
    assert paths["fast"] > 1000 and paths["loop"] > 1000    # both ways of granting really ran
