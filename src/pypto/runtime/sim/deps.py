"""Automatic task dependencies from overlapping DDR regions (SPEC §1, §7).

`DepTracker.add(task_id, accesses)` returns the earlier tasks a new task must wait for, with the
kind of each conflict:

- RAW: the new task reads a region an earlier task writes;
- WAW: both write it;
- WAR: the new task writes a region an earlier task reads.

An argument's direction gives its access: In reads, Out writes, InOut does both. Regions are
compared exactly for boxes of the same buffer (`regions.Region`), conservatively otherwise.

Index: per DDR buffer, reads and writes are kept apart, each in buckets of a fixed byte size (chosen
from the first access to that buffer, a power of two between 4 KiB and 4 MiB), so a query only
looks at accesses of the kind it can conflict with whose byte ranges share a bucket. An access fully covered by a later write is dropped: anything
that later conflicts with it also conflicts with the covering write, which already depends on it,
so the order is kept transitively and the index stays small when a buffer is rewritten in a loop.
"""

from __future__ import annotations

from collections.abc import Iterable

from .regions import Region

__all__ = ["DepTracker", "Access"]

_MIN_BUCKET, _MAX_BUCKET = 1 << 12, 1 << 22

Access = tuple[Region, bool, bool]   # (region, reads, writes)


class _Entry:
    __slots__ = ("region", "task", "write", "alive")

    def __init__(self, region: Region, task: int, write: bool) -> None:
        self.region, self.task, self.write, self.alive = region, task, write, True


class _Index:
    """Accesses of one kind (reads or writes) to one DDR buffer, bucketed by byte range."""

    __slots__ = ("size", "buckets")

    def __init__(self, size: int) -> None:
        self.size = size
        self.buckets: dict[int, list[_Entry]] = {}

    def cells(self, r: Region) -> range:
        return range(r.lo // self.size, max(r.hi - 1, r.lo) // self.size + 1)

    def candidates(self, r: Region) -> Iterable[_Entry]:
        """Live entries sharing a bucket with `r` (each once)."""
        cells = self.cells(r)
        if len(cells) == 1:
            bucket = self.buckets.get(cells[0])
            return self._alive(cells[0], bucket) if bucket else ()
        seen: dict[int, _Entry] = {}
        for c in cells:
            bucket = self.buckets.get(c)
            if bucket:
                for e in self._alive(c, bucket):
                    seen[id(e)] = e
        return seen.values()

    def _alive(self, cell: int, bucket: list[_Entry]) -> list[_Entry]:
        live = [e for e in bucket if e.alive]
        if len(live) != len(bucket):
            if live:
                self.buckets[cell] = live
            else:
                del self.buckets[cell]
        return live

    def insert(self, e: _Entry) -> None:
        for c in self.cells(e.region):
            self.buckets.setdefault(c, []).append(e)


def _bucket_size(span: int) -> int:
    size = _MIN_BUCKET
    while size < span and size < _MAX_BUCKET:
        size <<= 1
    return size


class DepTracker:
    """Region-based dependency finder for one run (see the module docstring).

    Reads and writes of a buffer are indexed apart: a read only has to look at earlier writes, so
    a tensor read by many tasks (weights) costs its readers nothing.
    """

    def __init__(self) -> None:
        self._buffers: dict[int, tuple[_Index, _Index]] = {}

    def reset(self) -> None:
        """Forget every access (start of a run)."""
        self._buffers = {}

    def live_entries(self) -> int:
        """How many recorded accesses are still indexed (dropped ones excluded)."""
        seen: set[int] = set()
        for idx in self._buffers.values():
            for index in idx:
                for bucket in index.buckets.values():
                    seen.update(id(e) for e in bucket if e.alive)
        return len(seen)

    def add(self, task_id: int, accesses: Iterable[Access], since: int | None = None,
            derive: bool = True) -> dict[int, str]:
        """Record the accesses of task `task_id`; return {earlier task id: "RAW" | "WAW" | "WAR"}.

        When a pair conflicts in several ways, RAW wins over WAW, and WAW over WAR. With `since`,
        accesses of tasks numbered `since` or later (the other tasks of the same Group call, which
        run together and are ordered by their pipes) are neither dependencies nor dropped as
        covered. With `derive=False` (a task of a MANUAL runtime scope, SPEC §13) the accesses are
        only recorded, for the tasks after it: nothing is returned and nothing is dropped (no
        dependency orders this task after the ones it would cover).
        """
        if not derive:
            for region, reads, writes in accesses:
                idx = self._index(region)
                if writes or reads:
                    idx[1 if writes else 0].insert(_Entry(region, task_id, writes))
            return {}
        lo = task_id if since is None else since
        deps: dict[int, str] = {}
        new: list[tuple[_Index, _Entry]] = []
        for region, reads, writes in accesses:
            readers, writers = self._index(region)
            for e in writers.candidates(region):
                if e.task >= lo or not e.region.overlaps(region):
                    continue
                kind = "RAW" if reads else "WAW"
                old = deps.get(e.task)
                if old is None or _RANK[kind] < _RANK[old]:
                    deps[e.task] = kind
                if writes and region.covers(e.region):
                    e.alive = False
            if writes:
                for e in readers.candidates(region):
                    if e.task >= lo or not e.region.overlaps(region):
                        continue
                    deps.setdefault(e.task, "WAR")
                    if region.covers(e.region):
                        e.alive = False
            if writes:
                new.append((writers, _Entry(region, task_id, True)))
            elif reads:
                new.append((readers, _Entry(region, task_id, False)))
        for index, e in new:
            index.insert(e)
        return deps

    def _index(self, region: Region) -> tuple[_Index, _Index]:
        """(readers, writers) of `region`'s buffer (created on first use)."""
        idx = self._buffers.get(region.key)
        if idx is None:
            size = _bucket_size(region.hi - region.lo)
            idx = self._buffers[region.key] = (_Index(size), _Index(size))
        return idx


_RANK = {"RAW": 0, "WAW": 1, "WAR": 2}
