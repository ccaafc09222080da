"""AutoDeriveTaskDependencies: RAW / WAR / WAW / explicit edges between the tasks of an orchestration."""

import json

import torch

import pypto.language as pl
from pypto import ir
from pypto.passes.auto_derive_task_dependencies import AutoDeriveTaskDependencies
from pypto.passes.base import PassContext

S = [32, 64]
H = [16, 64]


@pl.program
class Pipeline:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(a, [0, 0], H)
        u = pl.mul(t, 2.0)
        o = pl.store(u, [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.InCore)
    def bump(self, x: pl.InOut[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(x, [0, 0], H)
        u = pl.add(t, 1.0)
        x = pl.store(u, [0, 0], x)
        return x

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        top = pl.slice(b, H, [0, 0])
        bottom = pl.slice(b, H, [16, 0])
        a_top = pl.slice(a, H, [0, 0])
        t0 = self.scale(a_top, top)        # task 0 writes b[0:16]
        t1 = self.scale(a_top, bottom)     # task 1 writes b[16:32]: independent of task 0
        t2 = self.bump(top)                # task 2 reads+writes b[0:16]: after task 0 (RAW, WAW)
        t3 = self.scale(a_top, top)        # task 3 rewrites b[0:16]: after task 2 (WAR, WAW) and 0
        return b


def test_edges_follow_overlapping_regions():
    ctx = PassContext()
    assert AutoDeriveTaskDependencies().run(Pipeline, ctx) is Pipeline  # the IR is unchanged
    graph = ctx.records["task_dependencies"]["main"]
    assert [t["callee"] for t in graph["tasks"]] == ["scale", "scale", "bump", "scale"]
    assert graph["tasks"][1]["args"][1] == {"param": "o", "direction": "Out", "tensor": "b",
                                            "offsets": [16, 0], "shape": [16, 64]}
    edges = {(e["from"], e["to"]): e["kinds"] for e in graph["edges"]}
    assert edges == {(0, 2): ["RAW", "WAW"], (0, 3): ["WAW"], (2, 3): ["WAR", "WAW"]}
    assert all(e["exact"] and not e["loop_carried"] and e["tensors"] == ["b"] for e in graph["edges"])


@pl.program
class Loop:
    @pl.function(type=pl.FunctionType.InCore)
    def bump(self, x: pl.InOut[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(x, [0, 0], H)
        u = pl.add(t, 1.0)
        x = pl.store(u, [0, 0], x)
        return x

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, b: pl.InOut[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        for i in pl.range(2):
            blk = pl.slice(b, H, [i * 16, 0])
            r = self.bump(blk)
        return b


def test_loop_sites_depend_on_their_previous_iterations(tmp_path):
    compiled = ir.compile(Loop, output_dir=tmp_path / "b")
    b = torch.randn(*S)
    want = b + 1
    compiled(b)
    torch.testing.assert_close(b, want)
    ctx = PassContext()
    AutoDeriveTaskDependencies().run(compiled.program, ctx)
    (edge,) = ctx.records["task_dependencies"]["main"]["edges"]
    assert edge["from"] == edge["to"] == 0 and edge["loop_carried"] and not edge["exact"]
    assert edge["kinds"] == ["RAW", "WAR", "WAW"]
    assert ctx.records["task_dependencies"]["main"]["tasks"][0]["args"][0]["offsets"] == ["i * 16", 0]


@pl.program
class Explicit:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(a, [0, 0], H)
        u = pl.mul(t, 2.0)
        o = pl.store(u, [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.InCore)
    def bump(self, x: pl.InOut[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(x, [0, 0], H)
        u = pl.add(t, 1.0)
        x = pl.store(u, [0, 0], x)
        return x

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]],
             c: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        top = pl.slice(b, H, [0, 0])
        bottom = pl.slice(b, H, [16, 0])
        a_top = pl.slice(a, H, [0, 0])
        t0 = self.scale(a_top, top)                         # task 0 writes b[0:16]
        t1 = self.scale(a_top, bottom, deps=[t0])           # task 1: disjoint, ordered by deps only
        t2 = self.bump(top, deps=[t0])                      # task 2: RAW/WAW on b[0:16] and deps
        t3 = self.scale(a_top, pl.slice(c, H, [0, 0]), deps=[b])   # task 3: every writer of b
        t4 = self.scale(a_top, pl.slice(c, H, [16, 0]), deps=[a])  # task 4: nothing writes a
        return c


def test_explicit_deps_are_edges_of_kind_explicit():
    ctx = PassContext()
    AutoDeriveTaskDependencies().run(Explicit, ctx)
    graph = ctx.records["task_dependencies"]["main"]
    assert graph["tasks"][1]["deps"] == [{"tensor": "b", "offsets": [0, 0], "shape": [16, 64]}]
    assert graph["tasks"][3]["deps"] == [{"tensor": "b", "offsets": None, "shape": None}]
    assert graph["tasks"][0]["deps"] == []
    edges = {(e["from"], e["to"]): (e["kinds"], e["tensors"]) for e in graph["edges"]}
    assert edges == {
        (0, 1): (["explicit"], ["b"]),
        (0, 2): (["RAW", "WAW", "explicit"], ["b"]),
        (0, 3): (["explicit"], ["b"]),
        (1, 3): (["explicit"], ["b"]),
        (2, 3): (["explicit"], ["b"]),
    }
    assert all(e["exact"] and not e["loop_carried"] for e in graph["edges"])


def test_without_deps_the_disjoint_tasks_have_no_edge():
    text = Explicit.as_python()
    plain = pl.parse(text.replace(", deps=[t0]", "").replace(", deps=[b]", "").replace(", deps=[a]", ""))
    ctx = PassContext()
    AutoDeriveTaskDependencies().run(plain, ctx)
    edges = {(e["from"], e["to"]): e["kinds"] for e in ctx.records["task_dependencies"]["main"]["edges"]}
    assert edges == {(0, 2): ["RAW", "WAW"]}


@pl.program
class LoopDeps:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(a, [0, 0], H)
        u = pl.mul(t, 2.0)
        o = pl.store(u, [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[H, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]],
             w: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        for i in pl.range(2):
            r = self.scale(a, pl.slice(b, H, [i * 16, 0]), deps=[w])  # waits for the previous w
            w = self.scale(a, w)
        return b


def test_explicit_deps_inside_a_loop_reach_back_across_iterations(tmp_path):
    compiled = ir.compile(LoopDeps, output_dir=tmp_path / "b")
    graph = json.loads((tmp_path / "b" / "report" / "task_dependencies.json").read_text())["main"]
    edges = {(e["from"], e["to"], e["loop_carried"]): e["kinds"] for e in graph["edges"]}
    assert edges[(1, 0, True)] == ["explicit"]       # the next iteration's task 0 waits for task 1
    assert (0, 1, False) not in edges                  # w is written after task 0 of an iteration
    a, b, w = torch.randn(*H), torch.empty(*S), torch.empty(*H)
    compiled(a, b, w)
    torch.testing.assert_close(b, torch.cat([2 * a, 2 * a]))
    tasks = compiled.last_run.tasks
    assert [t.deps for t in tasks] == [{}, {}, {1: "explicit"}, {1: "WAW"}]
