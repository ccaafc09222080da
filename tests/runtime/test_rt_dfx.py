"""Runtime DFX outputs under `<output_dir>/dfx_outputs/` (SPEC §7, issue 6): swimlane trace, task
graph, scope statistics and PMU counters, parsed back and checked against the run."""

import csv
import json

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig
from pypto.runtime.sim.cost_model import cycles_to_us

ROWS = 16


@pl.program
class Staged:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[ROWS, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [ROWS, 64])
        u = pl.mul(t, 2.0)
        y = pl.store(u, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def mm(self, a: pl.Tensor[[32, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
           c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        a1 = pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        a0 = pl.move(a1, target_memory=pl.Mem.Left)
        b0 = pl.move(b1, target_memory=pl.Mem.Right)
        c0 = pl.matmul(a0, b0)
        c = pl.store(c0, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], a: pl.Tensor[[32, 32], pl.FP16],
             b: pl.Tensor[[32, 32], pl.FP16], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
             c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        tmp = pl.create_tensor([64, 64], dtype=pl.FP32)
        with pl.scope():
            for i in pl.range(0, 64, ROWS):
                xs = pl.slice(x, [ROWS, 64], [i, 0])
                ts = pl.slice(tmp, [ROWS, 64], [i, 0])
                ts = self.scale(xs, ts)
        for i in pl.range(0, 64, ROWS):
            ts2 = pl.slice(tmp, [ROWS, 64], [i, 0])
            ys = pl.slice(y, [ROWS, 64], [i, 0])
            ys = self.scale(ts2, ys)
        c = self.mm(a, b, c)
        return y


ALL = RunConfig(enable_chip_swimlane=2, enable_dep_gen=True, enable_scope_stats=True, enable_pmu=2)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("staged")
    cp = ir.compile(Staged, output_dir=out, dump_passes=False)
    x = torch.randn(64, 64)
    a, b = torch.randn(32, 32).half(), torch.randn(32, 32).half()
    y, c = torch.zeros(64, 64), torch.zeros(32, 32)
    cp(x, a, b, y, c, config=ALL)
    assert torch.equal(y, 4 * x)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    return cp, out / "dfx_outputs"


def test_no_outputs_without_switches(tmp_path) -> None:
    cp = ir.compile(Staged, output_dir=tmp_path, dump_passes=False)
    cp(torch.randn(64, 64), torch.randn(32, 32).half(), torch.randn(32, 32).half(), torch.zeros(64, 64),
       torch.zeros(32, 32))
    assert not (tmp_path / "dfx_outputs").exists()


def test_swimlane_has_a_track_per_core_and_a_slice_per_task(run) -> None:
    cp, d = run
    doc = json.loads((d / "swimlane.json").read_text())
    ev = doc["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"
              and e["pid"] == 1}
    rec = cp.last_run
    pipes = {tid: n for tid, n in tracks.items() if " " in n}   # level 2: the busy cores' pipe tracks
    tracks = {tid: n for tid, n in tracks.items() if tid not in pipes}
    assert len(tracks) == rec.num_aic + rec.num_aiv == 72
    assert {n.split()[0] for n in pipes.values()} == {t.core for t in cp.tasks}
    assert tracks[0] == "AIC0" and tracks[rec.num_aic] == "AIV0" and tracks[71] == "AIV47"
    slices = [e for e in ev if e["ph"] == "X" and e.get("cat") == "task"]
    assert len(slices) == len(cp.tasks) == 9
    for e in slices:
        t = cp.tasks[e["args"]["task_id"]]
        assert e["name"] == t.kernel and tracks[e["tid"]] == t.core
        assert e["ts"] == pytest.approx(cycles_to_us(t.start_cycle))
        assert e["dur"] == pytest.approx(cycles_to_us(t.cycles))
    assert {tracks[e["tid"]][:3] for e in slices if e["name"] == "mm"} == {"AIC"}
    # independent tasks overlap in time on different tracks
    s0, s1 = slices[0], slices[1]
    assert s1["ts"] < s0["ts"] + s0["dur"] and s0["tid"] != s1["tid"]
    flows = [e for e in ev if e["ph"] in ("s", "f")]
    assert len(flows) == 2 * sum(len(t.deps) for t in cp.tasks) == 8
    assert doc["otherData"]["makespan_cycles"] == rec.makespan_cycles


def test_task_graph_dot_and_json(run) -> None:
    cp, d = run
    g = json.loads((d / "task_graph.json").read_text())
    assert [t["kernel"] for t in g["tasks"]] == ["scale"] * 8 + ["mm"]
    edges = {(e["src"], e["dst"], e["kind"]) for e in g["edges"]}
    assert edges == {(i, i + 4, "RAW") for i in range(4)}
    dot = (d / "task_graph.dot").read_text()
    assert dot.startswith('digraph "Staged tasks" {') and dot.rstrip().endswith("}")
    for i in range(4):
        assert f't{i} -> t{i + 4} [label="RAW"];' in dot
    assert 't8 [label="mm\\n#8 AIC0"];' in dot


def test_scope_stats(run) -> None:
    cp, d = run
    rows = {r["scope"]: r for r in json.loads((d / "scope_stats.json").read_text())}
    with open(__file__) as f:
        line = next(i for i, text in enumerate(f, 1) if "with pl.scope():" in text)
    assert set(rows) == {"main", f"main/scope@{line}"}
    inner = rows[f"main/scope@{line}"]
    assert inner["line"] == line and inner["name"] == f"scope@{line}"
    assert inner["tasks"] == inner["direct_tasks"] == 4 and inner["instances"] == 1
    top = rows["main"]
    assert top["tasks"] == 9 and top["direct_tasks"] == 5
    t = cp.tasks
    assert inner["busy_cycles"] == sum(k.cycles for k in t[:4])
    assert inner["span_cycles"] == max(k.end_cycle for k in t[:4]) - t[0].start_cycle
    assert top["last_end_cycle"] == cp.last_run.makespan_cycles
    assert top["busy_us"] == pytest.approx(cycles_to_us(top["busy_cycles"]))


def test_pmu_counters_per_core(run) -> None:
    cp, d = run
    with open(d / "pmu.csv", newline="") as f:
        rows = {r["core"]: r for r in csv.DictReader(f)}
    assert len(rows) == 72
    busy = {}
    for t in cp.tasks:
        busy[t.core] = busy.get(t.core, 0) + t.cycles
    for core, r in rows.items():
        assert int(r["busy_cycles"]) == busy.get(core, 0)
        assert int(r["busy_cycles"]) + int(r["idle_cycles"]) == cp.last_run.makespan_cycles
    vec_in = sum(int(r["bytes_DDR_to_Vec"]) for r in rows.values())
    assert vec_in == 8 * ROWS * 64 * 4                      # every scale task loads one fp32 block
    assert sum(int(r["bytes_Vec_to_DDR"]) for r in rows.values()) == vec_in
    aic = rows[cp.tasks[8].core]
    assert int(aic["bytes_DDR_to_Mat"]) == 2 * 32 * 32 * 2 and int(aic["bytes_Mat_to_Left"]) == 2048
    assert int(aic["bytes_Acc_to_DDR"]) == 32 * 32 * 4 and int(aic["cube_cycles"]) > 0
    with open(d / "pmu_tasks.csv", newline="") as f:
        per_task = list(csv.DictReader(f))
    assert [int(r["cycles"]) for r in per_task] == [t.cycles for t in cp.tasks]


def _dfx_files(out) -> set[str]:
    d = out / "dfx_outputs"
    return {p.name for p in d.iterdir()} if d.is_dir() else set()


def test_each_run_leaves_only_its_own_dfx_files(tmp_path) -> None:
    """A run removes the DFX files of earlier runs it does not write again; a run with every switch
    off removes them all, so `dfx_outputs/` always describes the last run."""
    cp = ir.compile(Staged, output_dir=tmp_path, dump_passes=False)
    args = (torch.randn(64, 64), torch.randn(32, 32).half(), torch.randn(32, 32).half(), torch.zeros(64, 64),
            torch.zeros(32, 32))
    (tmp_path / "dfx_outputs").mkdir()
    (tmp_path / "dfx_outputs" / "notes.txt").write_text("mine")   # not a DFX file: never touched
    cp(*args, config=RunConfig(enable_pmu=2, enable_dep_gen=True))
    assert _dfx_files(tmp_path) == {"pmu.csv", "pmu_tasks.csv", "task_graph.dot", "task_graph.json", "deps.json",
                                    "notes.txt"}
    cp(*args, config=RunConfig(enable_pmu=1))
    assert _dfx_files(tmp_path) == {"pmu.csv", "notes.txt"}
    with open(tmp_path / "dfx_outputs" / "pmu.csv", newline="") as f:   # and it is this run's
        assert sum(int(r["busy_cycles"]) for r in csv.DictReader(f)) == sum(t.cycles for t in cp.tasks)
    cp(*args, config=RunConfig(enable_chip_swimlane=1, enable_scope_stats=True, enable_dump_args=2))
    assert _dfx_files(tmp_path) == {"swimlane.json", "scope_stats.json", "scope_stats.jsonl", "args_dump",
                                    "notes.txt"}
    cp(*args)
    assert _dfx_files(tmp_path) == {"notes.txt"}
    (tmp_path / "dfx_outputs" / "notes.txt").unlink()
    cp(*args, config=RunConfig(enable_scope_stats=True))
    cp(*args, config=RunConfig())
    assert not (tmp_path / "dfx_outputs").exists()          # an emptied folder goes too


def test_a_rendered_swimlane_page_goes_with_the_run_it_describes(tmp_path) -> None:
    """A user trial: `python -m pypto.tools.swimlane` writes `dfx_outputs/swimlane.html`; a later run
    with the swimlane off deleted the JSON but left the page, which described the earlier run. Every
    run removes the page (a run with the swimlane on writes a new JSON; render it again), and a
    folder left with nothing else goes too."""
    from pypto.tools.swimlane import main

    cp = ir.compile(Staged, output_dir=tmp_path, dump_passes=False)
    args = (torch.randn(64, 64), torch.randn(32, 32).half(), torch.randn(32, 32).half(), torch.zeros(64, 64),
            torch.zeros(32, 32))
    cp(*args, config=RunConfig(enable_chip_swimlane=2))
    assert main([str(tmp_path)]) == 0
    assert _dfx_files(tmp_path) == {"swimlane.json", "swimlane.html"}
    cp(*args, config=RunConfig(enable_pmu=1))
    assert _dfx_files(tmp_path) == {"pmu.csv"}
    cp(*args, config=RunConfig(enable_chip_swimlane=1))
    assert main([str(tmp_path)]) == 0
    cp(*args, config=RunConfig(enable_chip_swimlane=1))      # the page showed the run before this one
    assert _dfx_files(tmp_path) == {"swimlane.json"}
    assert main([str(tmp_path)]) == 0
    cp(*args)
    assert not (tmp_path / "dfx_outputs").exists()


def test_swimlane_level_1_has_no_arrows_and_slices_carry_pipe_totals(tmp_path) -> None:
    cp = ir.compile(Staged, output_dir=tmp_path, dump_passes=False)
    cp(torch.randn(64, 64), torch.randn(32, 32).half(), torch.randn(32, 32).half(), torch.zeros(64, 64),
       torch.zeros(32, 32), config=RunConfig(enable_chip_swimlane=1))
    ev = json.loads((tmp_path / "dfx_outputs" / "swimlane.json").read_text())["traceEvents"]
    assert not [e for e in ev if e["ph"] in ("s", "f")]
    slices = [e for e in ev if e["ph"] == "X" and e.get("cat") == "task"]
    for e in slices:
        t = cp.tasks[e["args"]["task_id"]]
        assert e["args"]["pipe_cycles"] == {p: c for p, c in t.cost.pipe_cycles.items() if c}
        assert e["args"]["ddr_wait_cycles"] == t.ddr_wait_cycles   # 0, not missing, when it never waited
    mm = next(e for e in slices if e["name"] == "mm")
    assert mm["args"]["pipe_cycles"]["cube"] > 0 and "vector" not in mm["args"]["pipe_cycles"]


@pytest.mark.parametrize("field, value, top", [("enable_chip_swimlane", -1, 4), ("enable_chip_swimlane", 5, 4),
                                               ("enable_chip_swimlane", 1.5, 4), ("enable_chip_swimlane", "1", 4),
                                               ("enable_pmu", -2, 2), ("enable_pmu", 3, 2), ("enable_pmu", None, 2),
                                               ("enable_dump_args", 3, 2), ("enable_dump_args", "all", 2)])
def test_invalid_dfx_levels_are_rejected_naming_the_field(field, value, top) -> None:
    with pytest.raises(ValueError) as e:
        RunConfig(**{field: value})
    msg = str(e.value)
    assert f"RunConfig.{field} must be an int level in 0..{top}" in msg and f"got {value!r}" in msg
    assert "0 = off" in msg and "2 = " in msg


def test_a_bad_swimlane_level_describes_each_level_as_the_readme_does() -> None:
    """A user trial: the error described level 2 without its per-pipe tracks, the point README and
    docs/performance.md make of it. Levels 2-4 read as README's table rows."""
    from pathlib import Path

    from pypto.runtime.config import DFX_LEVELS

    with pytest.raises(ValueError) as e:
        RunConfig(enable_chip_swimlane=7)
    msg = str(e.value)
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    for level in (2, 3, 4):
        text = DFX_LEVELS["enable_chip_swimlane"][level]
        assert f"{level} = {text}" in msg and f"| | {level} | {text} |" in readme
    assert "2 = level 1 plus dispatch / finish events per task, a flow arrow per task dependency, and under " \
           "each busy core one track per pipe with its ops placed in time;" in msg


def test_valid_dfx_levels_and_switches() -> None:
    assert RunConfig(enable_chip_swimlane=True).enable_chip_swimlane == 1   # True is level 1
    assert RunConfig(enable_pmu=2, enable_chip_swimlane=0).enable_pmu == 2
    for level in range(5):
        assert RunConfig(enable_chip_swimlane=level).enable_chip_swimlane == level
    assert RunConfig(enable_dump_args=2).enable_dump_args == 2
    with pytest.raises(ValueError, match=r"RunConfig.enable_dep_gen must be True or False, got 'yes'"):
        RunConfig(enable_dep_gen="yes")


@pl.program
class PastTheEnd:
    @pl.function(type=pl.FunctionType.InCore)
    def rows(self, x: pl.Tensor[[24, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[24, 64], pl.FP32]]) -> pl.Tensor[[24, 64], pl.FP32]:
        t = pl.load(x, [r, 0], [16, 64])     # r = 16: rows 16:32 of 24, out of bounds
        y = pl.store(pl.exp(t), [r, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[24, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[24, 64], pl.FP32]]) -> pl.Tensor[[24, 64], pl.FP32]:
        with pl.scope():
            for k in pl.range(2):
                y = self.rows(x, k * 16, y)
        return y


_FAULT = "load region [16:32, 0:64] is out of bounds of the tensor of shape [24, 64]"


@pytest.mark.parametrize("config", [RunConfig(enable_chip_swimlane=level, enable_scope_stats=True)
                                    for level in (1, 2, 3, 4)] + [ALL])
def test_a_kernel_fault_reaches_the_user_and_the_dfx_shows_the_finished_tasks(tmp_path, config) -> None:
    """The trial's crash_repro.py: a failed task has no end cycle; the DFX writers skip it (they
    raised TypeError over the kernel's error) and draw the tasks that finished."""
    from pypto.core.errors import RuntimeSimError

    cp = ir.compile(PastTheEnd, output_dir=tmp_path, dump_passes=False)
    x, y = torch.randn(24, 64), torch.zeros(24, 64)
    with pytest.raises(RuntimeSimError, match=r"task 1 \(kernel 'rows'.*" + _FAULT.replace("[", r"\[")):
        cp(x, y, config=config)
    ev = json.loads((tmp_path / "dfx_outputs" / "swimlane.json").read_text())["traceEvents"]
    drawn = [e["args"]["task_id"] for e in ev if e["ph"] == "X" and e.get("cat") == "task"]
    assert drawn == [0] and cp.tasks[1].end_cycle is None
    stats = json.loads((tmp_path / "dfx_outputs" / "scope_stats.json").read_text())
    assert stats[0]["tasks"] == 2 and stats[0]["last_end_cycle"] == cp.tasks[0].end_cycle


def test_a_dfx_writer_that_fails_after_a_failed_run_is_only_a_warning(tmp_path, monkeypatch) -> None:
    from pypto.core.errors import RuntimeSimError
    from pypto.runtime import compiled

    def broken(*a, **k):
        raise TypeError("writer bug")
    monkeypatch.setattr(compiled, "update_dfx", broken)
    cp = ir.compile(PastTheEnd, output_dir=tmp_path, dump_passes=False)
    with pytest.warns(RuntimeWarning, match=r"DFX outputs of the failed run were not written \(TypeError: writer bug"):
        with pytest.raises(RuntimeSimError, match="out of bounds"):
            cp(torch.randn(24, 64), torch.zeros(24, 64), config=RunConfig(enable_pmu=1))
    ok = ir.compile(Staged, output_dir=tmp_path / "ok", dump_passes=False)
    with pytest.raises(TypeError, match="writer bug"):    # after a run that worked: a real error
        ok(torch.randn(64, 64), torch.randn(32, 32).half(), torch.randn(32, 32).half(), torch.zeros(64, 64),
           torch.zeros(32, 32), config=RunConfig(enable_pmu=1))
