"""The chip's L2 cache in front of HBM (issue 14 items 3-4, `runtime/sim/l2cache.py`): which lines of
a task's reads reach HBM, and what that does to the shared DDR bandwidth of a run."""

from __future__ import annotations

from types import SimpleNamespace

import torch

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
