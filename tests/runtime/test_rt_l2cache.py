"""The chip's L2 cache in front of HBM (issue 14 items 3-4, `runtime/sim/l2cache.py`): which lines of
a task's reads reach HBM, and what that does to the shared DDR bandwidth of a run."""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto import ir
from pypto.core.enums import MemorySpace
from pypto.runtime.sim.cost_model import OpCost, TaskCost
from pypto.runtime.sim.l2cache import L2Cache, region_lines
from pypto.runtime.sim.regions import region_of

M_DDR, M_MAT, M_VEC = MemorySpace.DDR, MemorySpace.Mat, MemorySpace.Vec


def test_region_lines_of_a_box_are_the_lines_each_row_spans() -> None:
    buf = torch.zeros(8, 1024, dtype=torch.float16)          # rows of 2048 B: 4 lines each
    r = region_of(buf[2:4, 128:384])                          # bytes 256..768 of rows 2 and 3
    lines = region_lines(r, 2, 512).tolist()
    assert lines == [8, 9, 12, 13]                            # row 2 starts at line 8, row 3 at 12
    whole = region_lines(region_of(buf), 2, 512)
    assert whole.tolist() == list(range(32))


def _task(regions: list[tuple[torch.Tensor, bool, bool]], read_bytes: int, write_bytes: int) -> SimpleNamespace:
    """A run task reading / writing the given views, whose loads were charged `read_bytes`."""
    sites = [OpCost("mte2", 1, (M_DDR, M_MAT), read_bytes, read_bytes, 1),
             OpCost("mte3", 1, (M_VEC, M_DDR), write_bytes, write_bytes, 1)]
    paths = {(M_DDR, M_MAT): read_bytes, (M_VEC, M_DDR): write_bytes}
    return SimpleNamespace(args=tuple(t for t, _, _ in regions),
                           accesses=tuple((i, region_of(t), rd, wr) for i, (t, rd, wr) in enumerate(regions)),
                           cost=TaskCost(1, {}, paths, None), executor=SimpleNamespace(sites=sites))


def test_a_tile_read_again_is_served_by_l2_and_costs_no_hbm_bytes() -> None:
    a = torch.zeros(64, 256, dtype=torch.float16)             # 64 rows of 512 B: 64 lines
    out = torch.zeros(64, 256, dtype=torch.float16)
    l2 = L2Cache(1 << 20, 512)
    first = _task([(a, True, False), (out, False, True)], 64 * 512, 64 * 512)
    assert l2.hbm_bytes(first) == 64 * 512 + 64 * 512         # every line missed, plus the stores
    again = _task([(a, True, False), (out[:32], False, True)], 64 * 512, 32 * 512)
    assert l2.hbm_bytes(again) == 32 * 512                    # the reads hit: only the stores remain
    assert (l2.hit_bytes, l2.miss_bytes) == (64 * 512, 64 * 512)
    # a line written by a task is resident for the next reader (write-allocate)
    assert l2.hbm_bytes(_task([(out, True, False)], 64 * 512, 0)) == 0


def test_half_a_line_read_costs_the_whole_line_once_and_the_other_half_hits() -> None:
    a = torch.zeros(16, 256, dtype=torch.float16)             # 16 lines
    l2 = L2Cache(1 << 20, 512)
    # the left halves of the rows (256 B each), charged whole granules by the cores' loads
    assert l2.hbm_bytes(_task([(a[:, :128], True, False)], 16 * 512, 0)) == 16 * 512
    assert l2.hbm_bytes(_task([(a[:, 128:], True, False)], 16 * 512, 0)) == 0


def test_lines_are_evicted_once_the_cache_has_filled_its_capacity_since() -> None:
    a, b = torch.zeros(8, 256, dtype=torch.float16), torch.zeros(8, 256, dtype=torch.float16)
    l2 = L2Cache(8 * 512, 512)                                # room for 8 lines
    assert l2.hbm_bytes(_task([(a, True, False)], 8 * 512, 0)) == 8 * 512
    assert l2.hbm_bytes(_task([(b, True, False)], 8 * 512, 0)) == 8 * 512   # fills 8 more: a is gone
    assert l2.hbm_bytes(_task([(a, True, False)], 8 * 512, 0)) == 8 * 512
    assert l2.hbm_bytes(_task([(a, True, False)], 8 * 512, 0)) == 0


