"""Independent tasks of one kernel run as one batch in replayed runs (`runtime/sim/batch.py`,
issue 14 item 5): every op with an `OpSpec.batch` form, and the kernels that mix batched and
lane-by-lane ops, give bit for bit the outputs and on-chip memories of one-at-a-time runs
(`check_replay` compares a replaying device — which batches — against a full simulation, which
runs tasks one at a time); batches form only where the module docstring allows."""

from __future__ import annotations

import pytest
import torch
from test_rt_replay import check_replay

import pypto.language as pl
from pypto import ir
from pypto.core.errors import RuntimeSimError
from pypto.ops.registry import all_ops
from pypto.runtime import RunConfig
from pypto.runtime.sim import SimDevice, batch
from pypto.runtime.sim.batch import BatchKernel, batch_kernel

TASKS = 8


@pytest.fixture(autouse=True)
def _batching_on(monkeypatch):
    """These tests are about batching: they run with it on (the default) even when the shell that
    runs pytest turned it off (`PYPTO_SIM_BATCH=0`) or fixed the host threads."""
    monkeypatch.delenv(batch.ENV_VAR, raising=False)
    monkeypatch.delenv("PYPTO_SIM_THREADS", raising=False)

_ELEMENTWISE = """
import pypto.language as pl

@pl.program
class Lanes:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.{dt}], b: pl.Tensor[[16, 32], pl.{dt}],
          c: pl.Out[pl.Tensor[[16, 32], pl.{odt}]]) -> pl.Tensor[[16, 32], pl.{odt}]:
        ta = pl.load(a, [0, 0], [16, 32])
        {tb} = pl.load(b, [0, 0], [16, 32])
        r = {expr}
        c = pl.store(r, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{rows}, 32], pl.{dt}], b: pl.Tensor[[{rows}, 32], pl.{dt}],
             c: pl.Out[pl.Tensor[[{rows}, 32], pl.{odt}]]) -> pl.Tensor[[{rows}, 32], pl.{odt}]:
        for i in pl.range(0, {tasks}):
            sa = pl.slice(a, [16, 32], [i * 16, 0])
            sb = pl.slice(b, [16, 32], [i * 16, 0])
            sc = pl.slice(c, [16, 32], [i * 16, 0])
            sc = self.k(sa, sb, sc)
        return c
"""

_TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16, "INT32": torch.int32}

# (op, DSL expression, operand dtype, result dtype): every op with a batch form, at a site it batches
_CASES = [
    ("tile.add", "pl.tile.add(ta, tb)", "FP32", "FP32"),
    ("tile.add", "pl.tile.add(ta, tb)", "INT32", "INT32"),
    ("tile.sub", "pl.tile.sub(ta, tb)", "FP16", "FP16"),
    ("tile.mul", "pl.tile.mul(ta, tb)", "BF16", "BF16"),
    ("tile.maximum", "pl.tile.maximum(ta, tb)", "FP32", "FP32"),
    ("tile.minimum", "pl.tile.minimum(ta, tb)", "INT32", "INT32"),
    ("tile.adds", "pl.tile.adds(ta, 2.5)", "FP32", "FP32"),
    ("tile.subs", "pl.tile.subs(ta, 3)", "INT32", "INT32"),
    ("tile.muls", "pl.tile.muls(ta, 0.3)", "FP16", "FP16"),
    ("tile.exp", "pl.tile.exp(ta)", "FP32", "FP32"),
    ("tile.sqrt", "pl.tile.sqrt(ta)", "FP16", "FP16"),
    ("tile.recip", "pl.tile.recip(ta)", "FP32", "FP32"),
    ("tile.neg", "pl.tile.neg(ta)", "BF16", "BF16"),
    ("tile.abs", "pl.tile.abs(ta)", "FP32", "FP32"),
    ("tile.cast", "pl.tile.cast(ta, pl.FP16)", "FP32", "FP16"),
    ("tile.cast", "pl.tile.cast(ta, pl.FP32)", "INT32", "FP32"),
]

_MATMUL = """
import pypto.language as pl

@pl.program
class MmLanes:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[{m}, 64], pl.{dt}], b: pl.Tensor[[64, 32], pl.{dt}],
          c: pl.Out[pl.Tensor[[{m}, 32], pl.FP32]]) -> pl.Tensor[[{m}, 32], pl.FP32]:
        a0 = pl.load(a, [0, 0], [{m}, 32], target_memory=pl.Mem.Mat)
        b0 = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        acc0 = {first}(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
        for k, (acc,) in pl.range(32, 64, 32, init_values=(acc0,)):
            ak = pl.load(a, [0, k], [{m}, 32], target_memory=pl.Mem.Mat)
            bk = pl.load(b, [k, 0], [32, 32], target_memory=pl.Mem.Mat)
            nacc = {acc}(acc, pl.move(ak, target_memory=pl.Mem.Left), pl.move(bk, target_memory=pl.Mem.Right))
            out = pl.yield_(nacc)
        c = pl.store(out, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{rows}, 64], pl.{dt}], b: pl.Tensor[[64, 32], pl.{dt}],
             c: pl.Out[pl.Tensor[[{rows}, 32], pl.FP32]]) -> pl.Tensor[[{rows}, 32], pl.FP32]:
        for i in pl.range(0, {tasks}):
            sa = pl.slice(a, [{m}, 64], [i * {m}, 0])
            sc = pl.slice(c, [{m}, 32], [i * {m}, 0])
            sc = self.k(sa, b, sc)
        return c
"""


