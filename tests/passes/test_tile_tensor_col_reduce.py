"""TileTensorBlocks, column reductions (issue 11): `col_sum` / `col_max` / `col_min` / `col_prod` of
a chain too large for one core become column blocks (parallel tasks) each accumulating its partial
result over row blocks on chip; checked as IR (Before/Expected) and against torch (FP32/FP16/BF16,
both backends, 1 row to 2048 x 4096, primes, a dynamic row count served by one compile)."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.passes.base import PassContext
from pypto.passes.tile_tensor_blocks import TileTensorBlocks
from pypto.runtime import RunConfig

FP32 = pl.FP32
V = pl.TensorView


def blocked(program, backend=BackendType.Ascend910B):
    return TileTensorBlocks().run(program, PassContext(backend_type=backend))


@pl.program
class ColSum:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[300, 4100], FP32], y: pl.Out[pl.Tensor[[1, 4100], FP32]]) -> pl.Tensor[[1, 4100], FP32]:
        sq: pl.Tensor[[300, 4100], FP32] = pl.tensor.mul(x, x)
        s: pl.Tensor[[1, 4100], FP32] = pl.tensor.col_sum(sq)
        r: pl.Tensor[[1, 4100], FP32] = pl.tensor.muls(s, 0.5)
        y1: pl.Tensor[[1, 4100], FP32] = pl.tensor.assemble(y, r, [0, 0])
        return y1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[300, 4100], FP32], y: pl.Out[pl.Tensor[[1, 4100], FP32]]) -> pl.Tensor[[1, 4100], FP32]:
        y1: pl.Tensor[[1, 4100], FP32] = self.k(x, y)
        return y1


@pl.program
class ColSumExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[300, 4100], FP32], y: pl.Out[pl.Tensor[[1, 4100], FP32]],
          j: pl.Scalar[pl.INDEX]) -> pl.Tensor[[1, 4100], FP32]:
        # one column block per task; 8 rows of 1024 columns (x, x*x in place, the col_sum scratch, a
        # second copy of x: 96 KiB; 16 rows would need 192 KiB of the 184 KiB Vec)
        cols_valid: pl.INDEX = pl.min(1024, 4100 - j)
        # the first row block, peeled
        x_blk: pl.Tensor[[8, 1024], FP32, V(valid_shape=[8, cols_valid])] = \
            pl.tensor.slice(x, [8, 1024], [0, j], [8, cols_valid])
        sq: pl.Tensor[[8, 1024], FP32, V(valid_shape=[8, cols_valid])] = pl.tensor.mul(x_blk, x_blk)
        s: pl.Tensor[[1, 1024], FP32, V(valid_shape=[1, cols_valid])] = pl.tensor.col_sum(sq)
        # the other row blocks, added into the partial sum on chip; 300 rows: a partial last block
        for i, (s_it,) in pl.range(8, 300, 8, init_values=(s,)):
            rows_valid: pl.INDEX = pl.min(8, 300 - i)
            x_blk_1: pl.Tensor[[8, 1024], FP32, V(valid_shape=[rows_valid, cols_valid])] = \
                pl.tensor.slice(x, [8, 1024], [i, j], [rows_valid, cols_valid])
            sq_1: pl.Tensor[[8, 1024], FP32, V(valid_shape=[rows_valid, cols_valid])] = pl.tensor.mul(x_blk_1, x_blk_1)
            s_1: pl.Tensor[[1, 1024], FP32, V(valid_shape=[1, cols_valid])] = pl.tensor.col_sum(sq_1)
            s_acc: pl.Tensor[[1, 1024], FP32, V(valid_shape=[1, cols_valid])] = pl.tensor.add(s_it, s_1)
            s_rv: pl.Tensor[[1, 1024], FP32, V(valid_shape=[1, cols_valid])] = pl.yield_(s_acc)
        # [1, C] statements once per column block, then one store
        r: pl.Tensor[[1, 1024], FP32, V(valid_shape=[1, cols_valid])] = pl.tensor.muls(s_rv, 0.5)
        y1: pl.Tensor[[1, 4100], FP32] = pl.tensor.assemble(y, r, [0, j])
        return y1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[300, 4100], FP32], y: pl.Out[pl.Tensor[[1, 4100], FP32]]) -> pl.Tensor[[1, 4100], FP32]:
        for j, (y_it,) in pl.parallel(0, 4100, 1024, init_values=(y,)):
            y1_blk: pl.Tensor[[1, 4100], FP32] = self.k(x, y_it, j)
            y1: pl.Tensor[[1, 4100], FP32] = pl.yield_(y1_blk)
        return y1


def test_a_column_sum_is_column_blocks_accumulating_over_row_blocks():
    ir.assert_structural_equal(blocked(ColSum), ColSumExpected)


@pl.program
class ColArgmax:
    """argmax positions do not combine across row blocks: left as written."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[300, 4100], FP32],
          y: pl.Out[pl.Tensor[[1, 4100], pl.INT32]]) -> pl.Tensor[[1, 4100], pl.INT32]:
        m: pl.Tensor[[1, 4100], pl.INT32] = pl.tensor.col_argmax(x)
        y1: pl.Tensor[[1, 4100], pl.INT32] = pl.tensor.assemble(y, m, [0, 0])
        return y1


