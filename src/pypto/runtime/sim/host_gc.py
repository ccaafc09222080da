"""Python's cyclic garbage collector during a simulator run (issue 14 item 5: a faster simulator).

CPython collects its youngest generation every 700 net allocations of container objects
(`gc.get_threshold()[0]`). A full simulation allocates tens of thousands of them — tasks, their
arguments, regions and dependency records — that live until the run ends. Collected every 700
allocations, they are scanned again and again, and the ones that outlive two young collections are
promoted to the oldest generation, whose size decides when CPython scans *every* object of the
process (a "full" collection: some 40 ms in a process that has imported torch and compiled a few
programs). Measured with `benchmarks/sim_throughput.py`'s workload (a): one full collection every
four to five runs, which put the mean time of a run about 4 ms (15 %) above its median.

`fewer_collections()` raises the youngest generation's threshold to `YOUNG_THRESHOLD` while a run
is in progress. Objects the run makes and drops never get scanned, those it keeps are scanned
about once, and few reach the oldest generation. Garbage that is not in a reference cycle is
freed at once as always (reference counting); cyclic garbage waits for the next collection, at
most `YOUNG_THRESHOLD` allocations later. The threshold is a process setting: it is restored when
the last run in progress (of any thread) ends, and the caller's own thresholds are kept (a
threshold already at least `YOUNG_THRESHOLD`, or 0 = collection disabled, is left alone).

What the run leaves in the youngest generation — its record, which lives until the next run — would
then be scanned by the first young collection after the run (about 0.5 ms for workload (a)), only
to be promoted. A full simulation's records hold no reference cycles (they are freed by reference
counting when the next run drops them), so when the threshold is restored the survivors go straight
to the oldest generation instead: `gc.freeze()` then `gc.unfreeze()`, which moves them without
scanning anything. Not done while the caller has frozen objects of its own (`gc.get_freeze_count()`)
or disabled collection.

Objects moved so are never scanned young, and CPython does not count them towards its next full
collection (only objects a collection promotes count). Two rules keep garbage from piling up
there: the first run of a batch of runs first collects the two young generations (`gc.collect(1)`:
what the caller allocated since the last run, few objects — a loop that drops a reference cycle
holding a large tensor between runs would otherwise keep every one of them), and once the runs
have moved `FULL_AFTER` objects (net: `gc.get_count()[0]` when a run ends), a full collection
runs instead of the move (for cycles made while runs were in progress).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["YOUNG_THRESHOLD", "fewer_collections"]

YOUNG_THRESHOLD = 100_000
"""Allocations between two young collections during a run (CPython's default: 700)."""

FULL_AFTER = 200_000
"""Objects the runs may move to the oldest generation unscanned before a run ends with a full
collection instead (module docstring)."""

_LOCK = threading.Lock()
_STATE: list = [0, None, 0]    # runs in progress, the thresholds to restore (None: left alone), objects moved


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Within the block (a simulator run), collect the youngest generation every
    `YOUNG_THRESHOLD` allocations instead of the process's setting (module docstring). Nests and
    may be entered by several threads; the last to leave restores the setting."""
    if _STATE[0] == 0 and 0 < gc.get_threshold()[0] < YOUNG_THRESHOLD and gc.isenabled() \
            and gc.get_count()[:2] != (0, 0) and gc.get_freeze_count() == 0:
        gc.collect(1)   # the young garbage the caller made since the last run (outside the lock:
        #                 a finalizer may start a run)
    with _LOCK:
        if _STATE[0] == 0:
            old = gc.get_threshold()
            if 0 < old[0] < YOUNG_THRESHOLD:
                gc.set_threshold(YOUNG_THRESHOLD, *old[1:])
                _STATE[1] = old
            else:
                _STATE[1] = None
        _STATE[0] += 1
    try:
        yield
    finally:
        full = False
        with _LOCK:
            _STATE[0] -= 1
            if _STATE[0] == 0 and _STATE[1] is not None:
                # the caller's setting, unless it was changed during the run
                if gc.get_threshold()[0] == YOUNG_THRESHOLD:
                    if gc.isenabled() and gc.get_freeze_count() == 0:
                        _STATE[2] += gc.get_count()[0]
                        full = _STATE[2] >= FULL_AFTER
                        if full:
                            _STATE[2] = 0
                        else:
                            gc.freeze()     # the run's survivors to the oldest generation, unscanned
                            gc.unfreeze()
                    gc.set_threshold(*_STATE[1])
                _STATE[1] = None
        if full:
            gc.collect()    # what the runs moved to the oldest generation, scanned at last
