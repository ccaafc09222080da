"""ResolveBackendOpLayouts: Vec column vectors become column-major; padded layouts are recorded."""

import torch

import pypto.language as pl
from pypto import ir
from pypto.passes.base import PassContext
from pypto.passes.resolve_backend_op_layouts import ResolveBackendOpLayouts
from pypto.runtime import RunConfig

M, N = 64, 128
COL = pl.TileView(valid_shape=None, layout=pl.TensorLayout.DN, pad=pl.PadValue.null)


@pl.program
class Before:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.load(x, [0, 0], [M, N])
        tmp: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.create_tile([M, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        mx: pl.Tile[[M, 1], pl.FP32, pl.Mem.Vec] = pl.row_max(t, tmp)
        e: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.row_expand_sub(t, mx)
        y = pl.store(e, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        y = self.k(x, y)
        return y


@pl.program
class Expected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.load(x, [0, 0], [M, N])
        tmp: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.create_tile([M, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        mx: pl.Tile[[M, 1], pl.FP32, pl.Mem.Vec, COL] = pl.row_max(t, tmp)
        e: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.row_expand_sub(t, mx)
        y = pl.store(e, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        y = self.k(x, y)
        return y


def test_column_vectors_become_column_major():
    ctx = PassContext()
    out = ResolveBackendOpLayouts().run(Before, ctx)
    ir.assert_structural_equal(out, Expected)
    assert "layout" not in ctx.records  # every tile is laid out without padding
    assert ResolveBackendOpLayouts().run(Expected, PassContext()) is Expected


def test_column_major_vectors_compile_small_and_compute_the_same(tmp_path):
    compiled = ir.compile(Before, output_dir=tmp_path / "b", verification_level=ir.VerificationLevel.ROUNDTRIP)
    mx = next(s.var for s in compiled.program.get_function("k").body.stmts
              if isinstance(s, ir.AssignStmt) and s.var.name == "mx")
    assert mx.type.view.layout is pl.TensorLayout.DN
    assert mx.type.memref.size == M * 4  # not M rows of 32 bytes
    x = torch.randn(M, N)
    y = torch.zeros(M, N)
    compiled(x, y, config=RunConfig(platform="a2a3sim", sanitize=True))
    torch.testing.assert_close(y, x - x.amax(-1, keepdim=True))


@pl.program
class Unaligned:
    @pl.function(type=pl.FunctionType.InCore)
    def mm(self, a: pl.Tensor[[30, 40], pl.FP16], b: pl.Tensor[[40, 64], pl.FP16],
           c: pl.Out[pl.Tensor[[30, 64], pl.FP32]]) -> pl.Tensor[[30, 64], pl.FP32]:
        a1 = pl.load(a, [0, 0], [30, 40], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [40, 64], target_memory=pl.Mem.Mat)
        a0 = pl.move(a1, target_memory=pl.Mem.Left)
        b0 = pl.move(b1, target_memory=pl.Mem.Right)
        c0 = pl.matmul(a0, b0)
        c = pl.store(c0, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[30, 40], pl.FP16], b: pl.Tensor[[40, 64], pl.FP16],
             c: pl.Out[pl.Tensor[[30, 64], pl.FP32]]) -> pl.Tensor[[30, 64], pl.FP32]:
        c = self.mm(a, b, c)
        return c


def test_unaligned_cube_tiles_get_whole_fractals_and_are_recorded(tmp_path):
    compiled = ir.compile(Unaligned, output_dir=tmp_path / "b")
    a = torch.randn(30, 40, dtype=torch.float16)
    b = torch.randn(40, 64, dtype=torch.float16)
    c = torch.zeros(30, 64)
    compiled(a, b, c)
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    ctx = PassContext()
    from pypto.passes import pipeline
    prog = Unaligned
    for cls in pipeline.DEFAULT_PIPELINE[:pipeline.DEFAULT_PIPELINE.index(ResolveBackendOpLayouts) + 1]:
        prog = cls().run(prog, ctx)
    issues = {i["tile"]: i for i in ctx.records["layout"]["mm"]}
    # a0 [30, 40] FP16 in Left: 2 fractal rows of 16 × 96 bytes (80 rounded up to 32s)
    assert issues["a0"] == {"tile": "a0", "space": "Left", "shape": [30, 40], "layout": "ND",
                            "line": issues["a0"]["line"], "dense_bytes": 2400, "buffer_bytes": 32 * 96}
    assert issues["c0"]["buffer_bytes"] == 32 * 256 and issues["c0"]["space"] == "Acc"
    sizes = {s.var.name: s.var.type.memref.size for s in compiled.program.get_function("mm").body.stmts
             if isinstance(s, ir.AssignStmt) and isinstance(s.var.type, ir.TileType)}
    assert sizes["a0"] == 32 * 96 and sizes["c0"] == 32 * 256