def _values(dt: str, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    if dt == "INT32":
        return (x * 1000).to(torch.int32)
    return (x.abs() + 0.25).to(_TORCH[dt])   # positive: sqrt and recip stay finite


def _plan_steps(dev: SimDevice) -> list:
    (plan,) = dev.run_plans._plans.values()
    return plan.steps


def _batched_run(cp, make_args, outputs) -> SimDevice:
    """check_replay, then the replaying device's plan must have run its tasks as batches."""
    check_replay(cp, make_args, outputs)
    dev = SimDevice(cp.backend_type)
    cp.run_on(dev, make_args(0), None)
    return dev


@pytest.mark.parametrize("op,expr,dt,odt", _CASES, ids=[f"{c[0]}-{c[2]}-{c[3]}" for c in _CASES])
def test_each_batch_form_gives_every_lane_the_bits_of_a_one_task_run(op, expr, dt, odt, tmp_path) -> None:
    src = _ELEMENTWISE.format(dt=dt, odt=odt, expr=expr, rows=16 * TASKS, tasks=TASKS,
                              tb="tb" if "tb" in expr else "_tb")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    rows = 16 * TASKS
    dev = _batched_run(cp, lambda s: [_values(dt, (rows, 32), s), _values(dt, (rows, 32), s + 7),
                                      torch.zeros(rows, 32, dtype=_TORCH[odt])], [2])
    steps = _plan_steps(dev)
    assert [(len(u), c) for u, c in steps] == [(TASKS, range(0, TASKS))]
    bk = batch_kernel(dev.tasks[0].executor)
    assert bk.batched_ops == ("tile.load", "tile.load", op, "tile.store") and bk.lane_ops == ()


@pytest.mark.parametrize("dt", ["FP16", "FP32"])
@pytest.mark.parametrize("m", [16, 1])
def test_matmuls_in_a_loop_batch_bit_identically(dt, m, tmp_path) -> None:
    first, acc = ("pl.tile.matmul", "pl.tile.matmul_acc") if m > 1 else ("pl.tile.gemv", "pl.tile.gemv_acc")
    src = _MATMUL.format(dt=dt, m=m, rows=m * TASKS, tasks=TASKS, first=first, acc=acc)
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    rows = m * TASKS
    make = lambda s: [_values(dt, (rows, 64), s) - 1, _values(dt, (64, 32), s + 3) - 1,  # noqa: E731
                      torch.zeros(rows, 32)]
    dev = _batched_run(cp, make, [2])
    assert [len(u) for u, _ in _plan_steps(dev)] == [TASKS]
    bk = batch_kernel(dev.tasks[0].executor)
    assert acc.replace("pl.", "") in bk.batched_ops
    assert (first.replace("pl.", "") in bk.batched_ops) == (m > 1)   # tile.gemv has no batch form: lane by lane
    a, b, c = make(1)
    cp.run_on(dev, [a, b, c], None)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=2e-3, atol=2e-3)


_BOXES = """
import pypto.language as pl

@pl.program
class Boxes:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], k0: pl.Scalar[pl.INDEX],
          c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        for i, (o,) in pl.range(1, init_values=(k0,)):    # an offset the loop carries: not traced
            t = pl.load(a, [0, o], [16, 32])
            u = pl.add(t, t)
            c = pl.store(u, [0, 0], c)
            o2 = pl.yield_(o + 0)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{rows}, 64], pl.FP32],
             c: pl.Out[pl.Tensor[[{rows}, 32], pl.FP32]]) -> pl.Tensor[[{rows}, 32], pl.FP32]:
        for i in pl.range(0, {tasks}):
            sa = pl.slice(a, [16, 64], [i * 16, 0])
            sc = pl.slice(c, [16, 32], [i * 16, 0])
            sc = self.k(sa, 32, sc)
        return c
"""


def _saves(monkeypatch) -> list[int]:
    """The batches that saved the DDR bytes they write (`replay._written`), by task count."""
    from pypto.runtime.sim import replay
    saves: list[int] = []
    real = replay._written
    monkeypatch.setattr(replay, "_written", lambda tasks: saves.append(len(tasks)) or real(tasks))
    return saves


@pytest.mark.parametrize("case", ["offset", "gemv"])
def test_a_replayed_batch_saves_ddr_only_against_failures_on_data(case, tmp_path, monkeypatch) -> None:
    """A batch whose load sits at an offset the access summary cannot follow (carried by a loop)
    may fail (a box out of bounds), so a full simulation's deferred batch saves the DDR bytes it
    writes first; a replay's boxes are those of the recorded run, so it saves them only for a
    kernel with lane-by-lane statements (the gemv runs lane by lane), which may fail on data."""
    saves = _saves(monkeypatch)
    if case == "offset":
        cp = ir.compile(pl.parse(_BOXES.format(rows=16 * TASKS, tasks=TASKS)), output_dir=tmp_path,
                        dump_passes=False, skip_ptoas=True)
        a, c = torch.randn(16 * TASKS, 64), torch.zeros(16 * TASKS, 32)
        args, want = [a, c], lambda: a[:, 32:] * 2
    else:
        src = _MATMUL.format(dt="FP16", m=1, rows=TASKS, tasks=TASKS, first="pl.tile.gemv", acc="pl.tile.gemv_acc")
        cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
        a, b = _values("FP16", (TASKS, 64), 1) - 1, _values("FP16", (64, 32), 4) - 1
        c = torch.zeros(TASKS, 32)
        args, want = [a, b, c], lambda: a.float() @ b.float()
    dev = SimDevice(cp.backend_type)
    cp.run_on(dev, args, None)     # full simulation: deferred tasks batch and save
    first = saves[:]
    assert first == [TASKS - 1]   # (a loop kernel's first task runs alone)
    bk = batch_kernel(dev.tasks[0].executor)
    assert bk.may_fail and bk.may_fail_on_data == (case == "gemv")
    c.zero_()
    cp.run_on(dev, args, None)     # replayed, one batch
    assert dev.run_plans.replays == 1
    assert saves == (first + [TASKS] if case == "gemv" else first)
    torch.testing.assert_close(c, want(), rtol=2e-3, atol=2e-3)


