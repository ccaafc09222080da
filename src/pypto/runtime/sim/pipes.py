"""Pipes that overlap within a task (issue 14 item 1): the time of one task as a critical path.

An AI core has one queue per pipe (MTE2 loads, Vector, Cube, MTE1 L1 -> L0 moves, FIXPIPE drains,
MTE3 stores, Scalar); ops of different pipes run at the same time, synchronised by flags: an op
waits for the earlier ops whose results it reads (RAW), and for the earlier ops that read or write
a buffer it writes (WAR, WAW). `PipeSchedule` replays the ops a task executed, in program order:

    start = max(its pipe is free, end of the last earlier write of every buffer it reads,
                end of the last earlier read or write of every buffer it writes)
    end   = start + its cycles (`cost_model.op_cost`)

and the task's work is the latest end (plus `task_launch`), not the sum of its ops. Buffers are the
on-chip extents the ops read and write (overlapping extents conflict) and the DDR tensors they load
or store (one buffer per tensor variable of the kernel: a store and a later load of one DDR tensor
reached through different variables, e.g. a loop-carried tensor and a parameter, are not ordered). The dependencies are those of the kernel's data: they
are the flags a hand-written kernel would set and wait on.

Not modelled: the scalar unit that issues the ops (it never holds a pipe back), and flag latency.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import NamedTuple

from ...ops.effects import conflict
from .cost_model import OpCost

__all__ = ["PipeSchedule", "PipeOp"]


class PipeOp(NamedTuple):
    """One op placed on its pipe: cost `site` index, `pipe` name, `start` / `end` in cycles."""

    site: int
    pipe: str
    start: int
    end: int


class PipeSchedule:
    """Critical path of the ops of one kernel (module docstring).

    Args:
        sites: the static cost of each op site of the kernel.
        effects: per site, (buffers it reads, buffers it writes): hashable keys; a key with an
            `overlaps(other)` method (an on-chip `Extent`) conflicts with every key it overlaps,
            any other key only with itself.
    """

    def __init__(self, sites: Sequence[OpCost], effects: Sequence[tuple[tuple, tuple]]) -> None:
        keys: list[Hashable] = []
        index: dict[Hashable, int] = {}
        for reads, writes in effects:
            for k in (*reads, *writes):
                if k not in index:
                    index[k] = len(keys)
                    keys.append(k)
        conflicts = [tuple(j for j, o in enumerate(keys) if conflict(k, o)) for k in keys]
        pipes: dict[str, int] = {}
        self._plan = []
        for cost, (reads, writes) in zip(sites, effects):
            r = tuple(sorted({index[k] for k in reads}))
            w = tuple(sorted({index[k] for k in writes}))
            wait_w = tuple(sorted({j for i in r for j in conflicts[i]}))    # RAW: their writers
            wait_rw = tuple(sorted({j for i in w for j in conflicts[i]}))   # WAR / WAW
            self._plan.append((pipes.setdefault(cost.pipe, len(pipes)), cost.cycles, r, w, wait_w, wait_rw))
        self._npipes, self._nbufs = len(pipes), len(keys)
        self._pipe_names = tuple(pipes)
        self._paths: dict[tuple[int, ...], int] = {}

    def critical_path(self, order: Iterable[int]) -> int:
        """End of the last op when the sites run in `order` (site indices, program order).

        Remembered per order: a kernel with loops usually runs the same op sequence in every task."""
        key = tuple(order)
        cp = self._paths.get(key)
        if cp is None:
            if len(self._paths) >= 256:
                self._paths.clear()
            cp = self._paths[key] = self._replay(key, None)
        return cp

    def timeline(self, order: Iterable[int]) -> list[PipeOp]:
        """Every op with cycles when the sites run in `order`: its site, pipe, start and end (cycles
        from the task's first op, launch not included), in program order."""
        out: list[PipeOp] = []
        self._replay(order, out)
        return out

    def _replay(self, order: Iterable[int], out: list[PipeOp] | None) -> int:
        pipe_free = [0] * self._npipes
        wrote = [0] * self._nbufs
        read = [0] * self._nbufs
        plan = self._plan
        last = 0
        for k in order:
            pipe, cycles, r, w, wait_w, wait_rw = plan[k]
            if not cycles:
                continue
            start = pipe_free[pipe]
            for j in wait_w:
                if wrote[j] > start:
                    start = wrote[j]
            for j in wait_rw:
                if wrote[j] > start:
                    start = wrote[j]
                if read[j] > start:
                    start = read[j]
            end = start + cycles
            pipe_free[pipe] = end
            for j in r:
                if read[j] < end:
                    read[j] = end
            for j in w:
                wrote[j] = end
            if end > last:
                last = end
            if out is not None:
                out.append(PipeOp(k, self._pipe_names[pipe], start, end))
        return last
