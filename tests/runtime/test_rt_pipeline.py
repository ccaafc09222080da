"""Software pipelining on the simulator (issue 14 item 2): `pl.pipeline(..., stage=2)` gives the
loop body's buffers two rotating copies, so the load of iteration i+1 runs on MTE2 while iteration
i is added on the vector pipe and stored; the task's simulated cycles drop, the numbers do not
change, and the swimlane (level 2) shows it on the core's pipe tracks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from shared_programs import load_example

from pypto import ir
from pypto.runtime import RunConfig
from pypto.runtime.sim.cost_model import const

EXAMPLE = load_example("double_buffering")      # c = a + b over [16, 4096] FP32 in [16, 512] blocks
R, C = EXAMPLE.ROWS, EXAMPLE.COLS
add_program = EXAMPLE.add_blocks


def _run(tmp_path, stage: int, level: int = 0):
    cp = ir.compile(add_program(stage), output_dir=tmp_path / f"stage{stage}", dump_passes=False, skip_ptoas=True)
    a, b = torch.randn(R, C), torch.randn(R, C)
    c = torch.zeros(R, C)
    cp(a, b, c, config=RunConfig(enable_chip_swimlane=level) if level else None)
    assert torch.equal(c, a + b)
    return cp


def test_double_buffering_drops_the_task_time_to_near_the_load_pipe(tmp_path):
    """The numbers of docs/performance.md, "Double buffering with pl.pipeline"."""
    cost = {}
    for stage in (1, 2, 3):
        cp = _run(tmp_path, stage)
        cost[stage] = cp.tasks[0].cost
        hints = (tmp_path / f"stage{stage}" / "report" / "perf_hints.log").read_text()
        assert ("\nPH009 " in hints) == (stage == 3)     # three stages do not fit: two are used
    assert cost[1].pipe_cycles == cost[2].pipe_cycles == {"mte2": 5792, "vector": 1152, "mte3": 4608}
    # stage=1: the sum is computed in place over ta, so the next load into ta waits for the store
    # stage=2: loads of the next trip overlap the add and store of this one; the floor is the
    # busiest pipe (MTE2) plus the launch
    assert {s: c.cycles for s, c in cost.items()} == {1: 12452, 2: 7412, 3: 7412}
    assert int(const("task_launch")) + cost[2].pipe_cycles["mte2"] <= cost[2].cycles


def _ops(cp):
    (task,) = cp.tasks
    names = task.executor.site_names
    return [(names[o.site], o.pipe, o.start, o.end) for o in task.pipe_ops]


def test_the_load_of_the_next_iteration_overlaps_the_vector_op_of_this_one(tmp_path):
    ops = _ops(_run(tmp_path, 2, level=2))
    loads = [o for o in ops if o[1] == "mte2"]
    adds = [o for o in ops if o[1] == "vector"]
    assert len(loads) == 16 and len(adds) == 8
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
    assert len(slices) == 32
    assert {e["name"] for e in slices} == {"tile.load", "tile.add", "tile.store"}
    task = next(e for e in ev if e["ph"] == "X" and e.get("cat") == "task")
    launch_us = const("task_launch") / (const("clock_ghz") * 1e3)
    first = min(e["ts"] for e in slices)
    last = max(e["ts"] + e["dur"] for e in slices)
    assert first == pytest.approx(task["ts"] + launch_us)
    assert last == pytest.approx(task["ts"] + task["dur"])   # the last op ends the task
    src = Path(EXAMPLE.__file__)
    line = next(i for i, ln in enumerate(src.read_text().splitlines(), 1) if "ta = pl.load" in ln)
    assert slices[0]["args"]["line"] == f"{src}:{line}"


def test_level_one_has_no_pipe_tracks(tmp_path):
    cp = _run(tmp_path, 2, level=1)
    assert cp.tasks[0].pipe_ops is None
    doc = json.loads((tmp_path / "stage2" / "dfx_outputs" / "swimlane.json").read_text())
    assert not [e for e in doc["traceEvents"] if e.get("cat") == "pipe"]


def test_timeline_places_each_op_on_its_pipe():
    """`PipeSchedule.timeline`: the same replay as `critical_path`, op by op (two trips of load /
    add / store with ping-pong buffers: the second load starts as soon as MTE2 is free)."""
    from pypto.core.enums import MemorySpace as M
    from pypto.runtime.sim.cost_model import OpCost
    from pypto.runtime.sim.exprs import Extent
    from pypto.runtime.sim.pipes import PipeOp, PipeSchedule

    bufs = [(Extent(M.Vec, 0, 1024), Extent(M.Vec, 2048, 1024)), (Extent(M.Vec, 1024, 1024), Extent(M.Vec, 3072, 1024))]
    sites, effects = [], []
    for a, b in bufs:
        sites += [OpCost("mte2", 100), OpCost("vector", 50), OpCost("mte3", 100)]
        effects += [((("ddr", "x"),), (a,)), ((a,), (b,)), ((b,), (("ddr", "y"),))]
    s = PipeSchedule(sites, effects)
    ops = s.timeline(range(6))
    assert ops == [PipeOp(0, "mte2", 0, 100), PipeOp(1, "vector", 100, 150), PipeOp(2, "mte3", 150, 250),
                   PipeOp(3, "mte2", 100, 200), PipeOp(4, "vector", 200, 250), PipeOp(5, "mte3", 250, 350)]
    assert max(o.end for o in ops) == s.critical_path(range(6)) == 350


def _pipe_slices(tmp_path, stage: int) -> dict[str, list[tuple[int, int]]]:
    """(start after the launch, end) in cycles of each op slice of the level-2 swimlane, per pipe."""
    _run(tmp_path, stage, level=2)
    doc = json.loads((tmp_path / f"stage{stage}" / "dfx_outputs" / "swimlane.json").read_text())
    by_pipe: dict[str, list[tuple[int, int]]] = {}
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e.get("name") == "thread_name"}
    for e in doc["traceEvents"]:
        if e.get("cat") == "pipe":
            a = e["args"]
            by_pipe.setdefault(names[e["tid"]].split()[-1], []).append(
                (a["start_after_launch"], a["start_after_launch"] + a["cycles"]))
    return {p: sorted(v) for p, v in by_pipe.items()}


@pytest.mark.parametrize("stage, mte2, vector, mte3", [
    (1, [(0, 724), (1444, 2168), (2888, 3612)], [724, 2168, 3612], [868, 2312, 3756]),
    (2, [(0, 724), (724, 1448), (1448, 2172)], [724, 1448, 2172], [868, 1592, 2316])])
def test_op_slices_carry_the_cycles_after_the_launch_of_the_docs_table(tmp_path, stage, mte2, vector, mte3):
    """A user trial had to convert the op slices' microseconds back to cycles (1.8 GHz, less the
    task's start and launch) to compare them with docs/performance.md's table ("cycles after the
    launch"); each op slice's args now give its start after the launch and its cycles, and they
    are the table's figures."""
    ops = _pipe_slices(tmp_path, stage)
    loads = ops["MTE2"]
    pairs = [(loads[i][0], loads[i + 1][1]) for i in range(0, 6, 2)]   # two loads per block
    assert pairs == mte2
    assert [s for s, _ in ops["VECTOR"][:3]] == vector
    assert [s for s, _ in ops["MTE3"][:3]] == mte3
    # the cycles of the ops add up to the task's cycles per pipe
    assert {p: sum(e - s for s, e in v) for p, v in ops.items()} == {"MTE2": 5792, "VECTOR": 1152, "MTE3": 4608}
