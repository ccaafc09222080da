"""Software pipelining on the simulator (issue 14 item 2): `pl.pipeline(..., stage=2)` gives the
loop body's buffers two rotating copies, so the load of iteration i+1 runs on MTE2 while iteration
i is added on the vector pipe and stored; the task's simulated cycles drop, the numbers do not
change, and the swimlane (level 2) shows it on the core's pipe tracks."""

from __future__ import annotations

import json

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig
from pypto.runtime.sim.cost_model import const

R, C, TC = 16, 2048, 512


def add_program(stage: int):
    """c = a + b over [16, 2048] FP32 in [16, 512] tiles, one loop trip per tile."""

    @pl.program
    class AddLoop:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
              c: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            for j, (cc,) in pl.pipeline(0, C, TC, stage=stage, init_values=(c,)):
                ta = pl.load(a, [0, j], [R, TC])
                tb = pl.load(b, [0, j], [R, TC])
                nc = pl.store(pl.add(ta, tb), [0, j], cc)
                out = pl.yield_(nc)
            return out

    return AddLoop


def _run(tmp_path, stage: int, level: int = 0):
    cp = ir.compile(add_program(stage), output_dir=tmp_path / f"stage{stage}", dump_passes=False, skip_ptoas=True)
    a, b = torch.randn(R, C), torch.randn(R, C)
    c = torch.zeros(R, C)
    cp(a, b, c, config=RunConfig(enable_chip_swimlane=level) if level else None)
    assert torch.equal(c, a + b)
    return cp


def test_double_buffering_drops_the_task_time_to_near_the_load_pipe(tmp_path):
    one, two = (_run(tmp_path, s).tasks[0].cost for s in (1, 2))
    assert one.pipe_cycles == two.pipe_cycles == {"mte2": 4608, "vector": 576, "mte3": 2304}
    launch = int(const("task_launch"))
    # stage=1: the sum is computed in place over ta, so the next load into ta waits for the store
    assert one.cycles == 8388
    # stage=2: loads of the next trip overlap the add and store of this one; the floor is the
    # busiest pipe (MTE2) plus the launch
    assert two.cycles == 6228
    assert launch + two.pipe_cycles["mte2"] <= two.cycles < one.cycles


def _ops(cp):
    (task,) = cp.tasks
    names = task.executor.site_names
    return [(names[o.site], o.pipe, o.start, o.end) for o in task.pipe_ops]


def test_the_load_of_the_next_iteration_overlaps_the_vector_op_of_this_one(tmp_path):
    ops = _ops(_run(tmp_path, 2, level=2))
    loads = [o for o in ops if o[1] == "mte2"]
    adds = [o for o in ops if o[1] == "vector"]
    assert len(loads) == 8 and len(adds) == 4
    # iteration 0's add runs while iteration 1's loads (into the other buffer set) are under way
    add0 = adds[0]
    assert any(s < add0[3] and add0[2] < e for _, _, s, e in loads[2:4])
    ops1 = _ops(_run(tmp_path, 1, level=2))
    loads1 = [o for o in ops1 if o[1] == "mte2"]
    stores1 = [o for o in ops1 if o[1] == "mte3"]
    # one buffer set: iteration 1's first load waits for iteration 0's store to read the sum
    assert loads1[2][2] >= stores1[0][3]


@pytest.mark.parametrize("stage", [1, 2])
def test_the_swimlane_has_a_track_per_pipe_under_the_core(tmp_path, stage):
    cp = _run(tmp_path, stage, level=2)
    doc = json.loads((tmp_path / f"stage{stage}" / "dfx_outputs" / "swimlane.json").read_text())
    ev = doc["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"
             and e["pid"] == 1}
    core = cp.tasks[0].core
    pipe_tracks = {tid: n for tid, n in names.items() if n.startswith(core + " ")}
    assert sorted(pipe_tracks.values()) == [f"{core} MTE2", f"{core} MTE3", f"{core} VECTOR"]
    order = {e["tid"]: e["args"]["sort_index"] for e in ev if e["ph"] == "M" and e["name"] == "thread_sort_index"
             and e["pid"] == 1}
    core_tid = next(t for t, n in names.items() if n == core)
    after = sorted(names, key=lambda t: order[t])
    i = after.index(core_tid)
    assert set(after[i + 1:i + 4]) == set(pipe_tracks)      # right under their core
    slices = [e for e in ev if e["ph"] == "X" and e.get("cat") == "pipe"]
    assert len(slices) == 16
    assert {e["name"] for e in slices} == {"tile.load", "tile.add", "tile.store"}
    task = next(e for e in ev if e["ph"] == "X" and e.get("cat") == "task")
    launch_us = const("task_launch") / (const("clock_ghz") * 1e3)
    first = min(e["ts"] for e in slices)
    last = max(e["ts"] + e["dur"] for e in slices)
    assert first == pytest.approx(task["ts"] + launch_us)
    assert last == pytest.approx(task["ts"] + task["dur"])   # the last op ends the task
    assert slices[0]["args"]["line"].endswith(f"test_rt_pipeline.py:{add_program.__code__.co_firstlineno + 9}")


def test_level_one_has_no_pipe_tracks(tmp_path):
    cp = _run(tmp_path, 2, level=1)
    assert cp.tasks[0].pipe_ops is None
    doc = json.loads((tmp_path / "stage2" / "dfx_outputs" / "swimlane.json").read_text())
    assert not [e for e in doc["traceEvents"] if e.get("cat") == "pipe"]


def test_the_numbers_of_the_performance_guide(tmp_path):
    """docs/performance.md, "Double buffering with pl.pipeline": examples/double_buffering.py's kernel
    takes 15876 cycles with one buffer set and 10836 with two; three do not fit and fall back to two."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "double_buffering", Path(__file__).resolve().parents[2] / "examples" / "double_buffering.py")
    mod = importlib.util.module_from_spec(spec)
    import sys

    sys.path.insert(0, str(Path(spec.origin).parent))   # its `_check` helper
    try:
        spec.loader.exec_module(mod)  # type: ignore[union-attr]
    finally:
        sys.path.pop(0)
    a, b = torch.randn(mod.ROWS, mod.COLS), torch.randn(mod.ROWS, mod.COLS)
    cycles = {}
    for stage in (1, 2, 3):
        out = tmp_path / f"s{stage}"
        cp = ir.compile(mod.add_blocks(stage), output_dir=out, dump_passes=False, skip_ptoas=True)
        c = torch.zeros(mod.ROWS, mod.COLS)
        cp(a, b, c)
        assert torch.equal(c, a + b)
        cycles[stage] = cp.tasks[0].cost.cycles
        hints = (out / "report" / "perf_hints.log").read_text()
        assert ("\nPH008 " in hints) == (stage == 3)
    assert cycles == {1: 15876, 2: 10836, 3: 10836}
    assert cp.tasks[0].cost.pipe_cycles == {"mte2": 9216, "vector": 1152, "mte3": 4608}
