"""Replayed runs (`runtime/sim/replay.py`, issue 14 item 5): a program run again with arguments of
the same layout replays the first run's schedule. Every check compares a device that replays
against one that always simulates in full (`replay=False`), on the same inputs: outputs and the
on-chip memories left behind must be bit-identical (torch.equal), and so must the run records
(cores, cycles, dependencies, costs, ring figures, deps.json)."""

from __future__ import annotations

import gc
import sys
import weakref
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from shared_programs import GROUPED_SRC, load_example

import pypto.language as pl
from pypto import ir
from pypto.core.errors import RuntimeSimError
from pypto.runtime import ChipWorker, RunConfig
from pypto.runtime.dfx.deps import deps_json
from pypto.runtime.sim import SimDevice, batch, replay
from pypto.runtime.sim.kernel import KernelExecutor

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "models"))
from ffn import ffn_function  # noqa: E402

RUNS = 3   # runs per program: the first records, the others replay


def _task_facts(rec) -> list[tuple]:
    """Everything a task record says, with DDR buffers named by order of first use."""
    names: dict[int, int] = {}
    out = []
    for t in rec.tasks:
        acc = [(i, names.setdefault(r.key, len(names)), r.lo, r.hi, r.box, r.strides, rd, wr)
               for i, r, rd, wr in t.accesses]
        args = [(tuple(a.shape), a.stride(), a.storage_offset(), a.dtype) if isinstance(a, torch.Tensor) else a
                for a in t.args]
        out.append((t.task_id, t.kernel, t.core, t.submit_cycle, t.ready_cycle, t.start_cycle, t.end_cycle,
                    t.retire_cycle, dict(t.deps), t.cost, t.stall_cycles, t.ddr_wait_cycles, t.offset_cycles,
                    t.block_idx, t.block_num, t.group, t.subblock, t.scope, t.ring, acc, args,
                    t.pipes and (t.pipes.max_occupancy, t.pipes.transfers)))
    created = [(names.get(k, -1), n) for k, n, _ in rec.created]
    inputs = [(p, names.get(k, -1)) for p, k in rec.inputs]
    return out + [(rec.makespan_cycles, rec.orchestrator_cycles, rec.ring_peaks, rec.orch_events,
                   rec.scope_events, [(s.name, s.parent) for s in rec.scopes], created, inputs)]


def _arenas(device: SimDevice) -> dict:
    return {(k, s): b for k, a in device._arenas.items() for s, b in a._buffers.items()}


def check_replay(compiled, make_args, outputs, runs: int = RUNS, config: RunConfig | None = None,
                 replays: bool = True) -> list:
    """Run `compiled` `runs` times on fresh inputs (`make_args(seed)`: host arguments in parameter
    order) on a replaying device and on a full-simulation one; compare everything after each run.
    `outputs`: indices of the arguments the program writes. Returns the replaying device's records."""
    cfg = config or RunConfig(platform=compiled.platform)
    dev_r, dev_f = SimDevice(compiled.backend_type), SimDevice(compiled.backend_type)
    records = []
    for run in range(runs):
        args_r, args_f = make_args(run), make_args(run)
        res_r = compiled.run_on(dev_r, args_r, cfg)
        rec_r = compiled.last_run
        res_f = compiled.run_on(dev_f, args_f, replace(cfg, sim_replay=False))
        rec_f = compiled.last_run
        for i in outputs:
            assert torch.equal(args_r[i], args_f[i]), f"run {run}: output {i} differs"
        for a, b in zip(res_r if isinstance(res_r, tuple) else (res_r,), res_f if isinstance(res_f, tuple) else (res_f,)):
            assert (torch.equal(a, b) if isinstance(a, torch.Tensor) else a == b), f"run {run}: results differ"
        assert _task_facts(rec_r) == _task_facts(rec_f), f"run {run}: records differ"
        assert deps_json(rec_r) == deps_json(rec_f)
        assert rec_r.replayed == (replays and run > 0) and not rec_f.replayed   # RunRecord.replayed
        ar, af = _arenas(dev_r), _arenas(dev_f)
        assert ar.keys() == af.keys() and all(torch.equal(ar[k], af[k]) for k in ar), f"run {run}: arenas differ"
        records.append(rec_r)
    assert dev_r.run_plans.replays == (runs - 1 if replays else 0)
    assert len(dev_f.run_plans) == 0
    return records


def _randn(*shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype)