def test_a_k_loop_whose_boxes_stay_inside_saves_nothing(tmp_path, monkeypatch) -> None:
    """The K-loop's loads at `[0, k]` and `[k, 0]` for k in range(32, 64, 32) are proven inside the
    kernel's static [16, 64] and [64, 32] tensors (`access.StaticBoxes`): its batches cannot fail,
    and neither a full simulation nor a replay saves anything."""
    saves = _saves(monkeypatch)
    src = _MATMUL.format(dt="FP16", m=16, rows=16 * TASKS, tasks=TASKS, first="pl.tile.matmul",
                         acc="pl.tile.matmul_acc")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    a, b = _values("FP16", (16 * TASKS, 64), 1) - 1, _values("FP16", (64, 32), 4) - 1
    c = torch.zeros(16 * TASKS, 32)
    dev = SimDevice(cp.backend_type)
    for _ in range(2):
        c.zero_()
        cp.run_on(dev, [a, b, c], RunConfig(sim_replay=False))
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=2e-3, atol=2e-3)
    bk = batch_kernel(dev.tasks[0].executor)
    assert not bk.may_fail and saves == []


_TASK_OFFSET = """
import pypto.language as pl

@pl.program
class TaskOffset:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], k0: pl.Scalar[pl.INDEX],
          c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, k0], [16, 32])
        u = pl.add(t, t)
        c = pl.store(u, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{rows}, 64], pl.FP32], k: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[{rows}, 32], pl.FP32]]) -> pl.Tensor[[{rows}, 32], pl.FP32]:
        for i in pl.range(0, {tasks}):
            sa = pl.slice(a, [16, 64], [i * 16, 0])
            sc = pl.slice(c, [16, 32], [i * 16, 0])
            sc = self.k(sa, k, sc)
        return c
"""


def test_a_batch_whose_tasks_boxes_are_inside_saves_nothing_and_one_outside_fails_cleanly(tmp_path,
                                                                                         monkeypatch) -> None:
    """The load's offset `k0` is the task's argument: a batch of tasks whose boxes the access
    summary evaluates inside their tensors (`AccessSummary.in_bounds`) saves nothing; with `k0`
    out of bounds it saves, fails with the one-at-a-time error, and leaves the output as a
    one-at-a-time run leaves it."""
    saves = _saves(monkeypatch)
    cp = ir.compile(pl.parse(_TASK_OFFSET.format(rows=16 * TASKS, tasks=TASKS)), output_dir=tmp_path,
                    dump_passes=False, skip_ptoas=True)
    a = torch.randn(16 * TASKS, 64)
    full = RunConfig(sim_replay=False)
    dev = SimDevice(cp.backend_type)
    c = torch.zeros(16 * TASKS, 32)
    cp.run_on(dev, [a, 32, c], full)
    torch.testing.assert_close(c, a[:, 32:] * 2, rtol=0, atol=0)
    assert saves == [] and dev.tasks[0].executor.access.in_bounds(dev.tasks[0].args)
    outs = []
    for batching in ("1", "0"):
        monkeypatch.setenv(batch.ENV_VAR, batching)
        c = torch.full((16 * TASKS, 32), 7.0)
        with pytest.raises(RuntimeSimError, match=r"task 0 \(kernel 'k' .*\): tile.load failed .* out of bounds"):
            cp.run_on(SimDevice(cp.backend_type), [a, 48, c], full)
        outs.append(c)
    assert saves == [TASKS]
    assert torch.equal(outs[0], outs[1])


_BOUNDS = """
import pypto.language as pl

@pl.program
class Bounds:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 128], pl.FP32], n: pl.Scalar[pl.INDEX],
          c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t0 = pl.load(a, [0, 0], [16, 32])
        for k, (acc,) in pl.range({start}, {stop}, {step}, init_values=(t0,)):
            t = pl.load(a, [0, {offset}], [16, 32])
            s = pl.add(acc, t)
            out = pl.yield_(s)
        c = pl.store(out, [0, 0], c)
        return c
"""


@pytest.mark.parametrize("start, stop, step, offset, inside", [
    (32, 128, 32, "k", True),          # k = 32, 64, 96: the last box ends at 128
    (32, 129, 32, "k", False),         # k reaches 128: out of the tensor
    (32, 128, 32, "k + 16", False),    # 112 + 32 > 128
    (0, 128, 32, "k // 2", True),
    (0, 128, 32, "n", False),          # the task's scalar: not known for every task
    (0, "n", 32, "k", False),          # a loop bound of the task
    (96, -1, -32, "k", True),          # k = 96, 64, 32, 0
    (112, 0, -32, "k", False),         # 112 + 32 > 128
    (200, 0, 32, "k", False),          # the body never runs: not proven (200 is not inside)
    (0, 128, 32, "k % 100 + 40", False),   # 96 % 100 + 40 + 32 > 128
    (0, 128, 32, "pl.min(k, 96)", True),
    (0, 128, 32, "pl.get_block_idx() * 32", False),   # an SPMD launch's blocks: not proven
])
def test_static_boxes_are_proven_inside_only_for_every_task(start, stop, step, offset, inside) -> None:
    from pypto.runtime.sim.access import StaticBoxes
    prog = pl.parse(_BOUNDS.format(start=start, stop=stop, step=step, offset=offset))
    func = prog.get_function("k")
    loop = next(s for s in func.body.stmts if type(s).__name__ == "ForStmt")
    load = next(s.value for s in loop.body.stmts if getattr(getattr(s, "value", None), "op", None) == "tile.load")
    assert StaticBoxes(func).inside(load) is inside


