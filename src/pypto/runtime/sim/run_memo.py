"""Values a full simulation computes again and again on the same objects, kept from one run to the next
(issue 14 item 5: resolve once what does not depend on data).

A run of an orchestration that loops over tiles makes, per task, the same views of the same DDR
tensors as the run before it (`tensor.slice` at the same offsets), finds their DDR regions, and
stacks the same views into the lanes of its batches. `RunMemo` keeps such results keyed by what
they were computed from, for the run in progress and the one before it only: at the first lookup
of a new run (`SimDevice.run_serial` moved on), what the run before the last did not use again is
dropped, so a memo holds at most two runs' worth of entries.

Entries hold weak references to the tensors they were computed from, never the tensors: a memo
keeps nothing alive, and what it finds again is what the last run's records (its tasks'
arguments) still hold. Users: the orchestrator's view ops (`orchestrator.py`: a view is found
again only for the same source tensor object with the same data pointer, shape and strides), the
device's regions of those views (`SimDevice._accesses`), and the lane runs of a batch
(`BatchKernel.batch_env`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["RunMemo"]


class RunMemo:
    """A memo of the current and the previous run (module docstring). `get(key, serial)` with the
    device's `run_serial`; `put(key, value)` after a miss. Values must not be None."""

    __slots__ = ("_cur", "_prev", "_serial")

    def __init__(self) -> None:
        self._cur: dict[Any, Any] = {}
        self._prev: dict[Any, Any] = {}
        self._serial = -1

    def get(self, key: Any, serial: int) -> Any:
        """The value stored under `key` by this run or the one before it (moved to this run's
        generation), else None."""
        if serial != self._serial:
            self._prev, self._cur, self._serial = self._cur, {}, serial
        v = self._cur.get(key)
        if v is None:
            v = self._prev.pop(key, None)
            if v is not None:
                self._cur[key] = v
        return v

    def put(self, key: Any, value: Any) -> None:
        """Store `value` under `key` for this run (after `get` returned None for it)."""
        self._cur[key] = value

    def __len__(self) -> int:
        return len(self._cur) + len(self._prev)