def test_hbm_reads_never_exceed_what_the_loads_were_charged() -> None:
    a = torch.zeros(64, 256, dtype=torch.float16)
    l2 = L2Cache(1 << 20, 512)
    # an InOut-style argument the kernel only loads 4 rows of: the region says 64 lines
    assert l2.hbm_bytes(_task([(a, True, True)], 4 * 512, 0)) == 4 * 512


@pl.function(type=pl.FunctionType.InCore)
def _copy(x: pl.Tensor[[64, 256], pl.FP32], y: pl.Out[pl.Tensor[[64, 256], pl.FP32]]) -> pl.Tensor[[64, 256], pl.FP32]:
    t = pl.load(x, [0, 0], [64, 256])
    y = pl.store(t, [0, 0], y)
    return y


@pl.program
class _TwoReaders:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 256], pl.FP32], y: pl.Out[pl.Tensor[[128, 256], pl.FP32]]) -> pl.Tensor[[128, 256], pl.FP32]:
        for i in pl.parallel(2):
            s = pl.slice(y, [64, 256], [i * 64, 0])
            s = _copy(x, s)
        return y


def test_two_tasks_reading_one_tensor_fetch_it_from_hbm_once(tmp_path) -> None:
    cp = ir.compile(_TwoReaders, output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    x, y = torch.randn(64, 256), torch.zeros(128, 256)
    cp(x, y)
    assert torch.equal(y, torch.cat([x, x]))
    first, second = cp.last_run.tasks
    nbytes = 64 * 256 * 4
    assert first.hbm_bytes == 2 * nbytes                      # its load missed; its store goes out
    assert second.hbm_bytes == nbytes                         # its load hit L2: only the store
    assert first.cost.cycles == second.cost.cycles            # a core moves its bytes at one rate


# ---- the rectangle store (l2rects.py) against one stamp per line -------------------------------

def _reference_touch(stamps: dict, fills: list[int], lines: list[int], capacity: int) -> int:
    """The per-line model of the module docstring: a line missed when never touched or when
    `capacity` lines were filled since its last touch; every line then stamped with the fills."""
    missed = sum(1 for x in lines if stamps.get(x, -(1 << 62)) <= fills[0] - capacity)
    fills[0] += missed
    for x in lines:
        stamps[x] = fills[0]
    return missed


_BUFFERS = [((64, 256), torch.float16), ((32, 128), torch.float32), ((48, 200), torch.float16),
            ((4, 8, 128), torch.float32), ((1024,), torch.float32)]


@st.composite
def _views(draw: st.DrawFn) -> tuple[int, torch.Tensor]:
    """(buffer index, a view of it): a box, a row range, a flattened byte range or the whole buffer."""
    b = draw(st.integers(0, len(_BUFFERS) - 1))
    shape = _BUFFERS[b][0]
    kind = draw(st.sampled_from(["box", "rows", "flat", "whole"]))
    if kind == "whole":
        return b, (slice(None),) * len(shape)
    if kind == "flat":
        n = math.prod(shape)
        lo = draw(st.integers(0, n - 1))
        return b, ("flat", lo, draw(st.integers(lo + 1, n)))
    idx = []
    for d, size in enumerate(shape):
        if kind == "rows" and d == len(shape) - 1:
            idx.append(slice(None))
            continue
        lo = draw(st.integers(0, size - 1))
        idx.append(slice(lo, draw(st.integers(lo + 1, size))))
    return b, tuple(idx)


@settings(max_examples=300, deadline=None)
@given(seq=st.lists(st.tuples(_views(), st.booleans(), st.booleans()), min_size=1, max_size=40),
       capacity_lines=st.sampled_from([4, 16, 64, 1 << 20]), max_rects=st.sampled_from([3, 1 << 13]))
def test_rectangles_give_the_hits_and_misses_of_one_stamp_per_line(seq, capacity_lines, max_rects) -> None:
    buffers = [torch.zeros(shape, dtype=dt) for shape, dt in _BUFFERS]
    fast, plain = L2Cache(capacity_lines * 512, 512), L2Cache(capacity_lines * 512, 512, rects=False)
    fast.max_rects = max_rects      # 3: buffers go back to one stamp per line part-way
    stamps: dict = {}
    fills = [0]
    for (b, idx), rd, wr in seq:
        buf = buffers[b]
        view = buf.reshape(-1)[idx[1]:idx[2]] if idx[0] == "flat" else buf[idx]
        r = region_of(view)
        key_lines = [(r.key, x) for x in region_lines(r, buf.element_size(), 512).tolist()]
        rd = rd or not wr
        want = _reference_touch(stamps, fills, key_lines, capacity_lines) if rd else 0
        if wr:
            _reference_touch(stamps, fills, key_lines, capacity_lines)
        task = _task([(view, rd, wr)], 1 << 30, 0)
        got_fast, got_plain = fast.hbm_bytes(task), plain.hbm_bytes(task)
        assert got_fast == got_plain == want * 512
        assert (fast.hit_bytes, fast.miss_bytes, fast.fills) == (plain.hit_bytes, plain.miss_bytes, fills[0])
    assert fast.fills == fills[0]


def test_the_tiles_of_a_matrix_stay_rectangles() -> None:
    a = torch.zeros(256, 512)                                 # rows of 2048 B: 4 lines each
    l2 = L2Cache(1 << 30, 512)
    for i in range(0, 256, 64):
        for j in range(0, 512, 128):
            assert l2.hbm_bytes(_task([(a[i:i + 64, j:j + 128], True, False)], 1 << 20, 0)) == 64 * 512
    assert l2.hbm_bytes(_task([(a[64:128, 128:256], True, False)], 1 << 20, 0)) == 0
    assert l2.hbm_bytes(_task([(a[32:96], True, False)], 1 << 20, 0)) == 0
    assert not l2._stamps and len(l2._rects[region_of(a).key].rects) == 17


def test_a_memo_shared_by_runs_gives_each_run_the_hits_and_misses_of_a_fresh_cache() -> None:
    # the scheduler keeps one memo of region rectangles for every run's L2Cache, and the device hands
    # the same Region objects to every run: a region looked up again must still give a fresh cache's answer
    a = torch.zeros(128, 512)                                 # rows of 2048 B: 4 lines each
    cache: dict = {}
    views = [a[i:i + 32, j:j + 128] for i in range(0, 128, 32) for j in range(0, 512, 128)]
    tasks = []
    for v in views:                                           # each tile read and written (InOut)
        t = _task([(v, True, False), (v, False, True)], 1 << 20, 0)
        r = region_of(v, cache)
        t.accesses = ((0, r, True, False), (1, r, False, True))
        tasks.append(t)
    tasks += tasks[:3]                                        # tiles read again in the same run: hits
    memo: dict = {}
    for _ in range(3):
        shared, plain = L2Cache(1 << 30, 512, memo=memo), L2Cache(1 << 30, 512, rects=False)
        got = [shared.hbm_bytes(t) for t in tasks]
        assert got == [plain.hbm_bytes(t) for t in tasks] == [32 * 512] * 16 + [0] * 3
        assert (shared.hit_bytes, shared.miss_bytes, shared.fills) == (plain.hit_bytes, plain.miss_bytes, plain.fills)
    assert len(memo) == 16 and not shared._stamps


def test_an_empty_region_of_a_buffer_kept_as_rectangles_touches_nothing() -> None:
    a = torch.zeros(64, 512)
    l2 = L2Cache(1 << 30, 512)
    assert l2.hbm_bytes(_task([(a[:32, :128], True, False)], 1 << 20, 0)) == 32 * 512
    fills = l2.fills
    assert l2.hbm_bytes(_task([(a[8:8, :128], True, False)], 1 << 20, 0)) == 0
    assert l2.fills == fills and l2.miss_bytes == 32 * 512 and not l2._stamps
