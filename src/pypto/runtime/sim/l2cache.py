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

import torch

from .regions import Region

__all__ = ["L2Cache", "region_lines"]

_NEVER = -(1 << 62)


def region_lines(region: Region, elem_bytes: int, line: int) -> torch.Tensor:
    """Indices of the `line`-byte lines (from the start of the buffer) that `region` touches:
    per row of a box (all dimensions but the last), the lines its contiguous bytes span; for a
    region that is not a box, every line of its byte range. Sorted, unique, int64."""
    if region.hi <= region.lo:
        return torch.empty(0, dtype=torch.int64)
    if region.box is None or region.strides is None or not region.box:
        return torch.arange(region.lo // line, (region.hi - 1) // line + 1, dtype=torch.int64)
    box, strides = region.box, region.strides
    starts = torch.tensor([region.lo], dtype=torch.int64)
    for (a, b), s in zip(box[:-1], strides[:-1]):
        starts = (starts[:, None] + torch.arange(b - a, dtype=torch.int64) * (s * elem_bytes)).reshape(-1)
    a, b = box[-1]
    row = (b - a) * strides[-1] * elem_bytes if b - a > 1 else elem_bytes
    first = starts // line
    last = (starts + row - 1) // line
    span = int((last - first).max()) + 1
    idx = first[:, None] + torch.arange(span, dtype=torch.int64)
    return torch.unique(idx[idx <= last[:, None]])


class L2Cache:
    """The L2 state of one run (module docstring).

    Args:
        capacity: bytes of the cache (`SoCModel.l2_bytes`).
        line: bytes of one line (`SoCModel.ddr_access_granularity`).

    Attributes:
        hit_bytes / miss_bytes: bytes of read lines served by L2 / fetched from HBM so far.
    """

    def __init__(self, capacity: int, line: int) -> None:
        self.line = line
        self.lines = max(1, capacity // line)
        self.fills = 0
        self.hit_bytes = 0
        self.miss_bytes = 0
        self._stamps: dict[int, torch.Tensor] = {}

    def _stamps_of(self, key: int, top: int) -> torch.Tensor:
        st = self._stamps.get(key)
        if st is None or st.numel() <= top:
            grown = torch.full((top + 1,), _NEVER, dtype=torch.int64)
            if st is not None:
                grown[:st.numel()] = st
            st = self._stamps[key] = grown
        return st

    def _touch(self, lines_by_key: dict[int, torch.Tensor]) -> tuple[int, int]:
        """Fill the missing lines of every buffer; refresh all. Returns (lines, misses)."""
        total = missed = 0
        views = []
        for key, lines in lines_by_key.items():
            if not lines.numel():
                continue
            st = self._stamps_of(key, int(lines[-1]))
            miss = int((st[lines] <= self.fills - self.lines).sum())
            total += lines.numel()
            missed += miss
            views.append((st, lines))
        self.fills += missed
        for st, lines in views:
            st[lines] = self.fills
        return total, missed

    def hbm_bytes(self, task: Any) -> int:
        """Bytes `task` moves to and from HBM (module docstring); updates the cache. A task
        without recorded accesses or cost moves what its cost says (`cost_model.ddr_bytes_of`)."""
        from .cost_model import ddr_bytes_of, ddr_read_write_bytes

        cost = task.cost
        if cost is None:
            return 0
        accesses = getattr(task, "accesses", ())
        if not accesses:
            return ddr_bytes_of(cost)
        reads: dict[int, list[torch.Tensor]] = {}
        writes: dict[int, list[torch.Tensor]] = {}
        for i, region, rd, wr in accesses:
            arg = task.args[i]
            lines = region_lines(region, arg.element_size(), self.line)
            if rd:
                reads.setdefault(region.key, []).append(lines)
            if wr:
                writes.setdefault(region.key, []).append(lines)
        read_lines = {k: torch.unique(torch.cat(v)) if len(v) > 1 else v[0] for k, v in reads.items()}
        _, missed = self._touch(read_lines)
        hit = sum(v.numel() for v in read_lines.values()) - missed
        self.hit_bytes += hit * self.line
        self.miss_bytes += missed * self.line
        self._touch({k: torch.unique(torch.cat(v)) if len(v) > 1 else v[0] for k, v in writes.items()})
        charged_reads, written = ddr_read_write_bytes(task)
        return min(missed * self.line, charged_reads) + written
