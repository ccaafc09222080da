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

Boxes (`regions.Region.box`) of a buffer whose first access is a box are kept instead in a grid
of cells (per dimension a power of two at least the first box's extent; boxes with other strides
or over more than `_MAX_CELLS` cells stay in the byte buckets), so a tile of a matrix only meets
the tiles that share a cell with it, not every tile of the same rows. Candidates that overlap are taken in the order the byte
buckets alone would give (first shared bucket, then age), so the dependencies are found in the
same order either way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .regions import Region

__all__ = ["DepTracker", "Access"]

_MIN_BUCKET, _MAX_BUCKET = 1 << 12, 1 << 22
_MAX_CELLS = 64

Access = tuple[Region, bool, bool]   # (region, reads, writes)


class _Entry:
    __slots__ = ("region", "task", "write", "alive", "seq")

    def __init__(self, region: Region, task: int, write: bool, seq: int = 0) -> None:
        self.region, self.task, self.write, self.alive, self.seq = region, task, write, True, seq


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

    def _alive(self, cell: Any, bucket: list[_Entry]) -> list[_Entry]:
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


class _Grid(_Index):
    """Boxes of one kind of access to one buffer (all with the strides `strides`) by grid cell;
    `cells` is None for a box spanning more than `_MAX_CELLS` cells (kept in the byte buckets)."""

    __slots__ = ("strides", "extent")

    def __init__(self, strides: tuple[int, ...], extent: tuple[int, ...]) -> None:
        super().__init__(0)
        self.strides, self.extent = strides, extent

    def grid_cells(self, r: Region) -> list[tuple[int, ...]] | None:
        box = r.box
        if box is None or r.strides != self.strides:
            return None
        if len(box) == 2:       # the usual tile of a matrix, in one cell
            (a0, b0), (a1, b1) = box
            n0, n1 = self.extent
            c0, c1 = a0 // n0, a1 // n1
            if (b0 - 1) // n0 == c0 and (b1 - 1) // n1 == c1:
                return [(c0, c1)]
        first = [a // n for (a, _), n in zip(box, self.extent)]
        last = [(b - 1) // n for (_, b), n in zip(box, self.extent)]
        if first == last:
            return [tuple(first)]
        cells: list[tuple[int, ...]] = [()]
        for f, t in zip(first, last):
            cells = [c + (x,) for c in cells for x in range(f, t + 1)]
            if len(cells) > _MAX_CELLS:
                return None
        return cells

    def live(self) -> Iterable[_Entry]:
        """Every live entry on the grid (each once)."""
        seen: dict[int, _Entry] = {}
        for c in list(self.buckets):
            for e in self._alive(c, self.buckets[c]):
                seen[id(e)] = e
        return seen.values()

    def grid_candidates(self, cells: list[tuple[int, ...]]) -> Iterable[_Entry]:
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

    def grid_insert(self, e: _Entry, cells: list[tuple[int, ...]]) -> None:
        for c in cells:
            self.buckets.setdefault(c, []).append(e)


class _Kind:
    """The accesses of one kind to one buffer: boxes on the grid (when the buffer has one) by grid
    cell, the others in byte buckets (`other`)."""

    __slots__ = ("other", "grid")

    def __init__(self, size: int, grid: _Grid | None) -> None:
        self.other, self.grid = _Index(size), grid

    def candidates(self, r: Region, cells: list[tuple[int, ...]] | None) -> list[_Entry]:
        """Live entries that overlap `r`, in byte-bucket order (see the module docstring)."""
        other, grid = self.other, self.grid
        found = [e for e in other.candidates(r) if e.region.overlaps(r)] if other.buckets else []
        if grid is None or not grid.buckets:
            return found
        found += [e for e in (grid.grid_candidates(cells) if cells is not None else grid.live())
                  if e.region.overlaps(r)]
        if len(found) > 1:
            size = self.other.size
            c0 = r.lo // size
            found.sort(key=lambda e: (max(c0, e.region.lo // size), e.seq))
        return found

    def insert(self, e: _Entry, cells: list[tuple[int, ...]] | None) -> None:
        if cells is None:
            self.other.insert(e)
        elif len(cells) == 1:   # the usual tile, in one cell
            self.grid.buckets.setdefault(cells[0], []).append(e)  # type: ignore[union-attr]
        else:
            self.grid.grid_insert(e, cells)  # type: ignore[union-attr]


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

    def __init__(self, grid: bool = True) -> None:
        self._buffers: dict[int, tuple[_Kind, _Kind, _Grid | None]] = {}
        self._seq = 0
        self._grid = grid   # False: byte buckets only (the same dependencies, in the same order)

    def reset(self) -> None:
        """Forget every access (start of a run)."""
        self._buffers = {}

    def live_entries(self) -> int:
        """How many recorded accesses are still indexed (dropped ones excluded)."""
        seen: set[int] = set()
        for readers, writers, _ in self._buffers.values():
            for kind in (readers, writers):
                for index in (kind.other, kind.grid):
                    for bucket in (index.buckets.values() if index is not None else ()):
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
                readers, writers, grid = self._index(region)
                if writes or reads:
                    self._seq += 1
                    (writers if writes else readers).insert(
                        _Entry(region, task_id, writes, self._seq),
                        grid.grid_cells(region) if grid is not None else None)
            return {}
        lo = task_id if since is None else since
        deps: dict[int, str] = {}
        new: list[tuple[_Kind, _Entry, Any]] = []
        buffers = self._buffers
        for region, reads, writes in accesses:
            readers, writers, grid = buffers.get(region.key) or self._index(region)
            cells = grid.grid_cells(region) if grid is not None else None
            # skipped in the usual case, a tile on a grid cell where no access it can conflict
            # with is recorded (e.g. its first access): both `candidates` would find nothing
            if cells is None or len(cells) != 1 or writers.other.buckets or cells[0] in writers.grid.buckets \
                    or writes and (readers.other.buckets or cells[0] in readers.grid.buckets):  # type: ignore[union-attr]
                _conflicts(deps, region, reads, writes, readers, writers, cells, lo)
            if writes or reads:
                self._seq += 1
                new.append((writers if writes else readers, _Entry(region, task_id, writes, self._seq), cells))
        for index, e, cells in new:
            index.insert(e, cells)
        return deps

    def _index(self, region: Region) -> tuple[_Kind, _Kind, _Grid | None]:
        """(readers, writers, grid config) of `region`'s buffer (created on first use)."""
        idx = self._buffers.get(region.key)
        if idx is None:
            size = _bucket_size(region.hi - region.lo)
            if self._grid and region.box is not None and region.strides is not None:
                extent = tuple(_pow2(b - a) for a, b in region.box)
                gr, gw = _Grid(region.strides, extent), _Grid(region.strides, extent)
            else:
                gr = gw = None
            idx = self._buffers[region.key] = (_Kind(size, gr), _Kind(size, gw), gr)
        return idx


def _conflicts(deps: dict[int, str], region: Region, reads: bool, writes: bool, readers: _Kind, writers: _Kind,
               cells: list[tuple[int, ...]] | None, lo: int) -> None:
    """Add to `deps` the tasks before `lo` whose accesses conflict with one of `region` (reads /
    writes, on grid `cells`), and drop those of their accesses the new one covers (`DepTracker.add`)."""
    for e in writers.candidates(region, cells):
        if e.task >= lo:
            continue
        kind = "RAW" if reads else "WAW"
        old = deps.get(e.task)
        if old is None or _RANK[kind] < _RANK[old]:
            deps[e.task] = kind
        if writes and region.covers(e.region):
            e.alive = False
    if writes:
        for e in readers.candidates(region, cells):
            if e.task >= lo:
                continue
            deps.setdefault(e.task, "WAR")
            if region.covers(e.region):
                e.alive = False


def _pow2(n: int) -> int:
    size = 1
    while size < n:
        size <<= 1
    return size


_RANK = {"RAW": 0, "WAW": 1, "WAR": 2}
