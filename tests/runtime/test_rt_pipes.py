"""Pipes that overlap within a task (issue 14 item 1): a task's time is the critical path of its ops
over the core's pipes, ordered by the buffers they read and write (`pipes.PipeSchedule`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

import pypto.language as pl
from pypto import ir
from pypto.core.enums import MemorySpace as M
from pypto.runtime.sim.cost_model import OpCost, const
from pypto.runtime.sim.exprs import Extent
from pypto.runtime.sim.pipes import PipeSchedule

A0, A1, B0, B1 = (Extent(M.Vec, a, 1024) for a in (0, 1024, 2048, 3072))
X, Y = ("ddr", "x"), ("ddr", "y")
LOAD, ADD, STORE = OpCost("mte2", 100), OpCost("vector", 50), OpCost("mte3", 100)


def _loop(a_bufs, b_bufs) -> int:
    """Two trips of load x -> a, b = a + a, store b -> y, a/b rotating over the given buffers."""
    sites, effects = [], []
    for i in range(2):
        a, b = a_bufs[i % len(a_bufs)], b_bufs[i % len(b_bufs)]
        sites += [LOAD, ADD, STORE]
        effects += [((X,), (a,)), ((a,), (b,)), ((b,), (Y,))]
    return PipeSchedule(sites, effects).critical_path(range(6))


def test_ops_on_other_pipes_overlap_and_wait_only_for_their_buffers() -> None:
    # one buffer each: trip 2's load waits for trip 1's add to read a (WAR), its add for trip 1's
    # store to read b; trip 1's store overlaps trip 2's load: 400 cycles, not the serial 500
    assert _loop([A0], [B0]) == 400
    # two buffers each (ping-pong): trip 2's load starts when the load pipe is free
    assert _loop([A0, A1], [B0, B1]) == 350


def test_dependent_ops_run_in_order_and_one_pipe_runs_one_op_at_a_time() -> None:
    chain = PipeSchedule([LOAD, ADD, STORE], [((X,), (A0,)), ((A0,), (B0,)), ((B0,), (Y,))])
    assert chain.critical_path(range(3)) == 250                       # RAW all the way: the sum
    loads = PipeSchedule([LOAD, LOAD], [((X,), (A0,)), ((X,), (A1,))])
    assert loads.critical_path(range(2)) == 200                       # one MTE2 queue


def test_overlapping_extents_conflict() -> None:
    half = Extent(M.Vec, 512, 1024)           # overlaps A0 and A1
    s = PipeSchedule([LOAD, ADD], [((X,), (A0,)), ((half,), (B0,))])
    assert s.critical_path(range(2)) == 150
    other = Extent(M.Mat, 0, 1024)            # same address, another memory: no conflict
    s = PipeSchedule([LOAD, ADD], [((X,), (A0,)), ((other,), (B0,))])
    assert s.critical_path(range(2)) == 100


def test_a_kernel_task_costs_its_critical_path_not_the_sum(tmp_path) -> None:
    spec = importlib.util.spec_from_file_location(
        "roofline_bench", Path(__file__).resolve().parents[2] / "benchmarks" / "roofline.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    cp = ir.compile(bench.matmul_program(2, 1, 512), output_dir=tmp_path, dump_passes=False,
                    skip_ptoas=True)
    a, b, c = torch.randn(256, 512).half(), torch.randn(512, 128).half(), torch.zeros(256, 128)
    cp(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)
    launch = int(const("task_launch"))
    for t in cp.tasks:
        work, pipes = t.cost.cycles - launch, t.cost.pipe_cycles
        # the K loop's loads of step k+1 overlap the moves and the matmul of step k: less than the
        # sum of the pipes, and never less than the busiest pipe
        assert max(pipes.values()) <= work < sum(pipes.values())
        assert t.cost.counts is not None and sum(t.cost.counts) > 0


R, C, TC = 16, 2048, 512


@pl.program
class OneTilePerTrip:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
          c: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        for j, (cc,) in pl.range(0, C, TC, init_values=(c,)):
            ta = pl.load(a, [0, j], [R, TC])
            tb = pl.load(b, [0, j], [R, TC])
            nc = pl.store(pl.add(ta, tb), [0, j], cc)
            out = pl.yield_(nc)
        return out


@pl.program
class TwoTilesPerTrip:
    """The loop of `OneTilePerTrip` unrolled by two into separate tiles (double buffering by hand,
    as docs/performance.md shows)."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
          c: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        for j, (cc,) in pl.range(0, C, 2 * TC, init_values=(c,)):
            ta0 = pl.load(a, [0, j], [R, TC])
            tb0 = pl.load(b, [0, j], [R, TC])
            ta1 = pl.load(a, [0, j + TC], [R, TC])
            tb1 = pl.load(b, [0, j + TC], [R, TC])
            c0 = pl.store(pl.add(ta0, tb0), [0, j], cc)
            c1 = pl.store(pl.add(ta1, tb1), [0, j + TC], c0)
            out = pl.yield_(c1)
        return out


def test_double_buffering_by_hand_overlaps_the_loads_with_compute_and_stores(tmp_path) -> None:
    a, b = torch.randn(R, C), torch.randn(R, C)
    cost = {}
    for prog in (OneTilePerTrip, TwoTilesPerTrip):
        cp = ir.compile(prog, output_dir=tmp_path / prog.name, dump_passes=False, skip_ptoas=True)
        c = torch.zeros(R, C)
        cp(a, b, c)
        assert torch.equal(c, a + b)
        cost[prog.name] = cp.tasks[0].cost
    one, two = cost["OneTilePerTrip"], cost["TwoTilesPerTrip"]
    assert one.pipe_cycles == two.pipe_cycles            # the same work on every pipe ...
    launch = int(const("task_launch"))
    # ... but with one tile per trip the next load waits for the store of the buffer it reuses
    assert two.cycles < one.cycles
    assert two.cycles - launch >= one.pipe_cycles["mte2"]   # never below the busiest pipe
