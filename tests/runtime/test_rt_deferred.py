"""Deferred numbers in full simulations (`runtime/sim/deferred.py`, issue 14 item 5): a task whose
cost is known without running it gets its cost at once and its tile ops later, batched. Every check
compares full simulations with deferral (the default) against full simulations with
`PYPTO_SIM_BATCH=0` (each task run when it starts), on the same inputs: outputs, on-chip memories,
records, dependencies and errors must be identical."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from shared_programs import GROUPED_SRC, load_example
from test_rt_batch import _MATMUL, TASKS, _values
from test_rt_replay import _arenas, _randn, _task_facts, ffn_args, ffn_program

import pypto.language as pl
from pypto import ir
from pypto.core.errors import RuntimeSimError
from pypto.runtime import RunConfig
from pypto.runtime.dfx.deps import deps_json
from pypto.runtime.sim import SimDevice, batch
from pypto.runtime.sim.batch import BatchKernel
from pypto.runtime.sim.deferred import Deferral

FULL = RunConfig(sim_replay=False)


def _run(cp, dev, args, config, monkeypatch, deferred: bool):
    """One full simulation of `cp` on `dev`; returns (the error raised or None, the run's facts)."""
    if deferred:
        monkeypatch.delenv(batch.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(batch.ENV_VAR, "0")
    try:
        cp.run_on(dev, args, config)
        err = None
    except RuntimeSimError as e:
        err = str(e)
    finally:
        monkeypatch.delenv(batch.ENV_VAR, raising=False)
    return err, _task_facts(cp.last_run), deps_json(cp.last_run)


def check_deferred(cp, make_args, outputs, monkeypatch, runs: int = 2, config: RunConfig = FULL,
                   min_deferred: int = 0) -> list:
    """Run `cp` `runs` times with and without deferral (fresh inputs `make_args(seed)` each run) and
    compare everything; at least `min_deferred` tasks of each deferring run must have been deferred.
    Returns the errors of the runs (None: it worked)."""
    taken: list[int] = []
    real = Deferral.take

    def counting(self, task):
        got = real(self, task)
        taken.append(got)
        return got

    monkeypatch.setattr(Deferral, "take", counting)
    dev_on, dev_off = SimDevice(cp.backend_type), SimDevice(cp.backend_type)
    errors = []
    for run in range(runs):
        a_on, a_off = make_args(run), make_args(run)
        taken.clear()
        on = _run(cp, dev_on, a_on, config, monkeypatch, True)
        assert sum(taken) >= min_deferred, f"run {run}: {sum(taken)} tasks deferred"
        taken.clear()
        off = _run(cp, dev_off, a_off, config, monkeypatch, False)
        assert not any(taken), "PYPTO_SIM_BATCH=0 defers nothing"
        assert on[0] == off[0], f"run {run}: errors differ"
        assert on[1] == off[1], f"run {run}: records differ"
        assert on[2] == off[2]
        for i in outputs:
            assert torch.equal(a_on[i], a_off[i]), f"run {run}: output {i} differs"
        ar, af = _arenas(dev_on), _arenas(dev_off)
        assert ar.keys() == af.keys() and all(torch.equal(ar[k], af[k]) for k in ar), f"run {run}: arenas differ"
        errors.append(on[0])
    return errors


def test_examples_give_the_same_numbers_and_records_with_deferred_tasks(tmp_path, monkeypatch) -> None:
    add = load_example("tile_add")
    cp = ir.compile(add.TileAdd, output_dir=tmp_path / "add", dump_passes=False)
    check_deferred(cp, lambda s: [_randn(128, 128, seed=s), _randn(128, 128, seed=s + 9), torch.zeros(128, 128)],
                   [2], monkeypatch)
    sm = load_example("softmax")
    cp = ir.compile(sm.RowSoftmax, output_dir=tmp_path / "sm", dump_passes=False)
    shape = tuple(d.value for d in cp.entry_function.params[0].type.shape)
    check_deferred(cp, lambda s: [_randn(*shape, seed=s), torch.zeros(*shape)], [1], monkeypatch, min_deferred=1)
    loop = load_example("loop_accumulate")      # a kernel with a loop: its first task runs at once
    cp = ir.compile(loop.BlockSum, output_dir=tmp_path / "loop", dump_passes=False)
    check_deferred(cp, lambda s: [_randn(8 * 16, 64, seed=s), torch.zeros(16, 64)], [1], monkeypatch, min_deferred=0)
    ts = load_example("tensor_softmax")
    cp = ts.softmax.compile(_randn(ts.R, ts.C), torch.zeros(ts.R, ts.C))
    check_deferred(cp, lambda s: [_randn(ts.R, ts.C, seed=s), torch.zeros(ts.R, ts.C)], [1], monkeypatch,
                   min_deferred=100)


def test_scopes_spmd_groups_and_created_tensors_with_deferred_tasks(tmp_path, monkeypatch) -> None:
    sc = load_example("scopes_and_tasks")
    a = _randn(64, 128)
    cp = sc.three_stages.compile(a, *[torch.zeros(64, 128) for _ in range(3)])
    check_deferred(cp, lambda s: [_randn(64, 128, seed=s)] + [torch.zeros(64, 128) for _ in range(3)], [1, 2, 3],
                   monkeypatch, min_deferred=3)
    sp = load_example("spmd")
    for fn in (sp.with_form, sp.submitted):     # SPMD blocks run when they start
        cp = fn.compile(a, torch.zeros(64, 128))
        check_deferred(cp, lambda s: [_randn(64, 128, seed=s), torch.zeros(64, 128)], [1], monkeypatch, min_deferred=0)
    cp = ir.compile(pl.parse(GROUPED_SRC), output_dir=tmp_path / "grouped", dump_passes=False)
    check_deferred(cp, lambda s: [_randn(16, 16, dtype=torch.float16, seed=s),
                                  _randn(16, 16, dtype=torch.float16, seed=s + 1), torch.zeros(16, 16)], [2],
                   monkeypatch, min_deferred=0)
    cp = ir.compile(ffn_program(), output_dir=tmp_path / "ffn", dump_passes=False)
    check_deferred(cp, ffn_args, [4], monkeypatch, min_deferred=20)


def test_the_first_full_simulation_of_a_k_loop_batches_its_deferred_tasks(tmp_path, monkeypatch) -> None:
    """A matmul kernel with a K loop: the first task runs at once and teaches its cost; the seven
    others of its layout are deferred and run as one batch."""
    batches: list[int] = []
    real = BatchKernel.run_lanes
    monkeypatch.setattr(BatchKernel, "run_lanes", lambda self, env, lanes: batches.append(len(lanes)) or real(self, env, lanes))
    src = _MATMUL.format(dt="FP16", m=16, rows=16 * TASKS, tasks=TASKS, first="pl.tile.matmul",
                         acc="pl.tile.matmul_acc")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    make = lambda s: [_values("FP16", (16 * TASKS, 64), s) - 1, _values("FP16", (64, 32), s + 3) - 1,  # noqa: E731
                      torch.zeros(16 * TASKS, 32)]
    check_deferred(cp, make, [2], monkeypatch, min_deferred=TASKS - 1)
    assert batches and sum(batches) >= TASKS - 1
    a, b, c = make(4)
    cp.run_on(SimDevice(cp.backend_type), [a, b, c], FULL)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=2e-3, atol=2e-3)


_FAULTY = """
import pypto.language as pl

@pl.program
class Faulty:
    @pl.function(type=pl.FunctionType.InCore)
    def rows(self, x: pl.Tensor[[64, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(x, [r, 0], [16, 64])
        y = pl.store(pl.exp(t), [r, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
             z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.scope():
            for k in pl.range(4):
                y = self.rows(x, k * 16, y)
            for k in pl.range(6):
                z = self.rows(y, k * 12, z)     # k = 5: rows 60:76 of 64, out of bounds
        return z
"""


def test_a_deferred_task_that_fails_reports_and_records_what_a_one_at_a_time_run_does(tmp_path, monkeypatch) -> None:
    """The fault is found only when the deferred tasks run (at the end of the run): the error, the
    outputs the earlier tasks wrote and the record (tasks submitted, started, finished; scope and
    ring records) are those of a run that executed each task when it started."""
    cp = ir.compile(pl.parse(_FAULTY), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    errors = check_deferred(cp, lambda s: [_randn(64, 64, seed=s), torch.zeros(64, 64), torch.zeros(64, 64)],
                            [1, 2], monkeypatch, min_deferred=5)
    assert all(e is not None and "out of bounds" in e and "task 9 (kernel 'rows'" in e for e in errors)
    assert cp.last_run.tasks[9].end_cycle is None


_ORCH_FAULT = """
import pypto.language as pl

@pl.program
class OrchFault:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 32])
        c = pl.store(pl.exp(t), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP32], c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for i in pl.range(0, 5):
            sa = pl.slice(a, [16, 32], [(i % 4) * 16, 0])
            sc = pl.slice(c, [16, 32], [i * 16, 0])    # i = 4: rows 64:80 of 64
            sc = self.k(sa, sc)
        return c
"""


def test_an_orchestration_error_runs_the_deferred_tasks_first(tmp_path, monkeypatch) -> None:
    """The orchestration fails (a slice out of bounds) after four deferred tasks: their numbers are
    written, as in a one-at-a-time run, and the error is the orchestration's. A ring too small for
    the program fails the same way with and without deferral."""
    cp = ir.compile(pl.parse(_ORCH_FAULT), output_dir=tmp_path / "orch", dump_passes=False, skip_ptoas=True)
    errors = check_deferred(cp, lambda s: [_randn(64, 32, seed=s), torch.zeros(64, 32)], [1], monkeypatch,
                            min_deferred=1)
    assert all(e is not None and "out of" in e for e in errors), errors
    sys.path.insert(0, str(Path(__file__).parent))
    from rings_programs import ScopedTemps

    cp = ir.compile(ScopedTemps, output_dir=tmp_path / "ring", dump_passes=False)
    errors = check_deferred(cp, lambda s: [_randn(128, 64, seed=s), torch.zeros(128, 64)], [1], monkeypatch,
                            config=RunConfig(sim_replay=False, ring_heap=1024))
    assert all(e is not None and "ring_heap" in e for e in errors)


def test_an_orchestration_that_reads_task_data_sees_the_deferred_tasks_numbers(tmp_path, monkeypatch) -> None:
    from test_rt_replay import ReadsCount

    cp = ir.compile(ReadsCount, output_dir=tmp_path / "reads", dump_passes=False)
    for n in (1, 3):
        check_deferred(cp, lambda s, n=n: [_randn(64, 32, seed=s), torch.tensor([n], dtype=torch.int32),
                                      torch.zeros(64, 32)], [2], monkeypatch, min_deferred=0)


def test_sanitized_and_dumped_runs_defer_nothing(tmp_path, monkeypatch) -> None:
    add = load_example("tile_add")
    cp = ir.compile(add.TileAdd, output_dir=tmp_path / "add", dump_passes=False)
    taken: list[bool] = []
    real = Deferral.take
    monkeypatch.setattr(Deferral, "take", lambda self, t: taken.append(1) or real(self, t))
    for cfg in (RunConfig(sanitize=True), RunConfig(enable_dump_args=2, sim_replay=False)):
        a = [_randn(128, 128), _randn(128, 128, seed=1), torch.zeros(128, 128)]
        cp.run_on(SimDevice(cp.backend_type), a, cfg)
        assert torch.equal(a[2], a[0] + a[1])
    assert taken == []


@pytest.mark.parametrize("threads", ["1", "2"])
def test_deferred_batches_on_the_host_threads_give_the_same_bits(threads, tmp_path, monkeypatch) -> None:
    import pypto.ops.matmul as mm_mod
    from pypto.ops import threads as threads_mod
    monkeypatch.setattr(threads_mod, "WIDE_COPY", 1)
    monkeypatch.setattr(mm_mod, "WIDE_MACS", 1)
    monkeypatch.setenv("PYPTO_SIM_THREADS", threads)
    src = _MATMUL.format(dt="FP32", m=16, rows=16 * TASKS, tasks=TASKS, first="pl.tile.matmul",
                         acc="pl.tile.matmul_acc")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(int(threads))
        check_deferred(cp, lambda s: [_values("FP32", (16 * TASKS, 64), s) - 1, _values("FP32", (64, 32), s + 3) - 1,
                                      torch.zeros(16 * TASKS, 32)], [2], monkeypatch, min_deferred=TASKS - 1)
    finally:
        torch.set_num_threads(before)


def test_deferred_tasks_get_the_pipe_timelines_of_the_swimlane(tmp_path, monkeypatch) -> None:
    """With the swimlane's pipe tracks (`enable_chip_swimlane >= 2`), a deferred task's pipe ops
    are those of a task run when it starts: static kernels and a K loop learnt from its first task."""
    src = _MATMUL.format(dt="FP16", m=16, rows=16 * TASKS, tasks=TASKS, first="pl.tile.matmul",
                         acc="pl.tile.matmul_acc")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path / "mm", dump_passes=False, skip_ptoas=True)
    cfg = RunConfig(sim_replay=False, enable_chip_swimlane=2)
    make = lambda s: [_values("FP16", (16 * TASKS, 64), s) - 1, _values("FP16", (64, 32), s + 3) - 1,  # noqa: E731
                      torch.zeros(16 * TASKS, 32)]
    pipes = []
    for deferred in (True, False):
        dev = SimDevice(cp.backend_type)
        _run(cp, dev, make(0), cfg, monkeypatch, deferred)
        pipes.append([t.pipe_ops for t in cp.last_run.tasks])
    assert pipes[0] == pipes[1] and all(p for p in pipes[0])


# ---- regressions found by an adversarial trial -------------------------------------------------------
_BUMPS = """
import pypto.language as pl

@pl.program
class Bumps:
    @pl.function(type=pl.FunctionType.InCore)
    def bump(self, o: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(o, [0, 0], [32, 64])
        o = pl.store(pl.adds(t, 1.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, o: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for k in pl.range(4):
            o = self.bump(o)
        return o
"""


def test_without_derived_dependencies_deferred_tasks_do_not_batch(tmp_path, monkeypatch) -> None:
    """`auto_deps=False`: four tasks adding 1 in place to one tile have no dependency between them,
    so nothing but their start order orders them: run together they would all load before any
    stores (the tile ended at 1 instead of 4)."""
    cp = ir.compile(pl.parse(_BUMPS), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    check_deferred(cp, lambda s: [torch.zeros(64, 64)], [0], monkeypatch, min_deferred=3,
                   config=RunConfig(sim_replay=False, auto_deps=False))
    o = torch.zeros(64, 64)
    cp(o, config=RunConfig(sim_replay=False, auto_deps=False))
    assert torch.equal(o[:32], torch.full((32, 64), 4.0)) and not o[32:].any()


_BUMP_THEN_FAULT = """
import pypto.language as pl

@pl.program
class BumpThenFault:
    @pl.function(type=pl.FunctionType.InCore)
    def bump(self, a: pl.Tensor[[128, 64], pl.FP32], o: pl.InOut[pl.Tensor[[128, 64], pl.FP32]],
             p: pl.InOut[pl.Tensor[[128, 64], pl.FP32]], row: pl.Scalar[pl.INDEX],
             src: pl.Scalar[pl.INDEX]) -> tuple[pl.Tensor[[128, 64], pl.FP32], pl.Tensor[[128, 64], pl.FP32]]:
        t = pl.load(o, [row, 0], [16, 64])
        o = pl.store(pl.adds(t, 1.0), [row, 0], o)     # o[row] += 1
        u = pl.load(a, [src, 0], [16, 64])             # out of bounds in the last task
        p = pl.store(u, [row, 0], p)
        return o, p

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], o: pl.InOut[pl.Tensor[[128, 64], pl.FP32]],
             p: pl.InOut[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(0, 64, 16):
            o, p = self.bump(a, o, p, i, i * 3)
        return p
"""


_BUMP_THEN_DIVIDE = """
import pypto.language as pl

@pl.program
class BumpThenDivide:
    @pl.function(type=pl.FunctionType.InCore)
    def bump(self, a: pl.Tensor[[64, 64], pl.INT32], d: pl.Tensor[[64, 64], pl.INT32],
             o: pl.InOut[pl.Tensor[[64, 64], pl.INT32]], q: pl.Out[pl.Tensor[[64, 64], pl.INT32]],
             row: pl.Scalar[pl.INDEX]) -> tuple[pl.Tensor[[64, 64], pl.INT32], pl.Tensor[[64, 64], pl.INT32]]:
        t = pl.load(o, [row, 0], [16, 64])
        o = pl.store(pl.adds(t, 1), [row, 0], o)       # o[row] += 1
        u = pl.load(a, [row, 0], [16, 64])
        e = pl.load(d, [row, 0], [16, 64])
        q = pl.store(pl.div(u, e), [row, 0], q)        # a zero in d: integer division by zero
        return o, q

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.INT32], d: pl.Tensor[[64, 64], pl.INT32],
             o: pl.InOut[pl.Tensor[[64, 64], pl.INT32]],
             q: pl.Out[pl.Tensor[[64, 64], pl.INT32]]) -> pl.Tensor[[64, 64], pl.INT32]:
        for i in pl.range(0, 64, 16):
            o, q = self.bump(a, d, o, q, i)
        return q
"""


def test_a_failing_batch_applies_no_update_twice(tmp_path, monkeypatch) -> None:
    """A batch whose last task fails after every task stored `o[row] += 1`: the batch's DDR writes
    are undone before its tasks run again one at a time, so each row is bumped once, as in a
    one-at-a-time run (they were bumped twice), and no task after the failing one writes. In a
    full simulation (deferred tasks) and in a replayed run."""
    cp = ir.compile(pl.parse(_BUMP_THEN_FAULT), output_dir=tmp_path / "full", dump_passes=False, skip_ptoas=True)
    errors = check_deferred(cp, lambda s: [_randn(128, 64, seed=s), torch.zeros(128, 64),
                                           torch.full((128, 64), 7.0)], [1, 2], monkeypatch, min_deferred=3)
    assert all("out of bounds" in e and "task 3 (kernel 'bump'" in e for e in errors)
    cp = ir.compile(pl.parse(_BUMP_THEN_DIVIDE), output_dir=tmp_path / "replay", dump_passes=False, skip_ptoas=True)
    a = (_randn(64, 64) * 100).to(torch.int32)
    finals = []
    for switch in ("1", "0"):      # batched replay, then one task at a time
        monkeypatch.setenv(batch.ENV_VAR, switch)
        dev = SimDevice(cp.backend_type)
        cp.run_on(dev, [a, torch.ones(64, 64, dtype=torch.int32), torch.zeros(64, 64, dtype=torch.int32),
                        torch.zeros(64, 64, dtype=torch.int32)], None)      # records the plan
        d = torch.ones(64, 64, dtype=torch.int32)
        d[50, 3] = 0                                                        # task 3 divides by zero
        o, q = torch.zeros(64, 64, dtype=torch.int32), torch.full((64, 64), 7, dtype=torch.int32)
        with pytest.raises(RuntimeSimError, match=r"task 3 \(kernel 'bump'.*division by zero"):
            cp.run_on(dev, [a, d, o, q], None)
        assert dev.run_plans.replays == 1
        t0 = cp.last_run.tasks[0]      # the device-side tensors (the caller's stay as they were)
        finals.append((t0.args[2].clone(), t0.args[3].clone()))
        assert not o.any() and (q == 7).all()
    monkeypatch.delenv(batch.ENV_VAR)
    (o1, q1), (o0, q0) = finals
    assert torch.equal(o1, o0) and torch.equal(q1, q0)
    assert torch.equal(o1, torch.ones(64, 64, dtype=torch.int32)) and torch.equal(q1[48:], torch.full((16, 64), 7))


_RESHAPED_SLICE = """
import pypto.language as pl

@pl.program
class ReshapedSlice:
    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[32, 64], pl.FP32], y: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [32, 64])
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, o: pl.Tensor[[64, 64], pl.FP32], p: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        v = pl.reshape(pl.slice(o, [{rows}, {cols}], [0, 0]), [32, 64])
        p = self.copy(v, p)
        return p
"""


def test_reshaping_a_slice_whose_rows_are_apart_is_an_error_not_a_stale_copy(tmp_path) -> None:
    """`pl.reshape` in the orchestration is a view: of a column slice (rows apart in memory) it
    would have been a copy taken before the tasks writing the source ran (a wrong result with
    deferred tasks, and already stale without); now a located error. A row slice still reshapes."""
    bad = ir.compile(pl.parse(_RESHAPED_SLICE.format(rows=64, cols=32)), output_dir=tmp_path / "bad",
                     dump_passes=False, skip_ptoas=True)
    with pytest.raises(RuntimeSimError, match=r"cannot reshape a view of shape \[64, 32\] with strides \[64, 1\].*"
                                              r"reshape the whole tensor and slice the result"):
        bad(torch.randn(64, 64), torch.zeros(32, 64))
    good = ir.compile(pl.parse(_RESHAPED_SLICE.format(rows=32, cols=64)), output_dir=tmp_path / "good",
                      dump_passes=False, skip_ptoas=True)
    o, p = torch.randn(64, 64), torch.zeros(32, 64)
    good(o, p)
    assert torch.equal(p, o[:32])


_STEPS = """
import pypto.language as pl

@pl.program
class Steps:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]],
          n: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 32])
        for i, (acc,) in pl.range(0, n, init_values=(t,)):
            nacc = pl.add(acc, t)
            out = pl.yield_(nacc)
        r = pl.muls(out, s)
        c = pl.store(r, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 32], pl.FP32], c: pl.Out[pl.Tensor[[128, 32], pl.FP32]]) -> pl.Tensor[[128, 32], pl.FP32]:
        for i in pl.range(0, 8):
            sa = pl.slice(a, [16, 32], [i * 16, 0])
            sc = pl.slice(c, [16, 32], [i * 16, 0])
            sc = self.k(sa, sc, {n}, i * 0.5)
        return c
"""


@pytest.mark.parametrize("n", ["i % 3 + 1", "2"])
def test_a_loop_kernel_shares_its_cost_only_across_scalars_off_its_path(n, tmp_path, monkeypatch) -> None:
    """A loop kernel's cost is learnt per layout and scalar values, leaving out the scalars that
    cannot change which ops it executes (`deferred._off_path`): here the factor `s` but not the
    trip count `n`. With `n` varying, a task of a new `n` runs at once; with `n` fixed, every task
    after the first is deferred. Records equal those of one-at-a-time runs either way."""
    from pypto.runtime.sim.deferred import _kernel
    cp = ir.compile(pl.parse(_STEPS.format(n=n)), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    make = lambda s: [_randn(128, 32, seed=s), torch.zeros(128, 32)]  # noqa: E731
    check_deferred(cp, make, [1], monkeypatch, min_deferred=7 if n == "2" else 5)
    dev = SimDevice(cp.backend_type)
    a, c = make(5)
    cp.run_on(dev, [a, c], FULL)
    assert _kernel(dev.tasks[0].executor).free == frozenset({3})   # s, not n
    steps = [(i % 3 + 1) if n != "2" else 2 for i in range(8)]
    want = torch.cat([a[16 * i:16 * i + 16] * (k + 1) * (i * 0.5) for i, k in enumerate(steps)])
    torch.testing.assert_close(c, want)


def test_tensor_level_loop_kernels_defer_every_block_after_the_first(monkeypatch) -> None:
    """Tensor-level kernels take their block's offsets as scalars, which steer no loop: every task
    of a kernel after its first is deferred, the tail block (fewer valid rows) included, with the
    records and numbers of one-at-a-time runs."""
    mod = load_example("tensor_rmsnorm_matmul")
    rows = 196                          # 24.5 RMSNorm blocks of 8 rows, 1.53 matmul row blocks of 128
    g = torch.Generator().manual_seed(3)

    def make(s: int) -> list:
        g.manual_seed(s)
        return [torch.randn(rows, mod.H, generator=g).half(), (torch.rand(1, mod.H, generator=g) + 0.5).half(),
                (torch.randn(mod.H, mod.N, generator=g) / mod.H ** 0.5).half(), torch.zeros(rows, mod.N)]

    cp = mod.rmsnorm_matmul.compile(*make(0))
    check_deferred(cp, make, [3], monkeypatch, min_deferred=25 + 4 - 2)   # 25 + 2 x 2 blocks, all but two
    x, gamma, w, y = make(7)
    cp.run_on(None, [x, gamma, w, y], FULL)
    torch.testing.assert_close(y, mod.reference(x, gamma, w), rtol=2e-3, atol=2e-3)
