"""Values a full simulation computes again and again on the same objects, kept from one run to the next
(issue 14 item 5: resolve once what does not depend on data).

A run of an orchestration that loops over tiles makes, per task, the same views of the same DDR
tensors as the run before it (`tensor.slice` at the same offsets), finds their DDR regions, and
stacks the same views into the lanes of its batches. `RunMemo` keeps such results keyed by what
they were computed from. Each entry remembers the last run that used it; when a run starts using
the memo and it holds more than twice the entries the run before used (plus a few), the entries
that run did not use are dropped. A memo thus stays about the size of what one run uses.

Entries hold weak references to the tensors they were computed from, never the tensors: a memo
keeps nothing alive, and what it finds again is what the last run's records (its tasks'
arguments, kept until the next run ends: `SimDevice.begin_run`) still hold. Users: the
orchestrator's view ops (`orchestrator.py`: a view is found again only for the same source tensor
object with the same data pointer, dtype, shape and strides), the device's regions of those views
(`SimDevice._accesses`), and the lane runs of a batch (`BatchKernel.batch_env`).
"""

from __future__ import annotations

import weakref
from typing import Any

import torch

__all__ = ["RunMemo", "ViewMemo"]

_SLACK = 64   # entries a memo may hold beyond twice the last run's before it drops unused ones


class RunMemo:
    """A memo of values by key across runs (module docstring). `get(key, serial)` with the
    device's `run_serial`; `put(key, value)` after a miss. Values must not be None."""

    __slots__ = ("_d", "_serial", "_used")

    def __init__(self) -> None:
        self._d: dict[Any, list] = {}     # key -> [last run that used it, value]
        self._serial = -1
        self._used = 0                    # entries used by the run `_serial`

    def get(self, key: Any, serial: int) -> Any:
        """The value stored under `key`, else None."""
        if serial != self._serial:
            self._turn(serial)
        e = self._d.get(key)
        if e is None:
            return None
        if e[0] != serial:
            e[0] = serial
            self._used += 1
        return e[1]

    def put(self, key: Any, value: Any) -> None:
        """Store `value` under `key` (after `get` returned None for it in this run)."""
        self._d[key] = [self._serial, value]
        self._used += 1

    def _turn(self, serial: int) -> None:
        last, d = self._serial, self._d
        if len(d) > 2 * self._used + _SLACK:
            self._d = {k: e for k, e in d.items() if e[0] == last}
        self._serial, self._used = serial, 0

    def __len__(self) -> int:
        return len(self._d)


class ViewMemo:
    """The orchestrator's views and their DDR regions, kept across runs (module docstring).

    `source(x, serial)`: a token for tensor `x` as it is now — the same token while `x` is the
    same object with the same data pointer, dtype, shape and strides (checked once per run), a new
    one otherwise (tokens are never reused); views, and the lane runs of batches, are keyed by it.
    `views`: (call site, token, other arguments) -> weak reference to the view; id(view) -> [weak
    reference, its Region or None] (`region`)."""

    __slots__ = ("views", "_sources", "_tokens")

    def __init__(self) -> None:
        self.views = RunMemo()
        self._sources = RunMemo()
        self._tokens = 0

    @staticmethod
    def handed_out(values: tuple | None, args: Any) -> tuple | None:
        """A run's result `values` with each view the run made (a tensor view that is not one of
        the run's arguments `args`) replaced by a new view of the same elements: the caller owns
        what a run returns and may change it in place (`t_()`, `unsqueeze_()`, ...), which must
        not change the view the orchestrator finds again in the next run."""
        if values is None:
            return None
        return tuple(v.view_as(v) if isinstance(v, torch.Tensor) and v._base is not None
                     and not any(v is a for a in args) else v for v in values)

    def region(self, t: Any, serial: int, find: Any) -> Any:
        """The DDR region of tensor `t` in run `serial`: `find(t)` (`regions.region_of`) once for
        a view the orchestrator made and keeps (`views`), every time for any other tensor."""
        e = self.views.get(id(t), serial)
        if e is None or e[0]() is not t:
            return find(t)
        r = e[1]
        if r is None:
            r = e[1] = find(t)
        return r

    def source(self, x: Any, serial: int) -> int:
        """The token of tensor `x` in run `serial` (class docstring)."""
        e = self._sources.get(id(x), serial)
        if e is not None and e[0]() is x:
            if e[3] == serial:
                return e[2]
            meta = (x.data_ptr(), x.dtype, x.shape, x.stride())
            if meta == e[1]:
                e[3] = serial
                return e[2]
        else:
            meta = (x.data_ptr(), x.dtype, x.shape, x.stride())
        self._tokens += 1
        self._sources.put(id(x), [weakref.ref(x), meta, self._tokens, serial])
        return self._tokens
