"""Run-time performance hints (SPEC §12; docs/tools.md "Diagnostics"): PH004 tasks too small for their
launch, PH005 compute pipe idle, PH006 DDR transfers below the granule, PH007 a shallow pipe ring
that stalled — from the simulator's run record and cost model, written to
report/perf_hints_run.log after each run, chosen by diagnostic_phase / disabled_diagnostics."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
from test_rt_cluster import build, inputs

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.runtime import CompiledProgram, RunConfig
from pypto.runtime.sim.cost_model import const

HERE = str(Path(__file__).resolve())


def line_of(marker: str) -> int:
    hits = [i for i, s in enumerate(Path(HERE).read_text().splitlines(), start=1) if s.endswith(f"# {marker}")]
    assert len(hits) == 1, hits
    return hits[0]


def run_log(cp) -> list[str]:
    return [s for s in (Path(cp.output_dir) / "report" / "perf_hints_run.log").read_text().splitlines()
            if not s.startswith("#")]


@pl.program
class SmallTasks:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])  # MARK-LOAD
        y = pl.store(pl.add(t, t), [0, 0], y)  # MARK-STORE
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i in pl.range(4):
            yi = self.k(x[i * 16:(i + 1) * 16, :], y[i * 16:(i + 1) * 16, :])  # MARK-CALL
        return y


@pl.program
class BigTask:   # one task, 512 B rows, mostly vector work: nothing to hint
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 128], pl.FP32], y: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        t = pl.load(x, [0, 0], [64, 128])
        for i in pl.range(4):
            t = pl.mul(pl.add(t, 1.0), 0.5)
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 128], pl.FP32], y: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        y = self.k(x, y)
        return y


@pl.program
class DoubleBuffered:   # loads, adds and stores of consecutive tiles overlap: the pipes' shares exceed 100 %
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 1024], pl.FP32], y: pl.Out[pl.Tensor[[64, 1024], pl.FP32]]) -> pl.Tensor[[64, 1024], pl.FP32]:
        for j, (yy,) in pl.pipeline(0, 1024, 128, stage=2, init_values=(y,)):
            t = pl.load(x, [0, j], [64, 128])
            ny = pl.store(pl.add(t, t), [0, j], yy)
            out = pl.yield_(ny)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 1024], pl.FP32], y: pl.Out[pl.Tensor[[64, 1024], pl.FP32]]) -> pl.Tensor[[64, 1024], pl.FP32]:
        y = self.k(x, y)
        return y


def compile_(program, out, **kw):
    return ir.compile(program, output_dir=out, dump_passes=False, skip_ptoas=True, **kw)


def test_small_tasks_idle_vector_pipe_and_narrow_rows(tmp_path):
    cp = compile_(SmallTasks, tmp_path / "b")
    x, y = torch.randn(64, 64), torch.zeros(64, 64)
    cp(x, y)
    torch.testing.assert_close(y, 2 * x)
    hints = {h.code: h for h in cp.run_hints}
    assert sorted(hints) == ["PH004", "PH005", "PH006"] and len(cp.run_hints) == 4   # PH006 for load and store
    tasks = cp.last_run.tasks
    launch = int(const("task_launch"))
    work = tasks[0].cost.cycles - launch
    assert all(t.cost.cycles - launch == work for t in tasks) and work < launch
    total = sum(t.cost.cycles for t in tasks)
    ph4 = hints["PH004"]
    assert (ph4.span.filename, ph4.span.begin_line, ph4.function) == (HERE, line_of("MARK-CALL"), "k")
    assert ph4.message.startswith(
        f"4 tasks of 'k' do {work} cycles of work each on average (min {work}, max {work}) against {launch} "
        f"cycles of launch per task (cost model 'task_launch') plus {int(const('orch_submit'))} cycles of "
        f"orchestrator submission: launch is {round(100 * 4 * launch / total)}% of their {total} cycles")
    ph5 = hints["PH005"]
    vec = sum(t.cost.pipe_cycles["vector"] for t in tasks)
    assert ph5.span.begin_line == line_of("MARK-CALL")
    assert ph5.message.startswith(f"the vector pipe of 'k' (AIV) is busy {vec} of its {4 * work} cycles of work "
                                  f"({round(100 * vec / (4 * work))}%, below 25%) over 4 task(s); the other pipes are busy "
                                  f"mte3 ")
    load, store = [h for h in cp.run_hints if h.code == "PH006"]
    assert (load.span.begin_line, store.span.begin_line) == (line_of("MARK-LOAD"), line_of("MARK-STORE"))
    bw = const("mte2_bytes_per_cycle")
    lost = 4 * (math.ceil(16 * 512 / bw) - math.ceil(16 * 256 / bw))   # whole 512 B granules vs the data
    assert load.message == (
        "this load from DDR into Vec ran 4 time(s) in 4 task(s), 4096 B per transfer in 16 rows of 256 B; DDR "
        "is accessed in 512 B granules, so each row costs a whole granule: 32768 B charged for 16384 B of data "
        f"(50% efficiency), {lost} mte2 cycles lost. Make the innermost tile dimension at least 512 B wide")
    assert store.message.startswith("this store from Vec to DDR ran 4 time(s)")
    lines = run_log(cp)
    assert [s.split()[0] for s in lines] == ["PH004", "PH005", "PH006", "PH006"]
    assert lines[0].startswith(f"PH004 {HERE}:{line_of('MARK-CALL')}:")
    head = (Path(cp.output_dir) / "report" / "perf_hints_run.log").read_text().splitlines()[0]
    assert re.fullmatch(r"# Run-time performance hints for program 'SmallTasks' on Ascend910B \(4 tasks, \d+ cycles\)", head)


def test_rows_of_the_granule_on_a5_are_not_narrow(tmp_path):
    # 256 B rows are below 910B's 512 B granule but above Ascend950's 128 B one
    cp = compile_(SmallTasks, tmp_path / "b", backend_type=BackendType.Ascend950)
    cp(torch.randn(64, 64), torch.zeros(64, 64))
    assert "PH006" not in {h.code for h in cp.run_hints}


def test_a_clean_run_has_no_hints(tmp_path):
    cp = compile_(BigTask, tmp_path / "b")
    x, y = torch.randn(64, 128), torch.zeros(64, 128)
    cp(x, y)
    expected = x
    for _ in range(4):
        expected = (expected + 1) * 0.5
    torch.testing.assert_close(y, expected)
    assert cp.run_hints == [] and run_log(cp) == ["no run-time performance hints"]


@pytest.mark.parametrize("slot,fires", [(2, True), (4, False), (None, False)])
def test_ph007_a_shallow_ring_that_stalls_the_producer(tmp_path, slot, fires):
    # vector cores scale rows and push them to the cube core: they run ahead until the ring is full
    cp = build(tmp_path, "V2C", BackendType.Ascend950, "a5sim", split="UP_DOWN", slot=slot, nb=12)
    cp(*inputs(12))
    ph7 = [h for h in cp.run_hints if h.code == "PH007"]
    aiv = [t for t in cp.last_run.tasks if t.core_type == "AIV"]
    if not fires:
        assert ph7 == []
        return
    (h,) = ph7
    stall, cycles = sum(t.stall_cycles for t in aiv), sum(t.cycles for t in aiv)
    assert stall > 0 and cp.last_run.tasks[0].pipes.depth == {"AIV->AIC": 2}
    assert h.function == "k" and h.span.is_known()
    assert h.message.startswith(
        f"the AIV->AIC pipe ring of 'k' has 2 slots, fewer than the default 8 (pl.cross_core_slot(slot_num=2)); "
        f"in this run it filled up (2 of 2 slots held at once, 24 tiles over 1 call(s)) and the producing AIV "
        f"kernel waited {stall} cycles on its pipes ({round(100 * stall / cycles)}% of its {cycles} cycles)")


def test_phase_and_disabled_codes_choose_the_run_hints(tmp_path):
    x, y = torch.randn(64, 64), torch.zeros(64, 64)
    cp = compile_(SmallTasks, tmp_path / "b", diagnostic_phase="compile")
    log = Path(cp.output_dir) / "report" / "perf_hints_run.log"
    cp(x, y)
    assert cp.run_hints == [] and not log.exists()
    cp(x, y, config=RunConfig(diagnostic_phase="run", disabled_diagnostics={"PH005", "DdrTransferBelowGranule"}))
    assert [h.code for h in cp.run_hints] == ["PH004"] and run_log(cp)[0].startswith("PH004 ")
    cp(x, y)   # the build's phase again: the log of the earlier run goes
    assert cp.run_hints == [] and not log.exists()
    # a reloaded build keeps its diagnostic options
    again = CompiledProgram.from_dir(cp.output_dir)
    again(x, y)
    assert again.diagnostics.phase == "compile" and again.run_hints == []
    cp2 = compile_(SmallTasks, tmp_path / "c", disabled_diagnostics=["TaskTooSmall"])
    again = CompiledProgram.from_dir(cp2.output_dir)
    again(x, y)
    assert sorted({h.code for h in again.run_hints}) == ["PH005", "PH006"]


@pytest.mark.parametrize("kw,message", [
    (dict(diagnostic_phase="later"), "unknown diagnostic_phase 'later'; allowed: 'none', 'compile', 'run', 'all'"),
    (dict(disabled_diagnostics={"PH999"}), "unknown diagnostic 'PH999' in disabled_diagnostics"),
])
def test_run_config_rejects_unknown_diagnostic_values(kw, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        RunConfig(**kw)


def test_jit_forwards_the_diagnostic_options_to_compile():
    @pl.jit
    def twice(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(x, [0, 0], [16, 128])
            unused = pl.exp(t)  # MARK-JIT-UNUSED
            y = pl.store(pl.add(t, t), [0, 0], y)
        return y

    from pypto.core.diagnostics import DiagnosticWarning

    x, y = torch.randn(16, 128), torch.zeros(16, 128)
    with pytest.warns(DiagnosticWarning, match="W001 UnusedVariable: in '.*': 'unused' is assigned") as rec:
        twice(x, y)
    assert any(w.lineno == line_of("MARK-JIT-UNUSED") and w.filename == HERE for w in rec)
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cp = twice.compile(x, y, config=RunConfig(disabled_diagnostics={"W001"}))
        twice(x, y, config=RunConfig(disabled_diagnostics={"W001"}))
    assert not [w for w in caught if issubclass(w.category, DiagnosticWarning)]
    assert cp.diagnostics.disabled == frozenset({"W001"})
    torch.testing.assert_close(y, 2 * x)


def test_a_build_folder_that_cannot_be_written_does_not_fail_the_run(tmp_path, monkeypatch, caplog):
    from pypto.runtime import run_hints as rh

    cp = compile_(SmallTasks, tmp_path / "b")

    def refuse(src, dst):
        raise PermissionError(13, "Permission denied", str(dst))

    monkeypatch.setattr(rh.os, "replace", refuse)
    x, y = torch.randn(64, 64), torch.zeros(64, 64)
    with caplog.at_level("WARNING", logger="pypto.diagnostics"):
        cp(x, y)
    torch.testing.assert_close(y, 2 * x)
    assert {h.code for h in cp.run_hints} == {"PH004", "PH005", "PH006"}
    assert any("could not write" in r.getMessage() and "perf_hints_run.log" in r.getMessage() for r in caplog.records)


@pl.program
class ManyTasks:   # 256 tasks of 8 rows: the orchestrator's submissions take most of the run
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[8, 128], pl.FP32], y: pl.Out[pl.Tensor[[8, 128], pl.FP32]]) -> pl.Tensor[[8, 128], pl.FP32]:
        t = pl.load(x, [0, 0], [8, 128])
        y = pl.store(pl.exp(t), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[2048, 128], pl.FP32], y: pl.Out[pl.Tensor[[2048, 128], pl.FP32]]) -> pl.Tensor[[2048, 128], pl.FP32]:
        for i in pl.parallel(256):
            yi = self.k(x[i * 8:(i + 1) * 8, :], y[i * 8:(i + 1) * 8, :])  # MARK-MANY
        return y


def test_ph010_submission_dominates_the_makespan(tmp_path):
    """The trial's 512 tiny tasks gave no hint: PH010 names the submission share and the task count
    below which the cores' work would dominate."""
    cp = compile_(ManyTasks, tmp_path)
    x, y = torch.randn(2048, 128), torch.zeros(2048, 128)
    cp(x, y)
    torch.testing.assert_close(y, torch.exp(x))
    rec = cp.last_run
    submit = int(const("orch_submit"))
    assert rec.orchestrator_cycles == 256 * submit and rec.orchestrator_cycles >= 0.5 * rec.makespan_cycles
    (ph10,) = [h for h in cp.run_hints if h.code == "PH010"]
    work = sum(t.cycles for t in rec.tasks)
    cores = len({t.core for t in rec.tasks})
    assert ph10.span.begin_line == line_of("MARK-MANY")
    assert (f"the orchestrator spent {256 * submit} of the run's {rec.makespan_cycles} cycles "
            f"({100 * 256 * submit / rec.makespan_cycles:.0f}%) submitting 256 tasks") in ph10.message
    assert f"with {work} cycles of task work on {cores} core(s)" in ph10.message
    assert f"fewer than about {work // (cores * submit)} tasks" in ph10.message
    assert any(s.startswith("PH010 ") for s in run_log(cp))