def test_a_batched_product_that_rounds_differently_is_computed_lane_by_lane(tmp_path, monkeypatch) -> None:
    """If a BLAS gave a batched product other bits than the one-lane product, the first batch of
    that lane count finds it and that count runs lane by lane: still bit-identical."""
    real = torch.Tensor.baddbmm_

    def skewed(self, a, b):       # a batched product that is off in the last bit
        real(self, a, b)
        self.view(torch.int32)[..., 0] += 1
        return self

    monkeypatch.setattr(torch.Tensor, "baddbmm_", skewed)
    orig = torch.baddbmm

    def skewed_out(acc, a, b, out):
        orig(acc, a, b, out=out)
        out.view(torch.int32)[..., 0] += 1
        return out

    monkeypatch.setattr(torch, "baddbmm", skewed_out)
    from pypto.ops.matmul import forget_batch_checks
    forget_batch_checks()     # the verdicts of the real BLAS (kept per process) do not hold for this one
    src = _MATMUL.format(dt="FP16", m=16, rows=16 * TASKS, tasks=TASKS, first="pl.tile.matmul",
                         acc="pl.tile.matmul_acc")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    try:
        check_replay(cp, lambda s: [_values("FP16", (16 * TASKS, 64), s) - 1, _values("FP16", (64, 32), s + 3) - 1,
                                    torch.zeros(16 * TASKS, 32)], [2], runs=4)
    finally:
        forget_batch_checks()


@pytest.mark.parametrize("order", ["i", "7 - i", "(i * 3) % 8"])
def test_loads_and_stores_of_lanes_that_do_not_stack_run_lane_by_lane(order, tmp_path) -> None:
    """Lanes whose tensors lie at a constant step apart are copied as one strided view; in any other
    order (here: tasks placed on cores in reverse or scattered row order) lane after lane."""
    src = _ELEMENTWISE.format(dt="FP32", odt="FP32", expr="pl.tile.add(ta, tb)", rows=16 * TASKS, tasks=TASKS,
                              tb="tb").replace("[i * 16, 0]", f"[({order}) * 16, 0]")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    rows = 16 * TASKS
    dev = _batched_run(cp, lambda s: [_values("FP32", (rows, 32), s), _values("FP32", (rows, 32), s + 7),
                                      torch.zeros(rows, 32)], [2])
    (unit, cores), = _plan_steps(dev)
    lanes = [dev.tasks[k].args for k in unit]
    from pypto.runtime.sim.batch import Lanes
    assert (Lanes([a[0] for a in lanes]).stacked is not None) == (order == "i")


def test_every_op_with_a_batch_form_is_tested() -> None:
    have = {s.name for s in all_ops() if s.batch is not None}
    tested = {c[0] for c in _CASES} | {"tile.matmul", "tile.matmul_acc", "tile.gemv_acc", "tile.move",
                                       "tile.load", "tile.store"}
    assert have == tested


# ---- where batches form ----------------------------------------------------------------------------
_ROWS_SRC = """
import pypto.language as pl

@pl.program
class Rows:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 32])
        u = pl.exp(t)
        c = pl.store(u, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{rows}, 32], pl.FP32], c: pl.Out[pl.Tensor[[{rows}, 32], pl.FP32]]) -> pl.Tensor[[{rows}, 32], pl.FP32]:
{body}
        return c
"""


def _rows_program(tmp_path, rows: int, body: str):
    src = _ROWS_SRC.format(rows=rows, body=body)
    return ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)


def test_more_tasks_than_cores_split_into_batches_of_distinct_cores(tmp_path) -> None:
    n = 100     # 48 vector cores on Ascend910B
    cp = _rows_program(tmp_path, 16 * n, f"""        for i in pl.range(0, {n}):
            sa = pl.slice(a, [16, 32], [i * 16, 0])
            sc = pl.slice(c, [16, 32], [i * 16, 0])
            sc = self.k(sa, sc)""")
    dev = _batched_run(cp, lambda s: [torch.randn(16 * n, 32, generator=torch.Generator().manual_seed(s)),
                                      torch.zeros(16 * n, 32)], [1])
    steps = _plan_steps(dev)
    assert sum(len(u) for u, _ in steps) == n and all(c is not None for _, c in steps[:2])
    for unit, cores in steps:     # cut where the scheduler wraps round to core 0: no uneven pieces
        got = [dev.tasks[k].core_index for k in unit]
        assert got == sorted(got) and (cores is None or got == list(cores))
    bk = batch_kernel(dev.tasks[0].executor)   # the lane budget per thread, a multiple of the threads
    for t in (1, 2, 3):
        m = bk.lanes_for(t)
        assert m >= 2 and (t == 1 or m % t == 0) and m >= bk.lanes_for(1)


def test_a_wave_of_tasks_splits_into_batches_of_equal_size(monkeypatch) -> None:
    """With the chip's core count, the lane count is the one that splits a wave of tasks over
    every core into as few batches as the budget allows, all of one size."""
    bk = BatchKernel.__new__(BatchKernel)      # only lanes_for's inputs: a lane of 1000 bytes
    bk.lane_bytes = 1000
    monkeypatch.setenv(batch.BYTES_VAR, "5000")        # 10 lanes on two threads
    assert bk.lanes_for(2) == 10
    assert bk.lanes_for(2, 24) == 8          # 8, 8, 8 rather than 10, 10, 4
    assert bk.lanes_for(2, 48) == 10         # 10 x 4 + 8: five batches either way
    assert bk.lanes_for(2, 20) == 10 and bk.lanes_for(2, 6) == 10   # the budget splits it evenly / fits it
    assert bk.lanes_for(1, 24) == 5          # one thread, 5 lanes: 5, 5, 5, 5, 4 (no fewer batches)
    assert bk.lanes_for(3, 24) == 12         # three threads, 15 lanes: 12, 12


def test_dependent_tasks_are_not_batched_together(tmp_path) -> None:
    """Each task reads what the one before wrote (a chain): no two may run together."""
    cp = _rows_program(tmp_path, 16, """        for i in pl.range(0, 4):
            c = self.k(a, c)
            a = c""")
    dev = _batched_run(cp, lambda s: [torch.randn(16, 32, generator=torch.Generator().manual_seed(s)) * 0.1,
                                      torch.zeros(16, 32)], [1])
    assert all(c is None for _, c in _plan_steps(dev))


