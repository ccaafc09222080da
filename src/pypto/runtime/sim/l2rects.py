"""The L2 stamps of one DDR buffer as disjoint rectangles of lines (the fast path of `l2cache.py`).

`L2Cache` keeps, per line of a DDR buffer, the fill count when the line was last touched (its
*stamp*). Tasks touch their regions whole, so neighbouring lines share their stamps: a tile's lines
all have the stamp of the last task that touched the tile. `LineRects` stores exactly these runs of
equal stamps instead of one stamp per line, so looking a region up costs a few Python operations
per rectangle instead of numpy work per line.

Geometry: line `L` of the buffer sits at row `L // k`, column `L % k` of a grid `k` lines wide
(`k`: the buffer's row stride in lines, from its first touch). A region whose rows are whole lines
apart and do not wrap around a grid row is one rectangle (rows, columns) of that grid; a contiguous
byte range is at most three (a partial first row, whole rows, a partial last row). The store is a
set of disjoint rectangles, each with one stamp; a line in no rectangle was never touched.

`touch(rects, threshold, fills)` does what `L2Cache._touch` does line by line: the lines of the
rectangles whose stamp is at most `threshold` (or that were never touched) are missed; all of them
get the stamp `fills + missed`. A rectangle already stored exactly is looked up in one step; else
the stored rectangles it overlaps (found through a grid of cells) give up the overlapped part
(each is cut into at most four rectangles around it). The result equals the per-line model exactly;
`tests/runtime/test_rt_l2cache.py` compares the two on random regions.
"""

from __future__ import annotations

__all__ = ["LineRects", "Rect", "range_rects", "first_cell", "MAX_RECTS"]

Rect = tuple[int, int, int, int]        # rows [r0, r1), columns [c0, c1) of the line grid

MAX_RECTS = 1 << 13      # more stored rectangles than this: the buffer goes back to a stamp array
_MAX_CELLS = 64          # a rectangle over more grid cells than this is kept in `big`


def range_rects(first: int, last: int, k: int) -> list[Rect]:
    """The rectangles of lines `first..last` (inclusive) on a grid `k` lines wide: at most three."""
    r0, c0 = divmod(first, k)
    r1, c1 = divmod(last, k)
    if r0 == r1:
        return [(r0, r0 + 1, c0, c1 + 1)]
    out = []
    top = r0 if c0 == 0 else r0 + 1
    bottom = r1 + 1 if c1 == k - 1 else r1
    if c0:
        out.append((r0, r0 + 1, c0, k))
    if top < bottom:
        out.append((top, bottom, 0, k))
    if c1 != k - 1:
        out.append((r1, r1 + 1, 0, c1 + 1))
    return out


def _pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


class LineRects:
    """Disjoint rectangles of lines with one stamp each, for one DDR buffer (module docstring).

    Args:
        k: lines per row of the line grid.
        cell: (rows, columns) of a grid cell of the index (powers of two).

    Attributes:
        rects: {rectangle: stamp}.
    """

    __slots__ = ("k", "cr", "cc", "rects", "cells", "big")

    def __init__(self, k: int, cell: tuple[int, int]) -> None:
        self.k = k
        self.cr, self.cc = cell
        self.rects: dict[Rect, int] = {}
        self.cells: dict[tuple[int, int], set[Rect]] = {}
        self.big: set[Rect] = set()        # rectangles over more than _MAX_CELLS cells

    def _cells(self, q: Rect) -> list[tuple[int, int]] | None:
        cr, cc = self.cr, self.cc
        a0, a1, b0, b1 = q[0] // cr, (q[1] - 1) // cr, q[2] // cc, (q[3] - 1) // cc
        if a0 == a1 and b0 == b1:
            return [(a0, b0)]
        if (a1 - a0 + 1) * (b1 - b0 + 1) > _MAX_CELLS:
            return None
        return [(a, b) for a in range(a0, a1 + 1) for b in range(b0, b1 + 1)]

    def _insert(self, q: Rect, stamp: int, cells: list[tuple[int, int]] | None | bool = False) -> None:
        self.rects[q] = stamp
        if cells is False:
            cells = self._cells(q)
        if cells is None:
            self.big.add(q)
            return
        index = self.cells
        for c in cells:     # type: ignore[union-attr]
            s = index.get(c)
            if s is None:
                index[c] = {q}
            else:
                s.add(q)

    def _remove(self, q: Rect) -> int:
        stamp = self.rects.pop(q)
        cells = self._cells(q)
        if cells is None:
            self.big.discard(q)
        else:
            index = self.cells
            for c in cells:
                s = index[c]
                s.discard(q)
                if not s:
                    del index[c]
        return stamp

    def _overlapping(self, q: Rect, cells: list[tuple[int, int]] | None) -> list[Rect]:
        """The stored rectangles that overlap `q` (whose grid cells are `cells`)."""
        r0, r1, c0, c1 = q
        if cells is None:
            pool = self.rects.keys()
        else:
            index = self.cells
            if len(cells) == 1:
                pool = index.get(cells[0], ())     # type: ignore[assignment]
            else:
                pool = set()                       # type: ignore[assignment]
                for c in cells:
                    s = index.get(c)
                    if s:
                        pool |= s                  # type: ignore[operator]
            if self.big:
                pool = set(pool) | self.big        # type: ignore[assignment]
        return [o for o in pool if o[0] < r1 and r0 < o[1] and o[2] < c1 and c0 < o[3]] if pool else []

    def touch(self, rects: list[Rect], threshold: int, fills: int) -> int:
        """Look the lines of disjoint rectangles `rects` up: returns how many were missed (never
        touched, or stamped at most `threshold`), and stamps all of them `fills + missed`."""
        stored, cr, cc = self.rects, self.cr, self.cc
        missed = 0
        for q in rects:
            s = stored.get(q)
            if s is not None:           # stored whole: no other rectangle overlaps it
                if s <= threshold:
                    missed += (q[1] - q[0]) * (q[3] - q[2])
                continue
            r0, r1, c0, c1 = q
            a, b = r0 // cr, c0 // cc
            if a == (r1 - 1) // cr and b == (c1 - 1) // cc and not self.big:
                cell = (a, b)
                if cell not in self.cells:      # in one empty cell: never touched
                    missed += (r1 - r0) * (c1 - c0)
                    stored[q] = 0
                    self.cells[cell] = {q}
                    continue
            covered = 0
            cells = self._cells(q)
            for o in self._overlapping(q, cells):
                s = self._remove(o)
                a0, a1, b0, b1 = o
                m0, m1 = max(a0, r0), min(a1, r1)
                n = (m1 - m0) * (min(b1, c1) - max(b0, c0))
                covered += n
                if s <= threshold:
                    missed += n
                if a0 < r0:
                    self._insert((a0, r0, b0, b1), s)
                if r1 < a1:
                    self._insert((r1, a1, b0, b1), s)
                if b0 < c0:
                    self._insert((m0, m1, b0, c0), s)
                if c1 < b1:
                    self._insert((m0, m1, c1, b1), s)
            missed += (r1 - r0) * (c1 - c0) - covered
            self._insert(q, 0, cells)
        stamp = fills + missed
        for q in rects:
            stored[q] = stamp
        return missed

def first_cell(q: Rect) -> tuple[int, int]:
    """The grid cell for a buffer whose first rectangle is `q`: its extent, rounded up to powers of two."""
    return _pow2(q[1] - q[0]), _pow2(q[3] - q[2])
