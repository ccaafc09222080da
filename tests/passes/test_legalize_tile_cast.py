"""LegalizeTileCast: non-native casts become chains of native casts, per architecture (SPEC §5)."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import CompileError
from pypto.passes.base import PassContext
from pypto.passes.legalize_tile_cast import LegalizeTileCast


def run(prog, backend):
    return LegalizeTileCast().run(prog, PassContext(backend))


@pl.program
class Before:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 32], pl.INT32], y: pl.Out[pl.Tensor[[16, 32], pl.FP16]]) -> pl.Tensor[[16, 32], pl.FP16]:
        t = pl.load(x, [0, 0], [16, 32])
        r = pl.cast(t, pl.FP16)
        y = pl.store(r, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 32], pl.INT32], y: pl.Out[pl.Tensor[[16, 32], pl.FP16]]) -> pl.Tensor[[16, 32], pl.FP16]:
        y = self.k(x, y)
        return y


@pl.program
class Expected950:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 32], pl.INT32], y: pl.Out[pl.Tensor[[16, 32], pl.FP16]]) -> pl.Tensor[[16, 32], pl.FP16]:
        t = pl.load(x, [0, 0], [16, 32])
        r_fp32 = pl.tile.cast(t, target_type=pl.FP32, mode="round")
        r = pl.tile.cast(r_fp32, target_type=pl.FP16, mode="round")
        y = pl.store(r, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 32], pl.INT32], y: pl.Out[pl.Tensor[[16, 32], pl.FP16]]) -> pl.Tensor[[16, 32], pl.FP16]:
        y = self.k(x, y)
        return y


def test_int32_to_fp16_is_one_cast_on_910b_and_a_chain_on_950():
    assert run(Before, BackendType.Ascend910B) is Before
    ir.assert_structural_equal(run(Before, BackendType.Ascend950), Expected950)


@pl.program
class FloorToInt8:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 32], pl.BF16], y: pl.Out[pl.Tensor[[16, 32], pl.INT8]]) -> pl.Tensor[[16, 32], pl.INT8]:
        t = pl.load(x, [0, 0], [16, 32])
        r = pl.cast(t, pl.INT8, mode="floor")
        y = pl.store(r, [0, 0], y)
        return y


@pl.program
class FloorToInt8Expected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 32], pl.BF16], y: pl.Out[pl.Tensor[[16, 32], pl.INT8]]) -> pl.Tensor[[16, 32], pl.INT8]:
        t = pl.load(x, [0, 0], [16, 32])
        r_fp32 = pl.tile.cast(t, target_type=pl.FP32, mode="round")
        r_fp16 = pl.tile.cast(r_fp32, target_type=pl.FP16, mode="round")
        r = pl.tile.cast(r_fp16, target_type=pl.INT8, mode="floor")
        y = pl.store(r, [0, 0], y)
        return y


@pytest.mark.parametrize("backend", list(BackendType))
def test_rounding_mode_goes_to_the_float_to_int_hop(backend):
    ir.assert_structural_equal(run(FloorToInt8, backend), FloorToInt8Expected)


def test_pair_without_native_chain_is_a_compile_error():
    @pl.program
    class Fp8:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP8E4M3FN]]) -> pl.Tensor[[16, 32], pl.FP8E4M3FN]:
            t = pl.load(x, [0, 0], [16, 32])
            r = pl.cast(t, pl.FP8E4M3FN)
            y = pl.store(r, [0, 0], y)
            return y

    assert run(Fp8, BackendType.Ascend950) is Fp8  # native there
    with pytest.raises(CompileError) as ei:
        run(Fp8, BackendType.Ascend910B)
    assert "Ascend910B cannot convert FP32 to FP8E4M3FN" in ei.value.message
    assert ei.value.span.begin_line > 0


PLATFORM = {BackendType.Ascend910B: "a2a3sim", BackendType.Ascend950: "a5sim"}


@pytest.mark.parametrize("backend", list(BackendType))
def test_chained_casts_compute_what_torch_computes(backend, tmp_path):
    x = torch.randint(-60000, 60000, (16, 32), dtype=torch.int32)
    y = torch.zeros(16, 32, dtype=torch.float16)
    compiled = ir.compile(Before, output_dir=tmp_path / "i2h", backend_type=backend,
                          platform=PLATFORM[backend], verification_level=ir.VerificationLevel.ROUNDTRIP)
    compiled(x, y)
    assert torch.equal(y, x.to(torch.float16))
    hops = [s for s in compiled.program.get_function("k").body.stmts
            if isinstance(s, ir.AssignStmt) and isinstance(s.value, ir.Call) and s.value.op == "tile.cast"]
    assert len(hops) == (1 if backend is BackendType.Ascend910B else 2)

    @pl.program
    class Floor:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 32], pl.BF16], y: pl.Out[pl.Tensor[[16, 32], pl.INT8]]) -> pl.Tensor[[16, 32], pl.INT8]:
            t = pl.load(x, [0, 0], [16, 32])
            r = pl.cast(t, pl.INT8, mode="floor")
            y = pl.store(r, [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 32], pl.BF16], y: pl.Out[pl.Tensor[[16, 32], pl.INT8]]) -> pl.Tensor[[16, 32], pl.INT8]:
            y = self.k(x, y)
            return y

    xb = (torch.rand(16, 32) * 200 - 100).to(torch.bfloat16)
    yb = torch.zeros(16, 32, dtype=torch.int8)
    ir.compile(Floor, output_dir=tmp_path / "floor", backend_type=backend, platform=PLATFORM[backend])(xb, yb)
    assert torch.equal(yb, torch.floor(xb.float()).to(torch.int8))