def test_manual_scopes_are_not_batched(tmp_path) -> None:
    cp = _rows_program(tmp_path, 64, """        with pl.manual_scope():
            for i in pl.range(0, 4):
                sa = pl.slice(a, [16, 32], [i * 16, 0])
                sc = pl.slice(c, [16, 32], [i * 16, 0])
                sc = self.k(sa, sc)""")
    dev = _batched_run(cp, lambda s: [torch.randn(64, 32, generator=torch.Generator().manual_seed(s)),
                                      torch.zeros(64, 32)], [1])
    assert all(c is None for _, c in _plan_steps(dev))


def test_the_switch_turns_batching_off_at_once(tmp_path, monkeypatch) -> None:
    """PYPTO_SIM_BATCH=0 is read by every run: a replay, also of a plan recorded before it was set,
    and a full simulation (whose deferred tasks batch too: `deferred.py`)."""
    cp = _rows_program(tmp_path, 64, """        for i in pl.range(0, 4):
            sa = pl.slice(a, [16, 32], [i * 16, 0])
            sc = pl.slice(c, [16, 32], [i * 16, 0])
            sc = self.k(sa, sc)""")
    batches = []
    real = BatchKernel.run_lanes
    monkeypatch.setattr(BatchKernel, "run_lanes", lambda self, env, lanes: batches.append(1) or real(self, env, lanes))
    dev = SimDevice(cp.backend_type)
    a = torch.randn(64, 32)
    for switch, want in (("1", 1), ("1", 2), ("0", 2), ("1", 3), ("0", 3)):
        monkeypatch.setenv(batch.ENV_VAR, switch)
        c = torch.zeros(64, 32)
        cp.run_on(dev, [a, c], None)
        assert torch.equal(c, torch.exp(a)) and len(batches) == want


_DIVIDES = """
import pypto.language as pl

@pl.program
class Divides:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.INT32], b: pl.Tensor[[16, 64], pl.INT32], d: pl.Tensor[[16, 64], pl.INT32],
          c: pl.Out[pl.Tensor[[16, 64], pl.INT32]]) -> pl.Tensor[[16, 64], pl.INT32]:
        t = pl.load(a, [0, 0], [16, 64])
        u = pl.load(b, [0, 0], [16, 64])
        e = pl.load(d, [0, 0], [16, 64])
        v = pl.div(t, u)
        w = pl.div(v, e)
        c = pl.store(w, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.INT32], b: pl.Tensor[[128, 64], pl.INT32],
             d: pl.Tensor[[128, 64], pl.INT32], c: pl.Out[pl.Tensor[[128, 64], pl.INT32]]) -> pl.Tensor[[128, 64], pl.INT32]:
        for i in pl.range(0, 8):
            sc = pl.slice(c, [16, 64], [i * 16, 0])
            sc = self.k(pl.slice(a, [16, 64], [i * 16, 0]), pl.slice(b, [16, 64], [i * 16, 0]),
                        pl.slice(d, [16, 64], [i * 16, 0]), sc)
        return c
"""


@pytest.mark.parametrize("replay", [True, False])
def test_a_failing_batch_reports_the_error_a_one_at_a_time_run_reports(replay, tmp_path) -> None:
    """Task 3 divides by zero in its second division, task 5 in its first: running statement by
    statement over the lanes, task 5 fails first; the batch then runs its tasks one at a time, in
    their order, and the error names task 3 at the second division, as a full simulation does."""
    cp = ir.compile(pl.parse(_DIVIDES), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-100, 100, (128, 64), dtype=torch.int32, generator=g)
    b = torch.randint(1, 9, (128, 64), dtype=torch.int32, generator=g)
    d = torch.randint(1, 9, (128, 64), dtype=torch.int32, generator=g)
    dev = SimDevice(cp.backend_type)
    cfg = RunConfig(platform=cp.platform, sim_replay=replay)
    cp.run_on(dev, [a, b, d, torch.zeros(128, 64, dtype=torch.int32)], cfg)
    b[5 * 16 + 3, 7] = 0
    d[3 * 16 + 1, 2] = 0
    with pytest.raises(RuntimeSimError, match=r"task 3 \(kernel 'k' on AIV3, called at .*:\d+\)") as ei:
        cp.run_on(dev, [a, b, d, torch.zeros(128, 64, dtype=torch.int32)], cfg)
    assert ei.value.span is not None and "w = pl.div(v, e)" in str(ei.value)
    assert dev.run_plans.replays == (1 if replay else 0)


@pytest.mark.parametrize("threads", [1, 2])
def test_results_do_not_depend_on_the_host_thread_count(threads, tmp_path) -> None:
    """The simulator runs small tile ops on one intra-op thread whatever torch is set to outside
    runs (and large batched ones on the host's threads, checked below), so batched, one-at-a-time
    and full runs give the same bits at any host thread count."""
    src = _MATMUL.format(dt="FP16", m=16, rows=16 * TASKS, tasks=TASKS, first="pl.tile.matmul",
                         acc="pl.tile.matmul_acc")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    make = lambda: [_values("FP16", (16 * TASKS, 64), 5) - 1, _values("FP16", (64, 32), 6) - 1,  # noqa: E731
                    torch.zeros(16 * TASKS, 32)]
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        ref = make()
        cp.run_on(SimDevice(cp.backend_type), ref, None)
        torch.set_num_threads(threads)
        dev = SimDevice(cp.backend_type)
        for _ in range(3):    # full simulation, then batched replays
            args = make()
            cp.run_on(dev, args, None)
            assert torch.equal(args[2], ref[2])
            assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dt", ["FP16", "FP32"])
