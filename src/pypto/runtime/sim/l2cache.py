"""The chip's L2 cache in front of DDR (HBM): which DDR bytes a task reads reach HBM (issue 14 item 3).

Every core reads DDR through the chip's L2 cache, shared by all cores (Ascend910B: 192 MiB,
`SoCModel.l2_bytes`), in lines of `SoCModel.ddr_access_granularity` bytes (512 on Ascend910B: the
cache line the Ascend C programming guide asks DDR transfers to be aligned to). A line another task
read or wrote recently is served by L2; only the others (misses) are fetched from HBM, a whole line
each. So the HBM traffic of a task is its missed lines plus what it stores, and this — not what
its cores move — is what the chip's shared HBM bandwidth (`bandwidth.DdrChannel`) limits. A core
itself moves its data at its own MTE rate whether the lines hit or miss (`cost_model`).

How `L2Cache.hbm_bytes(task)` decides, in the order tasks start (the scheduler's deterministic
order, so the same program gives the same cycles):

- the lines a task may read are those of the DDR regions of its input arguments (`Task.accesses`:
  the bounding boxes of its loads, row by row; a region that is not a box counts as its whole byte
  range); lines it writes (its output regions) become resident too (write-allocate);
- a line is a hit when it was touched before and fewer than `l2_bytes / line` lines were filled
  into the cache since its last touch (a least-recently-used cache, its stack distance counted in
  fills); a task's misses are filled at its start, so a task starting at the same cycle as one that
  missed a line hits it (the two requests merge);
- the task's HBM read bytes are its missed lines times the line size, but never more than the
  bytes its loads were charged in whole granules (an input region the kernel never loads, e.g. an
  InOut argument it only stores to, costs nothing); its HBM write bytes are the bytes it stored.

Not modelled: where the line lives (L2 slices and their distance to the core), the L2's own
bandwidth limit (each core's MTE rate bounds it), write-back of dirty lines at eviction (a store
costs HBM bytes when it is made), lines read by the orchestrator or the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .cost_model import ddr_bytes_of, ddr_read_write_bytes
from .l2rects import MAX_RECTS, LineRects, Rect, first_cell, range_rects
from .regions import Region

__all__ = ["L2Cache", "region_lines"]

_NEVER = -(1 << 62)
_MEMO_LIMIT = 1 << 16
_FLAT = 1 << 40      # the grid width of a buffer without rows of whole lines: one grid row


def region_lines(region: Region, elem_bytes: int, line: int) -> np.ndarray:
    """Indices of the `line`-byte lines (from the start of the buffer) that `region` touches:
    per row of a box (all dimensions but the last), the lines its contiguous bytes span; for a
    region that is not a box, every line of its byte range. Sorted, unique, int64."""
    if region.hi <= region.lo:
        return np.empty(0, dtype=np.int64)
    if region.box is None or region.strides is None or not region.box:
        return np.arange(region.lo // line, (region.hi - 1) // line + 1, dtype=np.int64)
    box, strides = region.box, region.strides
    starts = np.array([region.lo], dtype=np.int64)
    for (a, b), s in zip(box[:-1], strides[:-1]):
        starts = (starts[:, None] + np.arange(b - a, dtype=np.int64) * (s * elem_bytes)).reshape(-1)
    a, b = box[-1]
    row = (b - a - 1) * strides[-1] * elem_bytes + elem_bytes
    first = starts // line
    last = (starts + row - 1) // line
    span = int((last - first).max()) + 1
    idx = first[:, None] + np.arange(span, dtype=np.int64)
    return np.unique(idx[idx <= last[:, None]])


class L2Cache:
    """The L2 state of one run (module docstring).

    Per DDR buffer, the stamp of each line: the number of lines filled into the cache when it was
    last touched (never touched: a large negative number). A buffer's stamps are kept as disjoint
    rectangles of lines with one stamp each (`l2rects.LineRects`) while its regions are such
    rectangles (tiles of a matrix, byte ranges); a buffer touched otherwise (rows not whole lines
    apart, boxes of more than two dimensions, too many rectangles) keeps one stamp per line in an
    array from then on. A region's lines are a strided view of that array when the buffer's row
    strides are whole lines (rows of a multiple of 512 bytes), else an index list (`region_lines`).
    Both forms give the same hits and misses.

    Args:
        capacity: bytes of the cache (`SoCModel.l2_bytes`).
        line: bytes of one line (`SoCModel.ddr_access_granularity`).
        rects: keep stamps as rectangles where possible (False: always one stamp per line, the
            straightforward form the tests compare the rectangles against).
        memo: {id(region): (region, element bytes, grid width, its rectangles, their lines)}: the
            rectangles are a function of the region, element size and width, so one dict may serve
            the caches of many runs (the scheduler's does; regions are cached by the device).

    Attributes:
        hit_bytes / miss_bytes: bytes of read lines served by L2 / fetched from HBM so far.
    """

    def __init__(self, capacity: int, line: int, rects: bool = True, memo: dict | None = None) -> None:
        self.line = line
        self.lines = max(1, capacity // line)
        self.fills = 0
        self.hit_bytes = 0
        self.miss_bytes = 0
        self._stamps: dict[int, np.ndarray] = {}
        self._rects: dict[int, LineRects] = {}
        self._use_rects = rects
        self.max_rects = MAX_RECTS     # a buffer with more rectangles goes back to an array
        self._memo: dict[int, tuple[Region, int, int, list[Rect] | None, int]] = {} if memo is None else memo
        self._charged: dict[int, tuple[Any, tuple[int, int]]] = {}   # id(TaskCost) -> (it, its bytes)

    def _stamps_of(self, key: int, arg: torch.Tensor, top: int) -> np.ndarray:
        """The stamps of buffer `key` (the storage of `arg`), with room for line index `top`."""
        st = self._stamps.get(key)
        if st is None or st.shape[0] <= top:
            n = max(top + 1, -(-arg.untyped_storage().nbytes() // self.line) + 1)
            grown = np.full(n, _NEVER, dtype=np.int64)
            if st is not None:
                grown[:st.shape[0]] = st
            st = self._stamps[key] = grown
        return st

    def _view(self, region: Region, arg: torch.Tensor) -> tuple[np.ndarray, np.ndarray | None]:
        """(a view of the stamps of the lines `region` touches, None) when its rows are whole lines
        apart; else (the buffer's stamps, the indices of the lines)."""
        line, isz = self.line, arg.element_size()
        box, strides = region.box, region.strides
        if box is None or strides is None or not box:
            lo, hi = region.lo // line, (region.hi - 1) // line
            return self._stamps_of(region.key, arg, hi)[lo:hi + 1], None
        row = (box[-1][1] - box[-1][0] - 1) * strides[-1] * isz + isz
        first = region.lo // line
        cols = (region.lo + row - 1) // line - first + 1
        if len(box) == 2 and strides[0] * isz % line == 0:      # rows of whole lines: a 2-D view
            n, k = box[0][1] - box[0][0], strides[0] * isz // line
            st = self._stamps_of(region.key, arg, first + n * max(k, cols))
            if k >= cols:
                return st[first:first + n * k].reshape(n, k)[:, :cols], None
        lines = region_lines(region, isz, line)
        return self._stamps_of(region.key, arg, int(lines[-1])), lines

    def _rects_of(self, region: Region, isz: int, k: int) -> list[Rect] | None:
        """The lines of `region` as disjoint rectangles of a grid `k` lines wide; None when they
        are not one rectangle or a byte range."""
        line, box, strides = self.line, region.box, region.strides
        if box is None or strides is None or len(box) < 2:
            return range_rects(region.lo // line, (region.hi - 1) // line, k)
        if len(box) > 2:
            return None
        (a, b), (c, d) = box
        first = region.lo // line
        last = (region.lo + (d - c - 1) * strides[1] * isz + isz - 1) // line
        if b - a == 1:
            return range_rects(first, last, k)
        r0, c0 = divmod(first, k)
        c1 = c0 + last - first + 1
        if strides[0] * isz != k * line or c1 > k:
            return None
        return [(r0, r0 + b - a, c0, c1)]

    def _new_rects(self, region: Region, arg: torch.Tensor) -> LineRects | None:
        """The rectangle store of a buffer first touched through `region` (None: not possible)."""
        line, isz = self.line, arg.element_size()
        box, strides = region.box, region.strides
        if box is not None and strides is not None and len(box) == 2 and strides[0] * isz % line == 0 \
                and strides[0] * isz >= line:
            k = strides[0] * isz // line
        elif arg.dim() >= 2 and arg.stride(-2) * isz % line == 0 and arg.stride(-2) * isz >= line:
            k = arg.stride(-2) * isz // line
        else:
            k = _FLAT
        rects = self._rects_of(region, isz, k)
        if rects is None:
            return None
        lr = self._rects[region.key] = LineRects(k, first_cell(rects[0]))
        return lr

    def _to_array(self, key: int, arg: torch.Tensor) -> None:
        """Buffer `key` keeps one stamp per line from now on (its rectangles written out)."""
        lr = self._rects.pop(key)
        k = lr.k
        for (r0, r1, c0, c1), stamp in lr.rects.items():
            if r1 - r0 == 1:
                self._stamps_of(key, arg, r0 * k + c1 - 1)[r0 * k + c0:r0 * k + c1] = stamp
            else:
                st = self._stamps_of(key, arg, r1 * k)
                st[r0 * k:r1 * k].reshape(r1 - r0, k)[:, c0:c1] = stamp
        self._stamps_of(key, arg, 0)

    def _touch(self, region: Region, arg: torch.Tensor) -> tuple[int, int]:
        """Look the lines of `region` up, fill the missing ones, refresh all. Returns (lines, misses)."""
        key = region.key
        lr = self._rects.get(key)       # set only while the buffer has no stamp array
        if lr is None and self._use_rects and key not in self._stamps and region.hi > region.lo:
            lr = self._new_rects(region, arg)
        if lr is not None:
            got = self._memo.get(id(region))   # the usual case: a region seen before (so not empty)
            if got is None or got[0] is not region or got[2] != lr.k or got[1] != arg.element_size():
                if region.hi <= region.lo:
                    return 0, 0
                if len(self._memo) >= _MEMO_LIMIT:
                    self._memo.clear()
                isz = arg.element_size()
                rects = self._rects_of(region, isz, lr.k)
                got = self._memo[id(region)] = (region, isz, lr.k, rects, 0 if rects is None else
                                                sum((r1 - r0) * (c1 - c0) for r0, r1, c0, c1 in rects))
            if got[3] is not None:
                fills = self.fills
                missed = lr.touch(got[3], fills - self.lines, fills)
                self.fills = fills + missed
                if len(lr.rects) > self.max_rects:
                    self._to_array(key, arg)
                return got[4], missed
            self._to_array(key, arg)
        if region.hi <= region.lo:
            return 0, 0
        view, lines = self._view(region, arg)
        if lines is not None:
            st, view = view, view[lines]
        missed = int(np.count_nonzero(view <= self.fills - self.lines))
        self.fills += missed
        if lines is None:
            view[...] = self.fills
        else:
            st[lines] = self.fills
        return view.size, missed

    def hbm_bytes(self, task: Any) -> int:
        """Bytes `task` moves to and from HBM (module docstring); updates the cache. A task
        without recorded accesses moves what its cost says (`cost_model.ddr_bytes_of`). The
        regions of one task are looked up one after another: a line two of them share is missed
        at most once."""
        cost = task.cost
        if cost is None:
            return 0
        accesses = getattr(task, "accesses", ())
        if not accesses:
            return ddr_bytes_of(cost)
        args, touch = task.args, self._touch
        read = missed = 0
        for i, region, rd, _ in accesses:
            if rd:
                n, m = touch(region, args[i])
                read += n
                missed += m
        for i, region, _, wr in accesses:
            if wr:
                touch(region, args[i])
        self.hit_bytes += (read - missed) * self.line
        self.miss_bytes += missed * self.line
        hit = self._charged.get(id(cost))      # a static kernel returns the same TaskCost each run
        if hit is None or hit[0] is not cost:
            hit = self._charged[id(cost)] = (cost, ddr_read_write_bytes(task))
        charged_reads, written = hit[1]
        return min(missed * self.line, charged_reads) + written