# ---- example programs ------------------------------------------------------------------------------
def test_tile_add_and_matmul_and_softmax_examples_replay_bit_identically(tmp_path) -> None:
    add = load_example("tile_add")
    cp = ir.compile(add.TileAdd, output_dir=tmp_path / "add", dump_passes=False)
    check_replay(cp, lambda s: [_randn(128, 128, seed=s), _randn(128, 128, seed=s + 9), torch.zeros(128, 128)], [2])
    mm = load_example("matmul")
    cp = ir.compile(mm.Matmul, output_dir=tmp_path / "mm", dump_passes=False)
    main = cp.entry_function
    shapes = [tuple(d.value for d in p.type.shape) for p in main.params]
    dtypes = [p.type.dtype.to_torch() for p in main.params]
    check_replay(cp, lambda s: [_randn(*sh, dtype=dt, seed=s + i) if i < 2 else torch.zeros(*sh, dtype=dt)
                                for i, (sh, dt) in enumerate(zip(shapes, dtypes))], [2])
    sm = load_example("softmax")
    cp = ir.compile(sm.RowSoftmax, output_dir=tmp_path / "sm", dump_passes=False)
    shape = tuple(d.value for d in cp.entry_function.params[0].type.shape)
    check_replay(cp, lambda s: [_randn(*shape, seed=s), torch.zeros(*shape)], [1])


def test_a_dynamic_kernel_loop_and_a_tensor_level_program_replay(tmp_path) -> None:
    loop = load_example("loop_accumulate")
    cp = ir.compile(loop.BlockSum, output_dir=tmp_path / "loop", dump_passes=False)
    check_replay(cp, lambda s: [_randn(8 * 16, 64, seed=s), torch.zeros(16, 64)], [1])
    ts = load_example("tensor_softmax")
    x = _randn(ts.R, ts.C)
    cp = ts.softmax.compile(x, torch.zeros(ts.R, ts.C))
    check_replay(cp, lambda s: [_randn(ts.R, ts.C, seed=s), torch.zeros(ts.R, ts.C)], [1])


M, D, F = 64, 128, 256   # the FFN test: tokens, model width, hidden width


def ffn_program() -> object:
    """The SwiGLU FFN of examples/models/ffn.py for M tokens, D -> F -> D (creates its hidden
    activations in the orchestration); `ffn_args(seed)` are its arguments."""
    ffn = ffn_function(M, D, F, BM=32, BN=64, BK=64)

    @pl.program
    class FFN:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M, D], pl.FP16], w1: pl.Tensor[[D, F], pl.FP16],
                 w3: pl.Tensor[[D, F], pl.FP16], w2: pl.Tensor[[F, D], pl.FP16],
                 y: pl.Out[pl.Tensor[[M, D], pl.FP32]]):
            y = ffn(x, w1, w3, w2, y)
    return FFN


def ffn_args(s: int) -> list:
    return [_randn(M, D, dtype=torch.float16, seed=s), (_randn(D, F, seed=s + 1) / D ** 0.5).half(),
            (_randn(D, F, seed=s + 2) / D ** 0.5).half(), (_randn(F, D, seed=s + 3) / F ** 0.5).half(),
            torch.zeros(M, D)]


def test_the_ffn_model_replays_with_its_created_intermediates(tmp_path) -> None:
    cp = ir.compile(ffn_program(), output_dir=tmp_path / "ffn", dump_passes=False)
    recs = check_replay(cp, ffn_args, [4])
    assert recs[-1].created, "the FFN creates its hidden activations"


def test_scopes_spmd_launches_and_groups_replay(tmp_path) -> None:
    sc = load_example("scopes_and_tasks")
    a = _randn(64, 128)
    outs = [torch.zeros(64, 128) for _ in range(3)]
    cp = sc.three_stages.compile(a, *outs)
    check_replay(cp, lambda s: [_randn(64, 128, seed=s)] + [torch.zeros(64, 128) for _ in range(3)], [1, 2, 3])
    sp = load_example("spmd")
    for fn in (sp.with_form, sp.loop_form, sp.submitted):
        cp = fn.compile(a, torch.zeros(64, 128))
        recs = check_replay(cp, lambda s: [_randn(64, 128, seed=s), torch.zeros(64, 128)], [1])
        assert len(recs[-1].tasks) == 4
    cp = ir.compile(pl.parse(GROUPED_SRC), output_dir=tmp_path / "grouped", dump_passes=False)
    recs = check_replay(cp, lambda s: [_randn(16, 16, dtype=torch.float16, seed=s),
                                       _randn(16, 16, dtype=torch.float16, seed=s + 1), torch.zeros(16, 16)], [2])
    assert recs[-1].tasks[0].group is not None