def test_batched_ops_on_the_host_threads_give_the_bits_of_one_thread(threads, dt, tmp_path, monkeypatch) -> None:
    """With the thresholds of `ops/threads.py` at 1, every batched GEMM and copy of a replay (loads
    at run-time offsets in a K loop, moves, FP16 -> FP32 operands, the GEMM through its contiguous
    buffer) runs on `threads` host threads: outputs, records and on-chip memories are those of the
    one-thread full simulation, and the host's threads were used exactly when there are several."""
    import pypto.ops.matmul as mm_mod
    from pypto.ops import threads as threads_mod
    monkeypatch.setattr(threads_mod, "WIDE_COPY", 1)
    monkeypatch.setattr(mm_mod, "WIDE_MACS", 1)
    monkeypatch.setenv("PYPTO_SIM_THREADS", str(threads))   # whatever the load of the machine
    seen: list[int] = []     # the intra-op threads of every batched GEMM with an accumulator
    real_mm, real_bmm, real_baddbmm = torch.Tensor.baddbmm_, torch.bmm, torch.baddbmm

    def spied(f):
        def call(*a, **k):
            seen.append(torch.get_num_threads())
            return f(*a, **k)
        return call

    monkeypatch.setattr(torch.Tensor, "baddbmm_", spied(real_mm))
    monkeypatch.setattr(torch, "bmm", spied(real_bmm))
    monkeypatch.setattr(torch, "baddbmm", spied(real_baddbmm))
    real = torch.set_num_threads
    src = _MATMUL.format(dt=dt, m=16, rows=16 * TASKS, tasks=TASKS, first="pl.tile.matmul",
                         acc="pl.tile.matmul_acc")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    before = torch.get_num_threads()
    try:
        real(threads)
        check_replay(cp, lambda s: [_values(dt, (16 * TASKS, 64), s) - 1, _values(dt, (64, 32), s + 3) - 1,
                                    torch.zeros(16 * TASKS, 32)], [2], runs=3)
        assert torch.get_num_threads() == threads
    finally:
        real(before)
    assert seen and set(seen) == {threads}


