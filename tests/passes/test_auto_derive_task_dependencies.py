"""AutoDeriveTaskDependencies: RAW / WAR / WAW edges between the tasks of an orchestration."""

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
