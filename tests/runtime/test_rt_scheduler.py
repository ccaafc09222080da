"""Discrete-event schedule over the chip's AIC and AIV cores (issue 6): independent tasks overlap in
simulated time, dependent ones wait, cores are never double-booked, conflicting tasks run in order."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig
from pypto.runtime.sim import SimDevice, Task
from pypto.runtime.sim.cost_model import TaskCost, const

ROWS = 16


@pl.function(type=pl.FunctionType.InCore)
def twice(x: pl.Tensor[[ROWS, 64], pl.FP32],
          y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
    """The kernel of every program below (a standalone function each program calls)."""
    t = pl.load(x, [0, 0], [ROWS, 64])
    u = pl.add(t, t)
    y = pl.store(u, [0, 0], y)
    return y


@pl.program
class Blocks:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[1600, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[1600, 64], pl.FP32]]) -> pl.Tensor[[1600, 64], pl.FP32]:
        for i in pl.range(0, 1600, ROWS):
            xs = pl.slice(x, [ROWS, 64], [i, 0])
            ys = pl.slice(y, [ROWS, 64], [i, 0])
            ys = twice(xs, ys)
        return y


@pl.program
class Pipeline:
    """tmp = 2x (4 blocks), then y = 2 tmp (4 blocks): block i of stage 2 needs block i of stage 1."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        tmp = pl.create_tensor([64, 64], dtype=pl.FP32)
        for i in pl.range(0, 64, ROWS):
            xs = pl.slice(x, [ROWS, 64], [i, 0])
            ts = pl.slice(tmp, [ROWS, 64], [i, 0])
            ts = twice(xs, ts)
        for i in pl.range(0, 64, ROWS):
            ts2 = pl.slice(tmp, [ROWS, 64], [i, 0])
            ys = pl.slice(y, [ROWS, 64], [i, 0])
            ys = twice(ts2, ys)
        return y


@pytest.fixture(scope="module")
def blocks(tmp_path_factory):
    return ir.compile(Blocks, output_dir=tmp_path_factory.mktemp("blocks"), dump_passes=False)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    return ir.compile(Pipeline, output_dir=tmp_path_factory.mktemp("pipe"), dump_passes=False)


def test_independent_tasks_overlap_and_cores_are_never_double_booked(blocks) -> None:
    x, y = torch.randn(1600, 64), torch.zeros(1600, 64)
    blocks(x, y)
    assert torch.equal(y, 2 * x)
    tasks = blocks.tasks
    assert len(tasks) == 100 and all(not t.deps for t in tasks)
    assert {t.core_type for t in tasks} == {"AIV"}
    # each task starts as soon as the orchestrator has submitted it, while earlier ones still run
    assert all(t.start_cycle == t.submit_cycle == (t.task_id + 1) * const("orch_submit") for t in tasks)
    assert tasks[1].start_cycle < tasks[0].end_cycle and tasks[0].core != tasks[1].core
    by_core: dict[int, list] = {}
    for t in tasks:
        assert t.end_cycle - t.start_cycle == t.cycles > const("task_launch")
        by_core.setdefault(t.core_index, []).append(t)
    for runs in by_core.values():
        runs.sort(key=lambda t: t.start_cycle)
        assert all(a.end_cycle <= b.start_cycle for a, b in zip(runs, runs[1:]))
    makespan = blocks.last_run.makespan_cycles
    assert makespan == max(t.end_cycle for t in tasks) < sum(t.cycles for t in tasks) / 2


class _FixedCost:
    """A stand-in kernel executor: every task lasts `cycles`."""

    def __init__(self, cycles: int) -> None:
        self.cost = TaskCost(cycles, {"vector": cycles - 900}, {})
        self.ran: list[int] = []

    def run(self, args, arena):
        self.ran.append(args[0])
        return self.cost


def test_ready_tasks_queue_for_busy_cores(blocks) -> None:
    dev = SimDevice(blocks.backend_type)
    ex = _FixedCost(100_000)
    n = dev.num_cores("AIV")
    for i in range(n + 5):
        dev.tasks.append(Task(i, "long", "AIV", (i,), (), executor=ex, submit_cycle=i))
        dev.scheduler.submit(dev.tasks[-1])
    assert dev.scheduler.drain() == 2 * 100_000 + 4
    t = dev.tasks
    assert sorted(k.core_index for k in t[:n]) == list(range(n))
    assert all(k.start_cycle == k.submit_cycle for k in t[:n])
    # the next five wait for the first cores to free up, in submission order, on those cores
    assert [k.start_cycle for k in t[n:]] == [100_000 + i for i in range(5)]
    assert [k.core_index for k in t[n:]] == list(range(5))
    assert ex.ran == list(range(n + 5))     # executed in simulated-start order


