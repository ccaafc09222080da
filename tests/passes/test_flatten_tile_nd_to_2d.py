"""FlattenTileNdTo2D: compute on rank > 2 tiles runs on 2-D tiles; loads/stores keep N-D regions."""

import torch

import pypto.language as pl
from pypto import ir
from pypto.passes.base import PassContext
from pypto.passes.flatten_tile_nd_to_2d import FlattenTileNdTo2D
from pypto.runtime import RunConfig

X = [4, 8, 64]


def run(prog):
    return FlattenTileNdTo2D().run(prog, PassContext())


@pl.program
class Before:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[X, pl.FP32], y: pl.Out[pl.Tensor[X, pl.FP32]]) -> pl.Tensor[X, pl.FP32]:
        t = pl.load(x, [0, 0, 0], [2, 8, 64])
        u = pl.add(t, t)
        e = pl.exp(u)
        w = pl.mul(e, 2.0)
        z = pl.create_tile([2, 8, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        y = pl.store(w, [2, 0, 0], y)
        y = pl.store(t, [0, 0, 0], y)
        return y


@pl.program
class Expected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[X, pl.FP32], y: pl.Out[pl.Tensor[X, pl.FP32]]) -> pl.Tensor[X, pl.FP32]:
        t = pl.load(x, [0, 0, 0], [2, 8, 64])
        t_2d = pl.tile.reshape(t, [16, 64])
        u = pl.add(t_2d, t_2d)
        e = pl.exp(u)
        w = pl.mul(e, 2.0)
        z = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        w_nd = pl.tile.reshape(w, [2, 8, 64])
        y = pl.store(w_nd, [2, 0, 0], y)
        y = pl.store(t, [0, 0, 0], y)   # t itself is still N-D: no reshape back
        return y


def test_nd_compute_becomes_2d():
    out = run(Before)
    ir.assert_structural_equal(out, Expected)
    ir.assert_structural_equal(run(out), out)  # idempotent
    for s in out.get_function("k").body.stmts:
        if isinstance(s, ir.AssignStmt) and isinstance(s.value, ir.Call) and s.value.op in ("tile.add", "tile.exp"):
            assert len(s.var.type.shape) == 2


@pl.program
class Loop:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4, 2, 8, 32], pl.FP32], y: pl.Out[pl.Tensor[[2, 8, 32], pl.FP32]]) -> pl.Tensor[[2, 8, 32], pl.FP32]:
        acc = pl.load(x, [0, 0, 0, 0], [1, 2, 8, 32])
        for i in pl.range(1, 4):
            blk = pl.load(x, [i, 0, 0, 0], [1, 2, 8, 32])
            acc = pl.add(acc, pl.exp(blk))
        out = pl.reshape(acc, [2, 8, 32])
        y = pl.store(out, [0, 0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4, 2, 8, 32], pl.FP32], y: pl.Out[pl.Tensor[[2, 8, 32], pl.FP32]]) -> pl.Tensor[[2, 8, 32], pl.FP32]:
        y = self.k(x, y)
        return y


def test_nd_loop_kernel_runs_like_torch(tmp_path):
    compiled = ir.compile(Loop, output_dir=tmp_path / "b", verification_level=ir.VerificationLevel.ROUNDTRIP)
    body = compiled.program.get_function("k").as_python()
    assert "pl.tile.add(acc_2d, exp" in body or "pl.tile.add(acc_2d" in body
    x = torch.randn(4, 2, 8, 32)
    y = torch.zeros(2, 8, 32)
    compiled(x, y, config=RunConfig(platform="a2a3sim", sanitize=True))  # reshapes share buffers
    torch.testing.assert_close(y, x[0] + torch.exp(x[1:]).sum(0), rtol=1e-5, atol=1e-5)
