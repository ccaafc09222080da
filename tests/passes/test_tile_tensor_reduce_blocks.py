"""TileTensorBlocks, blocked accumulation (issue 11): a row reduction over rows too long for one
block becomes passes over column blocks, each reduction accumulated across the blocks with its
combining op (sum: add, max: maximum, ...); checked as IR (Before/Expected) and against torch
(softmax, LayerNorm, RMSNorm; FP32/FP16/BF16; both backends; rows of up to 100000 elements)."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.passes.base import PassContext
from pypto.passes.tile_tensor_blocks import TileTensorBlocks
from pypto.runtime import RunConfig

FP32 = pl.FP32


def blocked(program, backend=BackendType.Ascend910B):
    return TileTensorBlocks().run(program, PassContext(backend_type=backend))


@pl.program
class HugeRow:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4, 16384], FP32], y: pl.Out[pl.Tensor[[4, 16384], FP32]]) -> pl.Tensor[[4, 16384], FP32]:
        m: pl.Tensor[[4, 1], FP32] = pl.tensor.row_max(x)
        d: pl.Tensor[[4, 16384], FP32] = pl.tensor.row_expand_sub(x, m)
        y1: pl.Tensor[[4, 16384], FP32] = pl.tensor.assemble(y, d, [0, 0])
        return y1


@pl.program
class HugeRowExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4, 16384], FP32], y: pl.Out[pl.Tensor[[4, 16384], FP32]]) -> pl.Tensor[[4, 16384], FP32]:
        # one 64 KiB row, its row_max scratch and a second copy of the load exceed Vec (184 KiB):
        # 2048 columns per block (4 rows x 8 KiB x 3 = 96 KiB; 4096 would need 192 KiB)
        for i, (y_it,) in pl.range(0, 4, 4, init_values=(y,)):
            # pass 1: the row max, the first block peeled, the others combined with maximum
            x_blk: pl.Tensor[[4, 2048], FP32] = pl.tensor.slice(x, [4, 2048], [i, 0])
            m: pl.Tensor[[4, 1], FP32] = pl.tensor.row_max(x_blk)
            for j, (m_it,) in pl.range(2048, 16384, 2048, init_values=(m,)):
                x_blk_1: pl.Tensor[[4, 2048], FP32] = pl.tensor.slice(x, [4, 2048], [i, j])
                m_1: pl.Tensor[[4, 1], FP32] = pl.tensor.row_max(x_blk_1)
                m_acc: pl.Tensor[[4, 1], FP32] = pl.tensor.maximum(m_it, m_1)
                m_rv: pl.Tensor[[4, 1], FP32] = pl.yield_(m_acc)
            # pass 2: the stores, x loaded again per block
            for j_1, (y_it_it,) in pl.range(0, 16384, 2048, init_values=(y_it,)):
                x_blk_2: pl.Tensor[[4, 2048], FP32] = pl.tensor.slice(x, [4, 2048], [i, j_1])
                d: pl.Tensor[[4, 2048], FP32] = pl.tensor.row_expand_sub(x_blk_2, m_rv)
                y1: pl.Tensor[[4, 16384], FP32] = pl.tensor.assemble(y_it_it, d, [i, j_1])
                y_it_rv: pl.Tensor[[4, 16384], FP32] = pl.yield_(y1)
            y_rv: pl.Tensor[[4, 16384], FP32] = pl.yield_(y_it_rv)
        return y_rv


def test_a_row_max_over_rows_too_long_for_a_block_is_accumulated_over_column_blocks():
    ir.assert_structural_equal(blocked(HugeRow), HugeRowExpected)


@pl.program
class RmsLong:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[20, 30000], FP32], y: pl.Out[pl.Tensor[[20, 30000], FP32]]) -> pl.Tensor[[20, 30000], FP32]:
        sq: pl.Tensor[[20, 30000], FP32] = pl.tensor.mul(x, x)
        s: pl.Tensor[[20, 1], FP32] = pl.tensor.row_sum(sq)
        ms: pl.Tensor[[20, 1], FP32] = pl.tensor.muls(s, 0.5)
        inv: pl.Tensor[[20, 1], FP32] = pl.tensor.rsqrt(ms)
        n: pl.Tensor[[20, 30000], FP32] = pl.tensor.row_expand_mul(x, inv)
        y1: pl.Tensor[[20, 30000], FP32] = pl.tensor.assemble(y, n, [0, 0])
        return y1


V = pl.TensorView


@pl.program
class RmsLongExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[20, 30000], FP32], y: pl.Out[pl.Tensor[[20, 30000], FP32]]) -> pl.Tensor[[20, 30000], FP32]:
        # 8 rows of 1024 columns (x, x*x in place, the scratch, a second copy of x: 96 KiB); 20 rows
        # and 30000 columns leave partial tails in both dimensions
        for i, (y_it,) in pl.range(0, 20, 8, init_values=(y,)):
            rows_valid: pl.INDEX = pl.min(8, 20 - i)
            x_blk: pl.Tensor[[8, 1024], FP32, V(valid_shape=[rows_valid, 1024])] = \
                pl.tensor.slice(x, [8, 1024], [i, 0], [rows_valid, 1024])   # the first block is whole
            sq: pl.Tensor[[8, 1024], FP32, V(valid_shape=[rows_valid, 1024])] = pl.tensor.mul(x_blk, x_blk)
            s: pl.Tensor[[8, 1], FP32, V(valid_shape=[rows_valid, 1])] = pl.tensor.row_sum(sq)
            for j, (s_it,) in pl.range(1024, 30000, 1024, init_values=(s,)):
                cols_valid: pl.INDEX = pl.min(1024, 30000 - j)
                x_blk_1: pl.Tensor[[8, 1024], FP32, V(valid_shape=[rows_valid, cols_valid])] = \
                    pl.tensor.slice(x, [8, 1024], [i, j], [rows_valid, cols_valid])
                sq_1: pl.Tensor[[8, 1024], FP32, V(valid_shape=[rows_valid, cols_valid])] = \
                    pl.tensor.mul(x_blk_1, x_blk_1)
                s_1: pl.Tensor[[8, 1], FP32, V(valid_shape=[rows_valid, 1])] = pl.tensor.row_sum(sq_1)
                s_acc: pl.Tensor[[8, 1], FP32, V(valid_shape=[rows_valid, 1])] = pl.tensor.add(s_it, s_1)
                s_rv: pl.Tensor[[8, 1], FP32, V(valid_shape=[rows_valid, 1])] = pl.yield_(s_acc)
            # [R, 1] statements: once per row block, between the passes
            ms: pl.Tensor[[8, 1], FP32, V(valid_shape=[rows_valid, 1])] = pl.tensor.muls(s_rv, 0.5)
            inv: pl.Tensor[[8, 1], FP32, V(valid_shape=[rows_valid, 1])] = pl.tensor.rsqrt(ms)
            for j_1, (y_it_it,) in pl.range(0, 30000, 1024, init_values=(y_it,)):
                cols_valid_1: pl.INDEX = pl.min(1024, 30000 - j_1)
                x_blk_2: pl.Tensor[[8, 1024], FP32, V(valid_shape=[rows_valid, cols_valid_1])] = \
                    pl.tensor.slice(x, [8, 1024], [i, j_1], [rows_valid, cols_valid_1])
                n: pl.Tensor[[8, 1024], FP32, V(valid_shape=[rows_valid, cols_valid_1])] = \
                    pl.tensor.row_expand_mul(x_blk_2, inv)
                y1: pl.Tensor[[20, 30000], FP32] = pl.tensor.assemble(y_it_it, n, [i, j_1])
                y_it_rv: pl.Tensor[[20, 30000], FP32] = pl.yield_(y1)
            y_rv: pl.Tensor[[20, 30000], FP32] = pl.yield_(y_it_rv)
        return y_rv


def test_row_level_statements_run_once_per_row_block_between_the_passes():
    ir.assert_structural_equal(blocked(RmsLong), RmsLongExpected)


@pl.program
class HugeArgmax:
    """argmax positions do not combine across column blocks: left as written."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4, 16384], FP32],
          y: pl.Out[pl.Tensor[[4, 1], pl.INT32]]) -> pl.Tensor[[4, 1], pl.INT32]:
        m: pl.Tensor[[4, 1], pl.INT32] = pl.tensor.row_argmax(x)
        y1: pl.Tensor[[4, 1], pl.INT32] = pl.tensor.assemble(y, m, [0, 0])
        return y1