def test_the_swimlane_pipe_detail_and_ring_stalls_are_replayed(tmp_path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from rings_programs import ScopedTemps

    cp = ir.compile(ScopedTemps, output_dir=tmp_path / "rings", dump_passes=False)
    cfg = RunConfig(ring_heap=8192, ring_task_window=4, enable_chip_swimlane=2, enable_dep_gen=True)
    recs = check_replay(cp, lambda s: [_randn(128, 64, seed=s), torch.zeros(128, 64)], [1], config=cfg)
    assert any(e.kind == "stall" for e in recs[-1].orch_events)
    assert all(t.pipe_ops for t in recs[-1].tasks)
    assert (Path(cp.output_dir) / "dfx_outputs" / "swimlane.json").is_file()


# ---- what makes a plan, and what does not ----------------------------------------------------------
_TIMES2 = """
import pypto.language as pl

@pl.program
class {name}:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 32])
        c = pl.store(pl.mul(t, 2.0), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 32], pl.FP32], {count}, c: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
{body}
        for i in pl.range(0, n):
            sa = pl.slice(a, [16, 32], [i * 16, 0])
            sc = pl.slice(c, [16, 32], [i * 16, 0])
            sc = self.k(sa, sc)
        return c
"""
# c[:16 n] = 2 a[:16 n]: `n` a scalar argument (Scaled) or read from a tensor argument (ReadsCount)
Scaled = pl.parse(_TIMES2.format(name="Scaled", count="n: pl.Scalar[pl.INDEX]", body=""))
ReadsCount = pl.parse(_TIMES2.format(name="ReadsCount", count="cnt: pl.Tensor[[1], pl.INT32]",
                                     body="        n = pl.read(cnt, [0])"))


ROWS = pl.dynamic("ROWS")


@pl.program
class DynRows:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 32])
        c = pl.store(pl.exp(t), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[ROWS, 32], pl.FP32],
             c: pl.Out[pl.Tensor[[ROWS, 32], pl.FP32]]) -> pl.Tensor[[ROWS, 32], pl.FP32]:
        for i in pl.range(0, ROWS, 16):
            sa = pl.slice(a, [16, 32], [i, 0])
            sc = pl.slice(c, [16, 32], [i, 0])
            sc = self.k(sa, sc)
        return c


def test_new_shapes_make_a_new_plan(tmp_path) -> None:
    """A dynamic dimension: each row count is its own plan, replayed when it comes back."""
    cp = ir.compile(DynRows, output_dir=tmp_path / "dyn", dump_passes=False)
    dev_r, dev_f = SimDevice(cp.backend_type), SimDevice(cp.backend_type)
    for k, rows in enumerate((32, 64, 32, 48, 64)):
        a_r, c_r = _randn(rows, 32, seed=k), torch.zeros(rows, 32)
        cp.run_on(dev_r, [a_r, c_r], None)
        rec_r = cp.last_run
        a_f, c_f = _randn(rows, 32, seed=k), torch.zeros(rows, 32)
        cp.run_on(dev_f, [a_f, c_f], RunConfig(sim_replay=False))
        assert len(rec_r.tasks) == rows // 16
        assert torch.equal(c_r, c_f) and _task_facts(rec_r) == _task_facts(cp.last_run)
        torch.testing.assert_close(c_r, torch.exp(a_r))
    assert len(dev_r.run_plans) == 3 and dev_r.run_plans.replays == 2


def test_a_new_scalar_value_or_aliasing_makes_a_new_plan(tmp_path) -> None:
    cp = ir.compile(Scaled, output_dir=tmp_path / "scaled", dump_passes=False)
    with ChipWorker() as w:
        a, c = w.alloc_tensor((64, 32), torch.float32, init=_randn(64, 32)), w.alloc_tensor((64, 32), torch.float32)
        h = w.register(cp)
        plans = w.device.run_plans
        for n, tasks in ((2, 2), (4, 4), (2, 2), (4, 4)):
            h(a, n, c)
            assert len(cp.last_run.tasks) == tasks
        assert len(plans) == 2 and plans.replays == 2
        torch.testing.assert_close(c.to_host(), 2 * a.to_host(), rtol=0, atol=0)
        h(a, 4, a)             # in place: a and c alias, another layout
        assert len(plans) == 3 and plans.replays == 2
        h(a, 4, a)
        assert plans.replays == 3
    check_replay(cp, lambda s: [_randn(64, 32, seed=s), 3, torch.zeros(64, 32)], [2])


