"""Explicit task dependencies on the simulator (SPEC §1): `deps=[x]` makes a task wait for every
earlier task of the run that wrote any part of `x`, on top of the region-derived dependencies —
for kernel calls, `pl.at` regions, Group (mixed) calls and nested orchestration calls."""

import json

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig
from pypto.runtime.sim.sanitizer import SanitizerError

H = [16, 64]
S = [32, 64]
M = [16, 16]

HALVES = '''
import pypto.language as pl

@pl.program
class Halves:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 64])
        o = pl.store(pl.mul(t, 2.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        t0 = self.scale(a[0:16], b[0:16])
        t1 = self.scale(a[16:32], b[16:32]{deps})
        return b
'''


def _run_halves(tmp_path, deps: str):
    cp = ir.compile(pl.parse(HALVES.format(deps=deps)), output_dir=tmp_path / "b",
                    verification_level=ir.VerificationLevel.ROUNDTRIP)
    a, b = torch.randn(*S), torch.empty(*S)
    cp(a, b, config=RunConfig(enable_dep_gen=True))
    torch.testing.assert_close(b, 2 * a)
    return cp


def test_disjoint_tasks_are_ordered_only_with_deps(tmp_path):
    plain = _run_halves(tmp_path / "plain", "")
    t0, t1 = plain.last_run.tasks
    assert t1.deps == {} and t1.start_cycle < t0.end_cycle  # independent: they overlap in time

    ordered = _run_halves(tmp_path / "deps", ", deps=[t0]")
    t0, t1 = ordered.last_run.tasks
    assert t1.deps == {0: "explicit"}
    assert t1.start_cycle >= t0.end_cycle  # the scheduling consequence
    dfx = tmp_path / "deps" / "b" / "dfx_outputs"
    graph = json.loads((dfx / "task_graph.json").read_text())
    assert graph["edges"] == [{"src": 0, "dst": 1, "kind": "explicit"}]
    assert 't0 -> t1 [label="explicit"];' in (dfx / "task_graph.dot").read_text()
    report = json.loads((tmp_path / "deps" / "b" / "report" / "task_dependencies.json").read_text())
    assert [(e["from"], e["to"], e["kinds"]) for e in report["main"]["edges"]] == [(0, 1, ["explicit"])]