def test_an_argmax_over_a_too_long_row_is_left_as_written():
    assert ir.structural_equal(blocked(HugeArgmax), HugeArgmax)


# ---- numerics -----------------------------------------------------------------------------------
PLATFORMS = ["a2a3sim", "a5sim"]
DTYPES = {torch.float32: pl.FP32, torch.float16: pl.FP16, torch.bfloat16: pl.BF16}
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
LONG = [(3, 100000), (20, 20011), (1, 65537), (37, 10007)]


@pl.jit
def softmax(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(pl.row_expand_sub(x, pl.row_max(x)))
        y[:] = pl.row_expand_div(e, pl.row_sum(e))
    return y


@pl.jit
def row_stats(x: pl.Tensor, lo: pl.Out[pl.Tensor], hi: pl.Out[pl.Tensor], total: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lo[:] = pl.row_min(x)
        hi[:] = pl.row_max(x)
        total[:] = pl.row_sum(x)
    return lo, hi, total


def _norm(cols: int, dtype, kind: str):
    """LayerNorm (two passes: mean, then the variance of x - mean) or RMSNorm of `cols` columns,
    FP32 inside, the result in `dtype`."""
    inv, out = 1.0 / cols, DTYPES[dtype]

    if kind == "layernorm":
        @pl.jit
        def layernorm(x: pl.Tensor, gamma: pl.Tensor, y: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):
                xf = pl.cast(x, pl.FP32)
                c = pl.row_expand_sub(xf, pl.muls(pl.row_sum(xf), inv))
                var = pl.muls(pl.row_sum(pl.mul(c, c)), inv)
                y[:] = pl.cast(pl.col_expand_mul(pl.row_expand_mul(c, pl.rsqrt(pl.adds(var, 1e-5))), gamma), out)
            return y
        return layernorm

    @pl.jit
    def rmsnorm(x: pl.Tensor, gamma: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            xf = pl.cast(x, pl.FP32)
            r = pl.rsqrt(pl.adds(pl.muls(pl.row_sum(pl.mul(xf, xf)), inv), 1e-6))
            y[:] = pl.cast(pl.col_expand_mul(pl.row_expand_mul(xf, r), gamma), out)
        return y
    return rmsnorm


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", list(DTYPES), ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("shape", LONG, ids=[f"{r}x{c}" for r, c in LONG])
def test_a_softmax_over_very_long_rows_matches_torch(shape, dtype, platform):
    torch.manual_seed(shape[1])
    x = (torch.randn(shape) * 4).to(dtype)
    y = torch.full(shape, float("nan"), dtype=dtype)
    softmax(x, y, config=RunConfig(platform=platform))
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), rtol=TOL[dtype] * 5, atol=TOL[dtype] / 100)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("dtype", list(DTYPES), ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("shape", [(3, 100000), (13, 30011)], ids=["3x100000", "13x30011"])
def test_a_norm_over_very_long_rows_matches_torch(shape, dtype, kind, platform):
    torch.manual_seed(shape[0])
    x = (torch.randn(shape) * 2 + 3).to(dtype)    # an offset: a one-pass variance would lose digits
    gamma = torch.rand(1, shape[1]) + 0.5
    y = torch.full(shape, float("nan"), dtype=dtype)
    _norm(shape[1], dtype, kind)(x, gamma, y, config=RunConfig(platform=platform))
    xf = x.float()
    if kind == "layernorm":
        want = torch.nn.functional.layer_norm(xf, (shape[1],), eps=1e-5) * gamma
    else:
        want = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * gamma
    torch.testing.assert_close(y.float(), want.to(dtype).float(), rtol=TOL[dtype] * 2, atol=TOL[dtype] * 2)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_min_max_and_sum_of_very_long_rows_combine_across_blocks(platform):
    torch.manual_seed(1)
    x = torch.randn(5, 100003)
    x[2, 100002] = 50.0                          # the extremes in the last, partial column block
    x[4, 100001] = -50.0
    lo, hi, total = (torch.full((5, 1), float("nan")) for _ in range(3))
    row_stats(x, lo, hi, total, config=RunConfig(platform=platform))
    torch.testing.assert_close(lo, x.amin(-1, keepdim=True), rtol=0, atol=0)
    torch.testing.assert_close(hi, x.amax(-1, keepdim=True), rtol=0, atol=0)
    torch.testing.assert_close(total, x.sum(-1, keepdim=True, dtype=torch.float64).float(), rtol=1e-4, atol=1e-3)
