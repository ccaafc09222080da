"""An annotation states a variable's type; what it leaves out comes from the value (a user trial
found partial annotations silently dropping a tile's valid region and memory space)."""

import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType

S, N = 16, 64


@pl.program
class PartialTiles:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[2 * S, N], pl.FP32], n: pl.Scalar[pl.INDEX],
          y: pl.InOut[pl.Tensor[[2 * S, N], pl.FP32]]) -> pl.Tensor[[2 * S, N], pl.FP32]:
        for b in pl.range(2):
            t: pl.Tile[[S, N], pl.FP32] = pl.load(x, [b * S, 0], [S, N], valid_shape=[n, N])
            y = pl.store(pl.muls(t, 2.0), [b * S, 0], y)
        return y


def test_an_annotation_without_a_view_keeps_the_loaded_valid_region():
    printed = PartialTiles.as_python()
    assert "t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec, pl.TileView(valid_shape=[n, 64]" in printed
    compiled = ir.compile(PartialTiles, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    x, y = torch.randn(2 * S, N), torch.full((2 * S, N), -7.0)
    compiled(x, 5, y)
    want = torch.full((2 * S, N), -7.0)
    want[:5], want[S:S + 5] = 2 * x[:5], 2 * x[S:S + 5]
    torch.testing.assert_close(y, want)   # only the valid rows are written


@pl.program
class GuideMatmul:
    """The Language Guide's matmul, every tile annotated with shape and dtype only."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
          c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        a_l1: pl.Tile[[32, 32], pl.FP16] = pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        b_l1: pl.Tile[[32, 32], pl.FP16] = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        a_l0a: pl.Tile[[32, 32], pl.FP16] = pl.move(a_l1, target_memory=pl.Mem.Left)
        b_l0b: pl.Tile[[32, 32], pl.FP16] = pl.move(b_l1, target_memory=pl.Mem.Right)
        acc: pl.Tile[[32, 32], pl.FP32] = pl.matmul(a_l0a, b_l0b)
        c = pl.store(acc, [0, 0], c)
        return c


def test_an_annotation_without_a_memory_keeps_the_op_target():
    k = GuideMatmul.get_function("k")
    spaces = {s.var.name: s.var.type.memory_space for s in k.body.stmts if isinstance(s, ir.AssignStmt)
              and isinstance(s.var.type, ir.TileType)}
    assert spaces == {"a_l1": pl.Mem.Mat, "b_l1": pl.Mem.Mat, "a_l0a": pl.Mem.Left, "b_l0b": pl.Mem.Right,
                      "acc": pl.Mem.Acc}
    for backend, platform in ((BackendType.Ascend910B, "a2a3sim"), (BackendType.Ascend950, "a5sim")):
        compiled = ir.compile(GuideMatmul, dump_passes=False, skip_ptoas=True, platform=platform,
                              backend_type=backend)
        a, b, c = torch.randn(32, 32).half(), torch.randn(32, 32).half(), torch.zeros(32, 32)
        compiled(a, b, c)
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