@pl.program
class TwoStage:
    @pl.function(type=pl.FunctionType.InCore)
    def produce(self, x: pl.Tensor[H, pl.FP32], y: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(x, [0, 0], H)
        y = pl.store(pl.mul(t, 3.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def consume(self, x: pl.Tensor[H, pl.FP32], y: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(x, [0, 0], H)
        y = pl.store(pl.add(t, 1.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[H, pl.FP32], y: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        tmp = pl.create_tensor(H, dtype=pl.FP32)
        tmp = self.produce(x, tmp)
        y = self.consume(tmp, y, deps=[tmp])
        return y


def test_deps_order_a_producer_and_consumer_without_region_tracking(tmp_path):
    cp = ir.compile(TwoStage, output_dir=tmp_path / "b")
    x, y = torch.randn(*H), torch.zeros(*H)
    # auto_deps=False: only the explicit dependency orders the pair; the sanitizer would report an
    # unordered read-after-write otherwise (see test_rt_sanitizer)
    cp(x, y, config=RunConfig(sanitize=True, auto_deps=False))
    assert cp.last_run.findings == [] and torch.equal(y, 3 * x + 1)
    t0, t1 = cp.last_run.tasks
    assert t1.deps == {0: "explicit"} and t1.start_cycle >= t0.end_cycle


def test_without_deps_the_same_pair_is_an_unordered_conflict(tmp_path):
    text = TwoStage.as_python().replace(", deps=[tmp]", "")
    cp = ir.compile(pl.parse(text), output_dir=tmp_path / "b")
    with pytest.raises(SanitizerError) as e:
        cp(torch.randn(*H), torch.zeros(*H), config=RunConfig(sanitize=True, auto_deps=False))
    assert [f.kind for f in e.value.findings] == ["unordered-conflict"]


@pl.program
class Nested:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(a, [0, 0], H)
        o = pl.store(pl.mul(t, 2.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def both(self, a: pl.Tensor[H, pl.FP32], x: pl.Out[pl.Tensor[H, pl.FP32]],
             y: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        x = self.scale(a, x)
        y = self.scale(a, y, deps=[x])  # its own deps add to the inherited ones
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]],
             c: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        t0 = self.scale(a[0:16], b[0:16])
        r = self.both(a[0:16], c[0:16], c[16:32], deps=[t0])
        return c


def test_deps_of_a_nested_orchestration_call_apply_to_every_task_it_submits(tmp_path):
    cp = ir.compile(Nested, output_dir=tmp_path / "b", verification_level=ir.VerificationLevel.ROUNDTRIP)
    a, b, c = torch.randn(*S), torch.empty(*S), torch.empty(*S)
    want = 2 * a[:16]
    cp(a, b, c)
    torch.testing.assert_close(c, torch.cat([want, want]))
    torch.testing.assert_close(b[:16], want)
    tasks = cp.last_run.tasks
    assert [t.kernel for t in tasks] == ["scale"] * 3
    assert tasks[1].deps == {0: "explicit"}
    assert tasks[2].deps == {0: "explicit", 1: "explicit"}  # + the writer of the inner `x`
    assert tasks[1].start_cycle >= tasks[0].end_cycle and tasks[2].start_cycle >= tasks[1].end_cycle
    text = (tmp_path / "b" / "orchestration" / "main.cpp").read_text()
    assert "push_task_deps(rt, {t0});" in text and "pop_task_deps(rt);" in text


@pl.program
class MixedDeps:
    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[M, pl.FP32], o: pl.Out[pl.Tensor[M, pl.FP32]]) -> pl.Tensor[M, pl.FP32]:
        t = pl.load(x, [0, 0], M)
        o = pl.store(pl.add(t, 1.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[M, pl.FP16], b: pl.Tensor[M, pl.FP16], x: pl.Tensor[M, pl.FP32],
             y: pl.Out[pl.Tensor[M, pl.FP32]], c: pl.Out[pl.Tensor[M, pl.FP32]]) -> pl.Tensor[M, pl.FP32]:
        y = self.fill(x, y)
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)], deps=[y]):
            c[:] = pl.exp(pl.matmul(a, b, out_dtype=pl.FP32))
        return c


def test_deps_of_a_mixed_region_hold_for_every_kernel_of_its_cluster(tmp_path):
    cp = ir.compile(MixedDeps, output_dir=tmp_path / "b")
    a, b = torch.randn(*M).half(), torch.randn(*M).half()
    x, y, c = torch.randn(*M), torch.empty(*M), torch.empty(*M)
    cp(a, b, x, y, c)
    torch.testing.assert_close(c, torch.exp(a.float() @ b.float()), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(y, x + 1)
    first, *group = cp.last_run.tasks
    assert [t.core_type for t in group] == ["AIC", "AIV", "AIV"] and {t.group for t in group} == {1}
    assert all(t.deps == {0: "explicit"} and t.start_cycle >= first.end_cycle for t in group)


@pl.jit.incore
def jit_scale(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    t = pl.load(a, [0, 0], [16, 64])
    o = pl.store(pl.mul(t, 2.0), [0, 0], o)
    return o


@pl.jit
def jit_halves(a: pl.Tensor, b: pl.Out[pl.Tensor]):
    t0 = jit_scale(a[0:16], b[0:16])
    t1 = jit_scale(a[16:32], b[16:32], deps=[t0])
    return b


def test_jit_sub_function_calls_take_deps():
    a, b = torch.randn(*S), torch.empty(*S)
    jit_halves(a, b)
    torch.testing.assert_close(b, 2 * a)
    t0, t1 = jit_halves.compile(a, b).last_run.tasks
    assert t1.deps == {0: "explicit"} and t1.start_cycle >= t0.end_cycle


OVERLAP = '''
import pypto.language as pl

@pl.program
class Overlap:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 64])
        o = pl.store(pl.mul(t, 2.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
             c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        b = self.scale(a, b)
        c = self.scale(b, c, deps=[b])
        return c
'''


def test_an_explicit_dependency_that_the_regions_also_give_is_recorded_as_both(tmp_path):
    """The second call reads what the first wrote (RAW) and also names it in deps=: the run record
    and the DFX task graph keep both reasons, like the compile-time report."""
    cp = ir.compile(pl.parse(OVERLAP), output_dir=tmp_path / "b")
    a, b, c = torch.randn(*H), torch.empty(*H), torch.empty(*H)
    cp(a, b, c, config=RunConfig(enable_dep_gen=True))
    torch.testing.assert_close(c, 4 * a)
    assert cp.last_run.tasks[1].deps == {0: "RAW+explicit"}
    graph = json.loads((tmp_path / "b" / "dfx_outputs" / "task_graph.json").read_text())
    assert graph["edges"] == [{"src": 0, "dst": 1, "kind": "RAW+explicit"}]
    report = json.loads((tmp_path / "b" / "report" / "task_dependencies.json").read_text())
    assert [e["kinds"] for e in report["main"]["edges"]] == [["RAW", "explicit"]]