def test_a_column_argmax_is_left_as_written():
    assert ir.structural_equal(blocked(ColArgmax), ColArgmax)


@pl.program
class ColSumAndWide:
    """a wide value stored beside a column sum would need a second pass: left as written."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[300, 4100], FP32], y: pl.Out[pl.Tensor[[300, 4100], FP32]],
          z: pl.Out[pl.Tensor[[1, 4100], FP32]]) -> tuple[pl.Tensor[[300, 4100], FP32], pl.Tensor[[1, 4100], FP32]]:
        d: pl.Tensor[[300, 4100], FP32] = pl.tensor.muls(x, 2.0)
        s: pl.Tensor[[1, 4100], FP32] = pl.tensor.col_sum(x)
        y1: pl.Tensor[[300, 4100], FP32] = pl.tensor.assemble(y, d, [0, 0])
        z1: pl.Tensor[[1, 4100], FP32] = pl.tensor.assemble(z, s, [0, 0])
        return y1, z1


def test_a_wide_store_beside_a_column_sum_is_left_as_written():
    assert ir.structural_equal(blocked(ColSumAndWide), ColSumAndWide)


# ---- numerics -----------------------------------------------------------------------------------
PLATFORMS = ["a2a3sim", "a5sim"]
DTYPES = {torch.float32: pl.FP32, torch.float16: pl.FP16, torch.bfloat16: pl.BF16}
TOL = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}
SHAPES = [(1, 70001), (4099, 7), (1009, 1031), (300, 4100), (2048, 4096)]


@pl.jit
def col_stats(x: pl.Tensor, lo: pl.Out[pl.Tensor], hi: pl.Out[pl.Tensor], total: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        lo[:] = pl.col_min(x)
        hi[:] = pl.col_max(x)
        total[:] = pl.col_sum(pl.cast(x, pl.FP32))
    return lo, hi, total


@pl.jit
def col_sum_of_squares(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        xf = pl.cast(x, pl.FP32)
        y[:] = pl.col_sum(pl.mul(xf, xf))
    return y


@pl.jit
def col_prod(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.col_prod(x)
    return y


def _rand(shape, dtype):
    return (torch.randn(shape) * 3).to(dtype)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", list(DTYPES), ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{r}x{c}" for r, c in SHAPES])
def test_column_min_max_and_sum_match_torch(shape, dtype, platform):
    torch.manual_seed(shape[0] + shape[1])
    x = _rand(shape, dtype)
    x[-1, -1] = 100.0                                # the extremes in the last, partial row block
    x[-1, 0] = -100.0
    C = shape[1]
    lo, hi = (torch.full((1, C), float("nan"), dtype=dtype) for _ in range(2))
    total = torch.full((1, C), float("nan"))
    col_stats(x, lo, hi, total, config=RunConfig(platform=platform))
    torch.testing.assert_close(lo, x.amin(0, keepdim=True), rtol=0, atol=0)
    torch.testing.assert_close(hi, x.amax(0, keepdim=True), rtol=0, atol=0)
    want = x.double().sum(0, keepdim=True)
    torch.testing.assert_close(total.double(), want, rtol=1e-4, atol=1e-3 * shape[0] ** 0.5)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", list(DTYPES), ids=["fp32", "fp16", "bf16"])
def test_a_column_sum_of_squares_over_2048x4096_matches_torch(dtype, platform):
    torch.manual_seed(7)
    x = _rand((2048, 4096), dtype)
    y = torch.full((1, 4096), float("nan"))
    cfg = RunConfig(platform=platform)
    col_sum_of_squares(x, y, config=cfg)
    xf = x.double()
    torch.testing.assert_close(y.double(), (xf * xf).sum(0, keepdim=True), rtol=1e-4, atol=1e-2)
    tasks = col_sum_of_squares.compile(x, y, config=cfg).last_run.tasks
    assert len(tasks) == 4                    # 4096 columns in blocks of 1024: one task each


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_column_product_combines_across_row_blocks(platform):
    torch.manual_seed(3)
    x = 1 + (torch.rand(1009, 4100) - 0.5) / 100        # products near 1, no overflow
    y = torch.full((1, 4100), float("nan"))
    col_prod(x, y, config=RunConfig(platform=platform))
    torch.testing.assert_close(y.double(), x.double().prod(0, keepdim=True), rtol=1e-4, atol=0)


M = pl.dynamic("M")


@pl.jit
def col_max_dyn(x: pl.Tensor[[M, 4096], pl.FP16], y: pl.Out[pl.Tensor[[1, 4096], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.col_max(pl.abs(x))
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_dynamic_row_count_is_served_by_one_compile(platform):
    col_max_dyn._cache.clear()
    cfg = RunConfig(platform=platform)
    for rows in (1, 2048, 1037):
        torch.manual_seed(rows)
        x = _rand((rows, 4096), torch.float16)
        y = torch.full((1, 4096), float("nan"), dtype=torch.float16)
        col_max_dyn(x, y, config=cfg)
        torch.testing.assert_close(y, x.abs().amax(0, keepdim=True), rtol=0, atol=0)
    assert len(col_max_dyn._cache) == 1