def test_an_orchestration_reading_tensor_data_is_never_replayed(tmp_path) -> None:
    cp = ir.compile(ReadsCount, output_dir=tmp_path / "reads", dump_passes=False)
    assert replay.orchestration_reads_data(cp.program, cp.entry_function) is not None
    dev = SimDevice(cp.backend_type)
    for n in (1, 3, 2):
        a, c = _randn(64, 32, seed=n), torch.zeros(64, 32)
        cp.run_on(dev, [a, torch.tensor([n], dtype=torch.int32), c], None)
        assert len(cp.last_run.tasks) == n
        torch.testing.assert_close(c[:16 * n], 2 * a[:16 * n], rtol=0, atol=0)
        assert not c[16 * n:].any()
    assert len(dev.run_plans) == 0 and dev.run_plans.replays == 0


def test_a_kernel_whose_loop_count_comes_from_data_has_no_static_cost() -> None:
    src = """
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 32])
        n = pl.read(t, [0, 0])
        for i in pl.range(pl.cast(n, pl.INDEX)):
            t = pl.add(t, t)
        c = pl.store(t, [0, 0], c)
        return c
"""
    good = load_example("loop_accumulate")
    cp = ir.compile(good.BlockSum, dump_passes=False)
    soc = cp.device.soc
    loop = KernelExecutor(cp.program.get_function("block_sum"), soc)
    assert loop.dynamic and replay.kernel_cost_is_static(loop)
    prog = ir.compile(pl.parse(src), dump_passes=False).program
    ex = KernelExecutor(prog.get_function("k"), soc)
    assert ex.dynamic and not replay.kernel_cost_is_static(ex)


def test_sanitizer_dump_and_switches_turn_replay_off(tmp_path, monkeypatch) -> None:
    cp = ir.compile(Scaled, output_dir=tmp_path / "off", dump_passes=False)
    args = lambda s: [_randn(64, 32, seed=s), 4, torch.zeros(64, 32)]  # noqa: E731
    for cfg in (RunConfig(sanitize=True), RunConfig(enable_dump_args=2), RunConfig(sim_replay=False)):
        dev = SimDevice(cp.backend_type)
        for s in range(2):
            a = args(s)
            cp.run_on(dev, a, cfg)
            torch.testing.assert_close(a[2], 2 * a[0], rtol=0, atol=0)
        assert len(dev.run_plans) == 0
    monkeypatch.setenv(replay.ENV_VAR, "0")
    check_replay(cp, args, [2], replays=False)


