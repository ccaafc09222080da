"""The chip's DDR (HBM) bandwidth, shared by every task in flight (issue 14 item 3).

Each core moves data between DDR and its own memories at most at `mte2_bytes_per_cycle` /
`mte3_bytes_per_cycle` (the per-op costs of `cost_model`), but all cores share one DDR: the chip
as a whole moves at most `ddr_bytes_per_cycle` bytes per cycle. `DdrChannel` enforces that limit
over a run with a reservation timeline:

- a task that starts at cycle `s`, lasts `T` cycles on its own and moves `D` bytes to or from HBM
  (its reads the L2 cache missed and its stores, `l2cache.L2Cache`) asks for `D / T` bytes per
  cycle (its traffic spread evenly over its duration);
- the channel grants, from `s` on, what it still has free of the chip's bandwidth, up to that
  rate, segment by segment of its timeline, until the `D` bytes are granted; the task ends when
  both its own work is done (`s + T`) and its last byte is granted. The extra cycles are the
  task's `ddr_wait_cycles`;
- tasks are granted in the order they start (the scheduler's deterministic order), and a grant is
  never taken back: a task that started earlier keeps its bandwidth. The same inputs always give
  the same cycles.

At every cycle the granted rates sum to at most `ddr_bytes_per_cycle`, so no schedule moves more
bytes per cycle than the chip can. Not modelled: per-bank / per-die locality, and read/write
turnaround.
"""

from __future__ import annotations

import bisect
import math
import operator
from itertools import accumulate, compress, count, islice, repeat

from .cost_model import const

__all__ = ["DdrChannel"]


class DdrChannel:
    """Bandwidth reservations of one run (module docstring).

    The timeline is piecewise constant: `used[i]` bytes per cycle are granted from `times[i]` to
    `times[i + 1]` (the last segment runs forever).

    Args:
        bytes_per_cycle: the chip's DDR bandwidth; `ddr_bytes_per_cycle` of the cost model by
            default.
    """

    def __init__(self, bytes_per_cycle: float | None = None) -> None:
        self.capacity = const("ddr_bytes_per_cycle") if bytes_per_cycle is None else bytes_per_cycle
        self.times: list[int] = [0]
        self.used: list[float] = [0.0]

    def _split(self, t: int) -> int:
        """Index of the segment starting at cycle `t` (splitting the one that contains it)."""
        i = bisect.bisect_right(self.times, t) - 1
        if i < 0:
            self.times.insert(0, t)
            self.used.insert(0, 0.0)
            return 0
        if self.times[i] == t:
            return i
        self.times.insert(i + 1, t)
        self.used.insert(i + 1, self.used[i])
        return i + 1

    def reserve(self, start: int, cycles: int, nbytes: int) -> int:
        """Grant `nbytes` of DDR traffic to a task running from `start` for `cycles` on its own.

        Returns the extra cycles the task needs because the bandwidth is shared (0 when the chip
        had enough free bandwidth for it all along). `cycles` and `nbytes` are >= 0.
        """
        if nbytes <= 0:
            return 0
        rate = nbytes / max(cycles, 1)
        i = self._split(start)
        fast = self._reserve_at_rate(i, rate, float(nbytes), start + cycles)
        if fast is not None:
            return max(0, fast - (start + cycles))
        left = float(nbytes)
        times, used = self.times, self.used
        while True:
            give = min(rate, self.capacity - used[i])
            a = times[i]
            b = times[i + 1] if i + 1 < len(times) else None
            if give > 1e-9:
                need = math.ceil(left / give - 1e-9)
                if b is None or a + need <= b:
                    end = a + need
                    if b is None or end < b:
                        self._split(end)
                    used[i] += give
                    return max(0, end - (start + cycles))
                used[i] += give
                left -= give * (b - a)
            i += 1

    def _reserve_at_rate(self, i: int, rate: float, left: float, until: int) -> int | None:
        """The common case of `reserve`: when every segment from `i` to the task's end has `rate`
        free, grant it there and return the end cycle; else change nothing and return None. The
        arithmetic (and so every cycle) is the segment-by-segment loop's. `until` (the task's end on
        its own) is where, at `rate`, the grant ends, give or take rounding: the segments up to it
        are usually few, so they are walked one by one (the bytes still to grant at the start of
        each, subtracted in the loop's order); past them, the rest of the timeline is looked at in
        C-level list operations."""
        times, used, cap = self.times, self.used, self.capacity
        if rate <= 1e-9:
            return None
        last = len(times) - 1                       # the open-ended segment
        stop = min(last, bisect.bisect_right(times, until + 1, i) + 1)
        j = i
        # the segment the grant ends in: the first whose length holds ceil(left / rate - 1e-9)
        # cycles (ceil(x) <= L exactly when x <= L, for an integer L), else the open-ended last one
        a = times[i]
        for b in islice(times, i + 1, stop + 1):    # segment j is [a, b)
            if left / rate - 1e-9 <= b - a:
                break
            left -= rate * (b - a)
            j += 1
            a = b
        if j == stop and stop < last:
            lengths = list(map(operator.sub, islice(times, j + 1, None), islice(times, j, None)))
            lefts = list(accumulate(map(operator.mul, repeat(rate), lengths), operator.sub, initial=left))
            k = next(compress(count(), map(operator.le, map(operator.sub, map(operator.truediv, lefts,
                                                                                repeat(rate)), repeat(1e-9)),
                                           lengths)), len(lengths))
            j, left = j + k, lefts[k]
        if cap - max(used[i:j + 1]) < rate:   # == min(cap - used[x]): some segment is short
            return None
        end = times[j] + math.ceil(left / rate - 1e-9)
        if j + 1 >= len(times) or end < times[j + 1]:
            self._split(end)            # the new segment after `end` keeps the old rate
        for x in range(i, j + 1):       # (a plain loop: the fewest operations for the usual few)
            used[x] += rate
        return end

    def forget_before(self, t: int) -> None:
        """Drop the segments that end at or before cycle `t` (no task starts before it again)."""
        i = bisect.bisect_right(self.times, t) - 1
        if i > 0:
            del self.times[:i]
            del self.used[:i]