def test_ph010_not_for_one_task_per_core_or_work_bound_runs(tmp_path):
    cp = compile_(SmallTasks, tmp_path / "small")    # 4 tasks on 4 cores: PH004 covers it
    cp(torch.randn(64, 64), torch.zeros(64, 64))
    assert "PH010" not in {h.code for h in cp.run_hints}
    cp = compile_(BigTask, tmp_path / "big")
    cp(torch.randn(64, 128), torch.zeros(64, 128))
    assert cp.run_hints == []


def test_replayed_runs_reuse_their_hints_and_leave_an_unchanged_log_alone(tmp_path, monkeypatch):
    """Every replay of one plan has a record like the others: the hints are computed once per plan,
    and the log is rewritten only when its text changed or someone else touched the file."""
    import pypto.runtime.run_hints as rh

    cp = compile_(SmallTasks, tmp_path / "b")
    x, y = torch.randn(64, 64), torch.zeros(64, 64)
    cp(x, y)                      # recorded (full simulation)
    log = Path(cp.output_dir) / "report" / "perf_hints_run.log"
    cp(x, y)                      # the first replay computes the hints of the plan
    first = [str(h) for h in cp.run_hints]
    stat = log.stat()
    calls = []
    real = rh.run_hints
    monkeypatch.setattr(rh, "run_hints", lambda *a: calls.append(1) or real(*a))
    cp(x, y)
    assert [str(h) for h in cp.run_hints] == first and calls == []
    assert (log.stat().st_mtime_ns, log.stat().st_ino) == (stat.st_mtime_ns, stat.st_ino)   # not rewritten
    log.write_text("edited\n")
    cp(x, y)
    assert [s.split()[0] for s in run_log(cp)] == ["PH004", "PH005", "PH006", "PH006"]
    log.unlink()
    cp(x, y)
    assert log.exists() and calls == []
    torch.testing.assert_close(y, 2 * x)


def test_idle_pipe_hint_gives_overlapping_pipes_shares_of_the_same_cycles(tmp_path):
    cp = compile_(DoubleBuffered, tmp_path / "b")
    x, y = torch.randn(64, 1024), torch.zeros(64, 1024)
    cp(x, y)
    torch.testing.assert_close(y, 2 * x)
    [task] = cp.last_run.tasks
    work = task.cost.cycles - int(const("task_launch"))
    pipes = task.cost.pipe_cycles
    assert sum(pipes.values()) > work          # double buffering: the pipes overlap
    [ph5] = [h for h in cp.run_hints if h.code == "PH005"]
    shares = ", ".join(f"{p} {round(100 * c / work)}%" for p, c in sorted(pipes.items(), key=lambda x: -x[1])
                       if p != "vector")
    assert ph5.message.startswith(
        f"the vector pipe of 'k' (AIV) is busy {pipes['vector']} of its {work} cycles of work "
        f"({round(100 * pipes['vector'] / work)}%, below 25%) over 1 task(s); the other pipes are busy {shares} of "
        f"those cycles (cost model cycles per pipe; the pipes run in parallel, so the shares need not add up to "
        f"100%); the kernel mostly moves data")
