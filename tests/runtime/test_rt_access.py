"""Dependencies from the boxes a kernel loads and stores (runtime/sim/access.py)."""

from __future__ import annotations

import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime.sim.access import AccessSummary


def _run(program, *args):
    compiled = ir.compile(program, dump_passes=False, skip_ptoas=True)
    compiled(*args)
    return compiled.last_run.tasks


@pl.program
class ParallelAt:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[256, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.parallel(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [i * 64, 0], [64, 64])
                u = pl.exp(t)
                y = pl.store(u, [i * 64, 0], y)
        return y


def test_pl_at_inside_parallel_runs_its_tasks_in_parallel() -> None:
    """Each task gets the whole tensors and the loop index, but stores only its own 64 rows: no
    write-after-write chain, the four tasks overlap in simulated time."""
    x, y = torch.randn(256, 64), torch.zeros(256, 64)
    tasks = _run(ParallelAt, x, y)
    torch.testing.assert_close(y, torch.exp(x))
    assert [t.deps for t in tasks] == [{}, {}, {}, {}]
    assert len({t.core for t in tasks}) == 4
    assert max(t.start_cycle for t in tasks) < min(t.end_cycle for t in tasks)


@pl.program
class Rows:
    @pl.function(type=pl.FunctionType.InCore)
    def put(self, x: pl.Tensor[[64, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
            y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for k in pl.range(2):
            t = pl.load(x, [k * 32, 0], [32, 64])
            y = pl.store(t, [r + k * 32, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def get(self, y: pl.Tensor[[256, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
            z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(y, [r, 0], [64, 64])
        z = pl.store(pl.mul(t, 2.0), [0, 0], z)
        return z

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[256, 64], pl.FP32]],
             z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        y = self.put(x, 0, y)
        y = self.put(x, 64, y)
        y = self.put(x, 128, y)
        z = self.get(y, 32, z)
        return z


def test_boxes_from_scalar_arguments_and_loop_variables() -> None:
    """`put(r)` stores rows [r, r + 64) (two 32-row stores in a loop); `get(32)` reads rows
    [32, 96): it waits for the first two puts only, and the puts do not wait for each other."""
    x, y, z = torch.randn(64, 64), torch.zeros(256, 64), torch.zeros(64, 64)
    tasks = _run(Rows, x, y, z)
    assert [t.deps for t in tasks] == [{}, {}, {}, {0: "RAW", 1: "RAW"}]
    torch.testing.assert_close(z, 2 * torch.cat([x[32:], x[:32]]))
    torch.testing.assert_close(y[:192], torch.cat([x, x, x]))


def _summary(program, name):
    return AccessSummary(program.get_function(name))


def test_region_arg_is_the_bounding_box_of_the_accesses() -> None:
    put = _summary(Rows, "put")
    x, y = torch.zeros(64, 64), torch.zeros(256, 64)
    assert put.narrowed == frozenset({2})        # x is always loaded whole (rows 0:32 and 32:64)
    view = put.region_arg(2, (x, 96, y))
    assert view.shape == (64, 64) and view.storage_offset() == 96 * 64
    assert put.region_arg(0, (x, 96, y)) is x          # all of x is loaded: the argument itself
    assert put.region_arg(2, (x, 250, y)).shape == (6, 64)   # clipped to the tensor


@pl.program
class CarriedOffset:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 64], pl.FP32],
          y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i, (r,) in pl.range(2, init_values=(0,)):
            t = pl.load(x, [0, 0], [64, 64])
            y = pl.store(t, [r, 0], y)
            r2 = pl.yield_(r + 64)
        return y


def test_untraceable_offsets_count_the_whole_argument() -> None:
    """An offset carried by the loop is not evaluated: the store counts as touching all of `y`."""
    s = _summary(CarriedOffset, "k")
    assert s.narrowed == frozenset()
    y = torch.zeros(256, 64)
    assert s.region_arg(1, (torch.zeros(64, 64), y)) is y