def test_runs_in_several_python_threads_keep_one_torch_thread_and_give_back_the_callers() -> None:
    """Torch's intra-op thread count is one setting for the process: a run that ends while another
    Python thread's run is in progress leaves it at one thread, and the last run to end restores
    the caller's count (not the one it found set by another run). The threads batched ops may use
    (`host_threads`) are each Python thread's own."""
    import threading

    from pypto.ops.threads import host_threads, one_torch_thread, wide_threads
    entered_a, entered_b, done_a = threading.Event(), threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def a() -> None:
        with one_torch_thread() as caller, host_threads(2):
            seen["a caller"] = caller
            entered_a.set()
            entered_b.wait(10)
            seen["a wide"] = wide_threads()
        done_a.set()

    def b() -> None:
        entered_a.wait(10)
        with one_torch_thread() as caller, host_threads(1):
            seen["b caller"] = caller
            entered_b.set()
            done_a.wait(10)
            seen["b after a"] = torch.get_num_threads()
            seen["b wide"] = wide_threads()

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        ts = [threading.Thread(target=a), threading.Thread(target=b)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(20)
        assert seen == {"a caller": 2, "b caller": 2, "a wide": 2, "b after a": 1, "b wide": 1}
        assert torch.get_num_threads() == 2 and wide_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_a_run_beside_another_computes_on_one_thread_and_goes_wide_only_alone() -> None:
    """Runs in two Python threads: the second to start still computes its GEMMs on one thread (each
    Python thread has its own MKL count: a K of 1024 rounds differently on two threads here), and a
    block that would use several threads (`wide`) stays on one while another run is in progress
    (torch's OpenMP count is the process's), and uses them when its run is alone. The run that ends
    last puts the caller's count back."""
    import threading

    from pypto.ops.threads import one_torch_thread, wide
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(16, 1024, generator=g), torch.randn(1024, 16, generator=g)
    inside, done = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def other() -> None:
        torch.set_num_threads(2)
        with one_torch_thread():
            inside.set()
            done.wait(10)
        seen["last run ended"] = torch.get_num_threads()    # it ended last: the caller's count

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        want = torch.mm(a, b)
        with one_torch_thread():
            with wide(2) as n:
                seen["alone"] = (n, torch.get_num_threads())
        t = threading.Thread(target=other)
        torch.set_num_threads(2)
        t.start()
        inside.wait(10)
        try:
            with one_torch_thread():
                seen["mm"] = torch.equal(torch.mm(a, b), want)
                with wide(2) as n:
                    seen["beside"] = (n, torch.get_num_threads())
        finally:
            done.set()
            t.join(20)
        assert seen == {"alone": (2, 2), "mm": True, "beside": (1, 1), "last run ended": 2}
    finally:
        torch.set_num_threads(before)


def test_runs_use_the_host_threads_only_while_cores_are_idle(monkeypatch) -> None:
    """`available_threads`: the caller's threads capped by the idle cores (CPUs less the load
    average not counting this process's own share), `PYPTO_SIM_THREADS` when set; never below 1.
    `own_load`: CPU seconds per second since the oldest recent sample, none in the first second."""
    from pypto.runtime.sim import host_cores
    from pypto.runtime.sim.host_cores import available_threads, own_load
    monkeypatch.delenv("PYPTO_SIM_THREADS", raising=False)
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    for own, load, requested, want in [(1.0, 1.0, 2, 2), (0.0, 0.2, 8, 2), (1.0, 1.4, 2, 2), (0.0, 1.0, 2, 1),
                                       (1.0, 2.0, 2, 1), (0.5, 3.5, 2, 1), (0.0, 0.0, 1, 1)]:
        monkeypatch.setattr("os.getloadavg", lambda load=load: (load, load, load))
        monkeypatch.setattr(host_cores, "own_load", lambda own=own: own)
        assert available_threads(requested) == want, (own, load, requested)
    monkeypatch.setenv("PYPTO_SIM_THREADS", "3")
    assert available_threads(1) == 3
    monkeypatch.setattr(host_cores, "_SAMPLES", [])
    assert own_load(100.0, 5.0) == 0.0 and own_load(100.5, 5.4) == 0.0
    assert own_load(102.0, 6.0) == 0.5           # 1 CPU second in 2 s
    assert own_load(170.0, 6.0) == 0.0           # the first samples aged out: idle since 102 s
    monkeypatch.setenv("PYPTO_SIM_THREADS", "0")
    assert available_threads(2) == 1


def test_lanes_that_stack_in_several_runs_copy_once_per_run(tmp_path) -> None:
    """Rows 0, 2, 4, 6, 1, 3, 5, 7 in task order: two runs of lanes two rows apart, each loaded and
    stored with one copy (`Lanes.pieces`), bit-identical to one-at-a-time runs."""
    from pypto.runtime.sim.batch import Lanes
    src = _ELEMENTWISE.format(dt="FP32", odt="FP32", expr="pl.tile.add(ta, tb)", rows=16 * TASKS, tasks=TASKS,
                              tb="tb").replace("[i * 16, 0]", "[((i % 4) * 2 + i // 4) * 16, 0]")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    rows = 16 * TASKS
    dev = _batched_run(cp, lambda s: [_values("FP32", (rows, 32), s), _values("FP32", (rows, 32), s + 7),
                                      torch.zeros(rows, 32)], [2])
    (unit, _), = _plan_steps(dev)
    lanes = Lanes([dev.tasks[k].args[0] for k in unit])
    assert lanes.stacked is None
    assert [(k0, k1, v.stride(0)) for k0, k1, v in lanes.pieces] == [(0, 4, 2 * 16 * 32), (4, 8, 2 * 16 * 32)]


# ---- regressions found by a trial (tensor values carried by control flow, data-dependent checks) ----
_CARRIED = """
import pypto.language as pl

@pl.program
class Carried:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
          c: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for i in pl.range(0, 32, 16):
            ta = pl.load(a, [i, 0], [16, 64])
            c = pl.store(pl.exp(ta), [i, 0], c)
        t = pl.load(a, [0, 0], [16, 64])
        if n > 3:
            c = pl.store(pl.neg(t), [0, 0], c)
        else:
            c = pl.store(pl.abs(t), [0, 0], c)
        d = c
        u = pl.load(a, [16, 0], [8, 64])
        d = pl.store(pl.exp(pl.neg(u)), [16, 0], d)
        return d

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for i in pl.range(0, 4):
            sa = pl.slice(a, [32, 64], [i * 32, 0])
            sc = pl.slice(c, [32, 64], [i * 32, 0])
            sc = self.k(sa, n, sc)
        return c
"""


@pytest.mark.parametrize("n", [5, 1])
def test_a_tensor_carried_by_a_loop_an_if_or_an_assignment_is_rebound_in_every_lane(n, tmp_path) -> None:
    """`c = pl.store(..., c)` in a loop or in both branches of an if, then `d = c`: the carried
    tensor is each lane's own (it was once only rebound in the batch environment: a crash)."""
    cp = ir.compile(pl.parse(_CARRIED), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    make = lambda s: [torch.randn(128, 64, generator=torch.Generator().manual_seed(s)), n,  # noqa: E731
                      torch.zeros(128, 64)]
    dev = _batched_run(cp, make, [2])
    assert [len(u) for u, _ in _plan_steps(dev)] == [4]
    a, _, c = args = make(2)
    cp.run_on(dev, args, None)
    want = torch.exp(a).view(4, 32, 64).clone()
    want[:, :16] = (torch.neg if n > 3 else torch.abs)(a.view(4, 32, 64)[:, :16])
    want[:, 16:24] = torch.exp(-a.view(4, 32, 64)[:, 16:24])
    assert torch.equal(c, want.view(128, 64))


def test_the_gemm_check_does_not_trust_exact_data(tmp_path) -> None:
    """One-row products over a K loop, whose batched GEMM may round differently: a first batch on
    exact data (ones: the first run, whose deferred tasks batch, and the first replay) must not make
    the batched form trusted for later random data."""
    from pypto.ops.matmul import forget_batch_checks
    forget_batch_checks()
    src = _MATMUL.format(dt="FP32", m=1, rows=TASKS, tasks=TASKS, first="pl.tile.matmul",
                         acc="pl.tile.matmul_acc")
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)

    def make(s):
        if s in (0, 1):
            return [torch.ones(TASKS, 64), torch.ones(64, 32), torch.zeros(TASKS, 32)]
        g = torch.Generator().manual_seed(s)
        return [torch.randn(TASKS, 64, generator=g), torch.randn(64, 32, generator=g), torch.zeros(TASKS, 32)]

    check_replay(cp, make, [2], runs=4)


def test_scalars_of_opposite_zero_signs_are_different_values(tmp_path) -> None:
    """0.0 and -0.0 are different scalars (recip of a product with them is +inf or -inf): tasks given
    each are not one batch, and a run with -0.0 does not replay a plan recorded with 0.0."""
    src = """
import pypto.language as pl

@pl.program
class Zeros:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], s: pl.Scalar[pl.FP32],
          c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 64])
        r = pl.recip(pl.muls(t, s))
        c = pl.store(r, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], s0: pl.Scalar[pl.FP32], s1: pl.Scalar[pl.FP32],
             c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i in pl.range(0, 4):
            sc = pl.slice(c, [16, 64], [i * 16, 0])
            if i < 2:
                sc = self.k(pl.slice(a, [16, 64], [i * 16, 0]), s0, sc)
            else:
                sc = self.k(pl.slice(a, [16, 64], [i * 16, 0]), s1, sc)
        return c
"""
    cp = ir.compile(pl.parse(src), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    a = torch.rand(64, 64) + 1.0
    dev = SimDevice(cp.backend_type)
    for s0, s1 in ((0.0, -0.0), (0.0, -0.0), (-0.0, -0.0), (-0.0, 0.0), (-0.0, 0.0)):
        c = torch.zeros(64, 64)
        cp.run_on(dev, [a, s0, s1, c], None)
        signs = torch.sign(c[::16, 0]).tolist()
        assert signs == [1.0 if s0 == 0 and str(s0)[0] != "-" else -1.0] * 2 + \
            [1.0 if str(s1)[0] != "-" else -1.0] * 2
    assert dev.run_plans.replays == 2 and len(dev.run_plans) == 3


# ---- lane scalars: scalar arguments that differ between the tasks of a batch ---------------------
_OFFSETS = """
import pypto.language as pl

@pl.program
class Offsets:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[128, 32], pl.FP32], off: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32],
          n: pl.Scalar[pl.INDEX], c: pl.Out[pl.Tensor[[128, 32], pl.FP32]]) -> pl.Tensor[[128, 32], pl.FP32]:
        row = off + 8
        t = pl.load(a, [off, 0], [8, 32])
        u = pl.load(a, [row, 0], [8, 32])
        for j, (acc,) in pl.range(0, n, init_values=(t,)):
            nxt = pl.add(acc, u)
            out = pl.yield_(nxt)
        r = pl.muls(out, s)
        c = pl.store(r, [off, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 32], pl.FP32], n0: pl.Scalar[pl.INDEX], n1: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[128, 32], pl.FP32]]) -> pl.Tensor[[128, 32], pl.FP32]:
        for i in pl.range(0, 8):
            if i < 4:
                c = self.k(a, i * 16, 0.5 + i, n0, c)
            else:
                c = self.k(a, i * 16, 0.5 + i, n1, c)
        return c
"""


@pytest.mark.parametrize("n1", [2, 3])
def test_tasks_given_other_offsets_and_factors_batch_with_lane_scalars(n1, tmp_path) -> None:
    """`off` (and `row`, computed from it) place the loads and the store, `s` scales: they differ
    between tasks and run lane by lane; `n` counts a loop, so tasks batch only where it agrees."""
    cp = ir.compile(pl.parse(_OFFSETS), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    make = lambda s: [torch.randn(128, 32, generator=torch.Generator().manual_seed(s)), 2, n1,  # noqa: E731
                      torch.zeros(128, 32)]
    dev = _batched_run(cp, make, [3])
    (plan,) = dev.run_plans._plans.values()
    batches = [(len(u), plan.lane_params[u]) for u, c in plan.steps if c is not None]
    assert batches == ([(8, frozenset({1, 2}))] if n1 == 2 else [(4, frozenset({1, 2}))] * 2)
    bk = batch_kernel(dev.tasks[0].executor, frozenset({1, 2}))
    assert "tile.add" in bk.batched_ops and "tile.muls" in bk.lane_ops and "tile.load" in bk.lane_ops
    a, _, _, c = args = make(3)
    cp.run_on(dev, args, None)
    blocks = a.view(8, 2, 8, 32)
    n = torch.tensor([2] * 4 + [n1] * 4).view(8, 1, 1)
    want = (blocks[:, 0] + n * blocks[:, 1]) * (0.5 + torch.arange(8.0)).view(8, 1, 1)
    assert torch.allclose(c.view(8, 16, 32)[:, :8], want, rtol=1e-5, atol=1e-5)


def test_a_scalar_that_counts_a_loop_is_not_a_lane_scalar(tmp_path) -> None:
    cp = ir.compile(pl.parse(_OFFSETS), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    dev = SimDevice(cp.backend_type)
    cp.run_on(dev, [torch.randn(128, 32), 1, 2, torch.zeros(128, 32)], None)
    from pypto.runtime.sim.batch import NotBatchable, lane_scalars
    ex = dev.tasks[0].executor
    assert lane_scalars(ex) == frozenset({1, 2})
    assert batch_kernel(ex, frozenset({3})) is None
    with pytest.raises(NotBatchable, match="loop's bounds"):
        BatchKernel(ex.func, ex.soc, frozenset({3}))


@pytest.mark.parametrize("replay, fresh", [(True, False), (False, False), (False, True)])
def test_a_failing_batch_leaves_the_on_chip_memories_of_a_one_at_a_time_run(replay, fresh, tmp_path,
                                                                            monkeypatch) -> None:
    """After the failure of test_a_failing_batch_reports_..., every core's on-chip memory holds
    what a one-at-a-time run (`PYPTO_SIM_BATCH=0`) leaves: the batch's partial results on the cores
    of tasks after the failing one are put back before the tasks run again one at a time — also
    when the failing run is the device's first (`fresh`: memories never used before)."""
    from test_rt_replay import _arenas

    from pypto.runtime.sim.arena import UNINIT_BYTE
    cp = ir.compile(pl.parse(_DIVIDES), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-100, 100, (128, 64), dtype=torch.int32, generator=g)
    b = torch.randint(1, 9, (128, 64), dtype=torch.int32, generator=g)
    d = torch.randint(1, 9, (128, 64), dtype=torch.int32, generator=g)
    cfg = RunConfig(platform=cp.platform, sim_replay=replay)
    outs = []
    for batching in ("1", "0"):
        monkeypatch.setenv(batch.ENV_VAR, batching)
        dev = SimDevice(cp.backend_type)
        bb, dd = b.clone(), d.clone()
        if not fresh:
            cp.run_on(dev, [a, bb, dd, torch.zeros(128, 64, dtype=torch.int32)], cfg)
        bb[5 * 16 + 3, 7] = 0
        dd[3 * 16 + 1, 2] = 0
        c = torch.zeros(128, 64, dtype=torch.int32)
        with pytest.raises(RuntimeSimError, match=r"task 3 \(kernel 'k' on AIV3"):
            cp.run_on(dev, [a, bb, dd, c], cfg)
        outs.append((c, _arenas(dev)))
    (c1, m1), (c0, m0) = outs
    assert torch.equal(c1, c0)
    assert m0.keys() <= m1.keys() and all(torch.equal(m1[k], m0[k]) for k in m0)
    # a memory the batch bound (its core's first use) but a one-at-a-time run never reached holds
    # the bytes of a memory never used
    assert all(bool((m1[k] == UNINIT_BYTE).all()) for k in m1.keys() - m0.keys())
    assert (m1.keys() - m0.keys()) == (set() if not fresh else {(("AIV", i), m) for (_, i), m in m1 if i > 3})