def test_dependent_tasks_wait_for_their_producers(pipeline) -> None:
    x, y = torch.randn(64, 64), torch.zeros(64, 64)
    pipeline(x, y)
    assert torch.equal(y, 4 * x)
    t = pipeline.tasks
    assert [sorted(k.deps.items()) for k in t] == [[]] * 4 + [[(i, "RAW")] for i in range(4)]
    for i in range(4):
        assert t[4 + i].start_cycle == max(t[i].end_cycle, t[4 + i].submit_cycle)
    # a core that just finished is not reused while others have been idle longer
    assert t[4].core_index not in {k.core_index for k in t[:4]}


def test_schedule_is_deterministic(pipeline) -> None:
    x = torch.randn(64, 64)
    pipeline(x, torch.zeros(64, 64))
    first = [(k.core, k.start_cycle, k.end_cycle) for k in pipeline.tasks]
    pipeline(x, torch.zeros(64, 64))
    assert [(k.core, k.start_cycle, k.end_cycle) for k in pipeline.tasks] == first


@pl.program
class ReadThenOverwrite:
    """Task 0 reads x; task 1 overwrites x (WAR): task 0 must still see the old x."""

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[ROWS, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [ROWS, 64])
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, z: pl.Tensor[[ROWS, 64], pl.FP32],
             x: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        t = pl.load(z, [0, 0], [ROWS, 64])
        u = pl.add(t, 1.0)
        x = pl.store(u, [0, 0], x)
        return x

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.InOut[pl.Tensor[[ROWS, 64], pl.FP32]], z: pl.Tensor[[ROWS, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        y = self.copy(x, y)
        x = self.fill(z, x)
        return y


def test_conflicting_tasks_run_in_submission_order(tmp_path) -> None:
    cp = ir.compile(ReadThenOverwrite, output_dir=tmp_path, dump_passes=False)
    x, z, y = torch.randn(ROWS, 64), torch.randn(ROWS, 64), torch.zeros(ROWS, 64)
    x0 = x.clone()
    cp(x, z, y)
    assert torch.equal(y, x0) and torch.equal(x, z + 1)
    assert cp.tasks[1].deps == {0: "WAR"} and cp.tasks[1].start_cycle >= cp.tasks[0].end_cycle


def test_explicit_dependencies_order_tasks_without_region_tracking(pipeline) -> None:
    dev = SimDevice(pipeline.backend_type)
    k = pipeline.program.get_function("twice")
    x, tmp, y = torch.randn(ROWS, 64), torch.zeros(ROWS, 64), torch.zeros(ROWS, 64)
    dev.begin_run("manual", auto_deps=False)
    t0 = dev.submit(k, [x, tmp])
    t1 = dev.submit(k, [tmp, y], deps=[t0.task_id])
    rec = dev.end_run()
    assert rec.tasks == [t0, t1] and rec.makespan_cycles == t1.end_cycle
    assert t1.deps == {0: "explicit"} and t1.start_cycle >= t0.end_cycle
    assert torch.equal(y, 4 * x)
    with pytest.raises(ValueError, match="not an earlier task"):
        dev.submit(k, [x, tmp], deps=[7])


def test_config_without_region_tracking_runs_independent_of_order(pipeline) -> None:
    x, y = torch.randn(64, 64), torch.zeros(64, 64)
    pipeline(x, y, config=RunConfig(auto_deps=False))
    assert all(not t.deps for t in pipeline.tasks)
    # stage-2 tasks no longer wait for stage 1: they start as soon as they are submitted
    assert all(t.start_cycle == t.submit_cycle for t in pipeline.tasks)


@pl.program
class ReadBack:
    """The orchestrator reads one element a task wrote, and passes it to the next task."""

    @pl.function(type=pl.FunctionType.InCore)
    def shift(self, x: pl.Tensor[[ROWS, 64], pl.FP32], s: pl.Scalar[pl.FP32],
              y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [ROWS, 64])
        u = pl.add(t, s)
        y = pl.store(u, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[ROWS, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        tmp = pl.create_tensor([ROWS, 64], dtype=pl.FP32)
        tmp = twice(x, tmp)
        s = pl.tensor.read(tmp, [0, 0])
        y = self.shift(x, s, y)
        return y


def test_host_read_of_task_data_waits_for_the_task(tmp_path) -> None:
    cp = ir.compile(ReadBack, output_dir=tmp_path, dump_passes=False)
    x, y = torch.randn(ROWS, 64), torch.zeros(ROWS, 64)
    cp(x, y)
    assert torch.equal(y, x + 2 * x[0, 0])
    first, second = cp.tasks
    # the read made the orchestrator wait for the first task before submitting the second
    assert second.submit_cycle == first.end_cycle + const("orch_submit") and not second.deps