def test_a_failed_run_leaves_no_plan_and_a_failed_replay_drops_its_plan(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(batch.ENV_VAR, "0")   # tasks one at a time (a failing batch: test_rt_batch.py)
    cp = ir.compile(Scaled, output_dir=tmp_path / "fail", dump_passes=False)
    dev = SimDevice(cp.backend_type)
    calls = {"n": 0}
    real = KernelExecutor._exec   # runs every task's kernel body, full simulation or replay

    def flaky(self, env, cost):
        calls["n"] += 1
        if calls["n"] == 3:   # the third task of the run
            raise RuntimeSimError("injected failure")
        return real(self, env, cost)

    monkeypatch.setattr(KernelExecutor, "_exec", flaky)
    with pytest.raises(RuntimeSimError, match="task 2 \\(kernel 'k' on AIV.*injected failure"):
        cp.run_on(dev, [_randn(64, 32), 4, torch.zeros(64, 32)], None)
    assert len(dev.run_plans) == 0
    a = [_randn(64, 32), 4, torch.zeros(64, 32)]
    cp.run_on(dev, a, None)                         # records (calls 4-7)
    assert len(dev.run_plans) == 1
    calls["n"] = -10
    cp.run_on(dev, a, None)                         # replays
    assert dev.run_plans.replays == 1
    calls["n"] = 1
    with pytest.raises(RuntimeSimError, match="task 1 \\(kernel 'k'.*injected failure"):
        cp.run_on(dev, a, None)
    assert len(dev.run_plans) == 0
    monkeypatch.setattr(KernelExecutor, "_exec", real)
    b = [_randn(64, 32, seed=5), 4, torch.zeros(64, 32)]
    cp.run_on(dev, b, None)
    torch.testing.assert_close(b[2], 2 * b[0], rtol=0, atol=0)


_DIVIDES = """
import pypto.language as pl

@pl.program
class Divides:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.INT32], b: pl.Tensor[[16, 32], pl.INT32],
          c: pl.InOut[pl.Tensor[[16, 32], pl.INT32]]) -> pl.Tensor[[16, 32], pl.INT32]:
        ta = pl.load(a, [0, 0], [16, 32])
        tb = pl.load(b, [0, 0], [16, 32])
        tc = pl.load(c, [0, 0], [16, 32])
        c = pl.store(pl.tile.add(pl.tile.div(ta, tb), tc), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 32], pl.INT32], b: pl.Tensor[[128, 32], pl.INT32],
             c: pl.InOut[pl.Tensor[[128, 32], pl.INT32]]) -> pl.Tensor[[128, 32], pl.INT32]:
        for i in pl.range(0, 8):
            sa = pl.slice(a, [16, 32], [i * 16, 0])
            sb = pl.slice(b, [16, 32], [i * 16, 0])
            sc = pl.slice(c, [16, 32], [i * 16, 0])
            sc = self.k(sa, sb, sc)
        return c
"""


@pytest.mark.parametrize("batched", [True, False])
def test_a_replay_that_fails_on_its_data_records_what_a_full_simulation_does(batched, tmp_path, monkeypatch) -> None:
    """Integer division by zero in one task of a replayed run: the error, the outputs the earlier
    tasks wrote and the run record (no task started after the failed one, no end-of-run figures)
    are those of a full simulation that runs each task when it starts (PYPTO_SIM_BATCH=0). (Failures
    inside nested runtime scopes: test_rt_rewind.py.)"""
    cp = ir.compile(pl.parse(_DIVIDES), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)

    def args(seed: int, zero_row: int | None) -> list:
        g = torch.Generator().manual_seed(seed)
        a = torch.randint(-1000, 1000, (128, 32), generator=g, dtype=torch.int32)
        b = torch.randint(1, 50, (128, 32), generator=g, dtype=torch.int32)
        if zero_row is not None:
            b[zero_row, 3] = 0
        return [a, b, torch.randint(-5, 5, (128, 32), generator=g, dtype=torch.int32)]

    def runs(replaying: bool) -> list:
        dev, out = SimDevice(cp.backend_type), []
        if not batched or not replaying:
            monkeypatch.setenv(batch.ENV_VAR, "0")
        for seed, zero in ((0, None), (1, 16 * 7 + 2), (2, None), (3, 16 * 3), (4, 0), (5, None)):
            a = args(seed, zero)
            try:
                cp.run_on(dev, a, RunConfig(sim_replay=replaying))
                err = None
            except RuntimeSimError as e:
                err = str(e)
            rec = cp.last_run
            out.append((err, a[2], _task_facts(rec), deps_json(rec), zero in (None, 16 * 7 + 2) and _arenas(dev)))
        monkeypatch.delenv(batch.ENV_VAR, raising=False)
        assert dev.run_plans.replays == (2 if replaying else 0)   # runs 1 and 3 (a failure drops the plan)
        return out

    for n, (r, f) in enumerate(zip(runs(True), runs(False))):
        assert r[0] == f[0] and (r[0] is None) == (n in (0, 2, 5)), (n, r[0], f[0])
        assert torch.equal(r[1], f[1]), f"run {n}: outputs differ"
        assert r[2] == f[2] and r[3] == f[3], f"run {n}: records differ"
        if r[4]:   # (a failed batch leaves partial results on the cores of the tasks after the failed one)
            assert r[4].keys() == f[4].keys() and all(torch.equal(r[4][k], f[4][k]) for k in r[4])


_GROUP_DIVIDES = """
import pypto.language as pl

@pl.program
class GroupDivides:
    @pl.function(type=pl.FunctionType.AIC)
    def mm(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
           p: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        a1 = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
        p = pl.store(pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right)), [0, 0], p)
        return p

    @pl.function(type=pl.FunctionType.AIV)
    def div(self, x: pl.Tensor[[16, 16], pl.INT32], d: pl.Tensor[[16, 16], pl.INT32],
            y: pl.Out[pl.Tensor[[16, 16], pl.INT32]]) -> pl.Tensor[[16, 16], pl.INT32]:
        y = pl.store(pl.tile.div(pl.load(x, [0, 0], [16, 16]), pl.load(d, [0, 0], [16, 16])), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16], p: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
            x: pl.Tensor[[16, 16], pl.INT32], d: pl.Tensor[[16, 16], pl.INT32],
            y: pl.Out[pl.Tensor[[16, 16], pl.INT32]]) -> pl.Tensor[[16, 16], pl.INT32]:
        p = self.mm(a, b, p)
        y = self.div(x, d, y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16], p: pl.Out[pl.Tensor[[64, 16], pl.FP32]],
             x: pl.Tensor[[64, 16], pl.INT32], d: pl.Tensor[[64, 16], pl.INT32],
             y: pl.Out[pl.Tensor[[64, 16], pl.INT32]]) -> pl.Tensor[[64, 16], pl.INT32]:
        for i in pl.range(0, 4):
            sy = pl.slice(y, [16, 16], [i * 16, 0])
            sy = self.grp(pl.slice(a, [16, 16], [i * 16, 0]), b, pl.slice(p, [16, 16], [i * 16, 0]),
                          pl.slice(x, [16, 16], [i * 16, 0]), pl.slice(d, [16, 16], [i * 16, 0]), sy)
        return y
"""


def test_a_replayed_group_call_that_fails_records_what_a_full_simulation_does(tmp_path, monkeypatch) -> None:
    """A Group call whose vector kernel divides by zero on the new data: its tasks are placed on
    their cores but not started, and nothing after them is, as in a full simulation."""
    cp = ir.compile(pl.parse(_GROUP_DIVIDES), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)

    def args(seed: int, zero_row: int | None) -> list:
        g = torch.Generator().manual_seed(seed)
        d = torch.randint(1, 9, (64, 16), generator=g, dtype=torch.int32)
        if zero_row is not None:
            d[zero_row, 0] = 0
        return [(torch.randn(64, 16, generator=g) / 4).half(), (torch.randn(16, 16, generator=g) / 4).half(),
                torch.zeros(64, 16), torch.randint(-99, 99, (64, 16), generator=g, dtype=torch.int32), d,
                torch.zeros(64, 16, dtype=torch.int32)]

    def runs(replaying: bool) -> list:
        dev, out = SimDevice(cp.backend_type), []
        for seed, zero in ((0, None), (1, 20), (2, None), (3, 0)):
            a = args(seed, zero)
            with pytest.raises(RuntimeSimError) if zero is not None else nullcontext() as err:
                cp.run_on(dev, a, RunConfig(sim_replay=replaying))
            out.append((err and str(err.value), a[2], a[5], _task_facts(cp.last_run), deps_json(cp.last_run)))
        assert dev.run_plans.replays == (2 if replaying else 0)
        return out

    monkeypatch.setenv(batch.ENV_VAR, "0")
    for n, (r, f) in enumerate(zip(runs(True), runs(False))):
        assert r[0] == f[0] and torch.equal(r[1], f[1]) and torch.equal(r[2], f[2]), f"run {n} differs"
        assert r[3] == f[3] and r[4] == f[4], f"run {n}: records differ"


def test_a_ring_error_on_the_first_run_leaves_no_plan(tmp_path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from rings_programs import ScopedTemps

    cp = ir.compile(ScopedTemps, output_dir=tmp_path / "ring", dump_passes=False)
    dev = SimDevice(cp.backend_type)
    with pytest.raises(RuntimeSimError, match="ring_heap"):
        cp.run_on(dev, [_randn(128, 64), torch.zeros(128, 64)], RunConfig(ring_heap=1024))
    assert len(dev.run_plans) == 0


def test_a_plan_keeps_no_tensor_of_its_runs_alive(tmp_path) -> None:
    """Plans hold layouts, not tensors: once the records are dropped, the tensors of a recorded
    and of a replayed run are freed (the created ones too)."""
    sys.path.insert(0, str(Path(__file__).parent))
    from rings_programs import ScopedTemps

    cp = ir.compile(ScopedTemps, output_dir=tmp_path / "weak", dump_passes=False)
    dev = SimDevice(cp.backend_type)
    refs = []
    for s in range(3):
        cp.run_on(dev, [_randn(128, 64, seed=s), torch.zeros(128, 64)], None)
        refs += [weakref.ref(a) for t in cp.last_run.tasks for a in t.args]
    assert dev.run_plans.replays == 2
    cp.last_run, cp.tasks, dev.last_run, dev.tasks = None, [], None, []
    gc.collect()
    assert all(r() is None for r in refs)


BYTES = """
import pypto.language as pl

@pl.program
class Bytes:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, m: pl.Tensor[[16, 64], pl.UINT8], y: pl.Out[pl.Tensor[[16, 64], pl.UINT8]]) -> pl.Tensor[[16, 64], pl.UINT8]:
        t = pl.load(m, [0, 0], [16, 64])
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, m: pl.Tensor[[16, 64], pl.BOOL], y: pl.Out[pl.Tensor[[16, 64], pl.UINT8]]) -> pl.Tensor[[16, 64], pl.UINT8]:
        u = pl.tensor.reinterpret_view(m, pl.UINT8)
        y = self.k(u, y)
        return y
"""


def test_a_task_argument_of_another_dtype_than_its_buffer_is_simulated_in_full(tmp_path) -> None:
    """`reinterpret_view` in the orchestration hands a kernel the BOOL argument's bytes as UINT8: a
    tensor of another dtype over the argument's buffer, which a plan does not rebuild, so every run
    is a full simulation (and right)."""
    cp = ir.compile(pl.parse(BYTES), output_dir=tmp_path / "bytes", dump_passes=False)
    dev = SimDevice(cp.backend_type)
    for s in range(3):
        m = torch.rand(16, 64, generator=torch.Generator().manual_seed(s)) > 0.5
        y = torch.zeros(16, 64, dtype=torch.uint8)
        cp.run_on(dev, [m, y], None)
        assert torch.equal(y, m.to(torch.uint8))
    assert len(dev.run_plans) == 0


@pl.program
class AddQuarters:
    @pl.function(type=pl.FunctionType.InCore)
    def add_tile(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
                 c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        ta = pl.load(a, [0, 0], [32, 32])
        tb = pl.load(b, [0, 0], [32, 32])
        tc = pl.add(ta, tb)
        c = pl.store(tc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i in pl.range(0, 64, 32):
            for j in pl.range(0, 64, 32):
                sa = pl.slice(a, [32, 32], [i, j])
                sb = pl.slice(b, [32, 32], [i, j])
                sc = pl.slice(c, [32, 32], [i, j])
                sc = self.add_tile(sa, sb, sc)
        return c


def test_a_replay_with_the_same_argument_objects_reuses_its_bound_kernels_and_rebinds_new_ones() -> None:
    """Resident DeviceTensors passed again (their contents changed in place) run each task's bound
    kernel environment of the last replay while its record lives; other tensors of the same layout
    bind afresh, and the first ones again after them bind afresh too. Every run matches a full
    simulation bit for bit."""
    cp = ir.compile(AddQuarters, dump_passes=False)
    host = [[_randn(64, 64, seed=s), _randn(64, 64, seed=s + 1), torch.zeros(64, 64)] for s in (1, 3)]
    with ChipWorker(config=RunConfig(platform=cp.platform)) as wr, \
            ChipWorker(config=RunConfig(platform=cp.platform, sim_replay=False)) as wf:
        hr, hf = wr.register(cp), wf.register(cp)
        dr = [[wr.alloc_tensor(t.shape, t.dtype, init=t) for t in h] for h in host]
        df = [[wf.alloc_tensor(t.shape, t.dtype, init=t) for t in h] for h in host]
        envs, records = [], []
        for n, k in enumerate([0, 0, 0, 1, 0]):
            x = _randn(64, 64, seed=10 + n)
            dr[k][0].copy_from(x)
            df[k][0].copy_from(x)
            hr(*dr[k])
            hf(*df[k])
            envs.append(wr.device.last_run.kernel_envs)
            records.append(wr.device.last_run)
            out = dr[k][2].to_host()
            assert torch.equal(out, df[k][2].to_host()) and torch.equal(out, x + host[k][1]), f"run {n}"
            assert _task_facts(wr.device.last_run) == _task_facts(wf.device.last_run), f"run {n}"
        assert wr.device.run_plans.replays == 4
    assert envs[0] is None and len(envs[1]) == 4
    assert all(e is f for e, f in zip(envs[1], envs[2]))            # same objects: reused
    assert not any(e is f for e, f in zip(envs[2], envs[3]))        # other tensors: bound afresh
    assert not any(e is f for e, f in zip(envs[3], envs[4]))
