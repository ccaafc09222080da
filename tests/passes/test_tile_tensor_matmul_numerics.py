"""Tensor-level pl.matmul of any size runs without hand tiling (issue 11): TileTensorBlocks blocks
M, N and K (tile_tensor_matmul) and fuses user K loops into matmul_acc; checked against torch on
both backends, FP16 / BF16 / FP32 operands, sizes that are not multiples of the blocks."""

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]
DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}


@pl.jit
def mm(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b)
    return c


@pl.jit
def mm_trans(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b, a_trans=True, b_trans=True)
    return c


@pl.jit
def mm_half(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(a, b, out_dtype=pl.FP16)
    return c


@pl.jit
def linear(x: pl.Tensor, w: pl.Tensor, bias: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.cast(pl.relu(pl.matmul_bias(x, w, bias)), pl.FP16)
    return y


def _operands(m, k, n, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    a = (torch.randn(m, k, generator=g) / k ** 0.5).to(dtype)
    b = torch.randn(k, n, generator=g).to(dtype)
    return a, b


def _close(got, want, dtype):
    tol = 1e-4 if dtype is torch.float32 else 2e-3
    torch.testing.assert_close(got.float(), want.float(), rtol=tol, atol=tol)


SHAPES = [(256, 256, 256), (97, 1000, 130), (300, 40, 513)]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
def test_a_matmul_of_any_size_matches_torch(shape, dtype, platform):
    m, k, n = shape
    a, b = _operands(m, k, n, DTYPES[dtype], sum(shape))
    c = torch.full((m, n), float("nan"))
    mm(a, b, c, config=RunConfig(platform=platform))
    _close(c, a.float() @ b.float(), DTYPES[dtype])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_transposed_operands(platform):
    a, b = _operands(300, 200, 170, torch.float16, 1)
    at, bt = a.T.contiguous(), b.T.contiguous()        # stored as [K, M] and [N, K]
    c = torch.empty(300, 170)
    mm_trans(at, bt, c, config=RunConfig(platform=platform))
    _close(c, a.float() @ b.float(), torch.float16)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_out_dtype_is_cast_once_after_the_k_loop(platform):
    a, b = _operands(200, 700, 300, torch.float16, 2)
    c = torch.empty(200, 300, dtype=torch.float16)
    mm_half(a, b, c, config=RunConfig(platform=platform))
    torch.testing.assert_close(c, (a.float() @ b.float()).half(), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_linear_layer_with_bias_and_an_epilogue(platform):
    x, w = _operands(260, 512, 300, torch.float16, 3)
    bias = torch.randn(1, 300)
    y = torch.empty(260, 300, dtype=torch.float16)
    linear(x, w, bias, y, config=RunConfig(platform=platform))
    torch.testing.assert_close(y, torch.relu(x.float() @ w.float() + bias).half(), rtol=2e-3, atol=2e-3)


K = 320


@pl.jit
def k_loop(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.matmul(a[:, 0:64], b[0:64, :])
        for k in pl.range(64, K, 64):
            acc = acc + pl.matmul(a[:, k:k + 64], b[k:k + 64, :])
        c[:] = acc
    return c


def _after_tile_tensor_blocks(program):
    from pypto.ir.printer import python_print
    from pypto.passes.base import PassContext
    from pypto.passes.manager import PassManager
    from pypto.passes.pipeline import DEFAULT_PIPELINE

    upto = [p.__name__ for p in DEFAULT_PIPELINE].index("TileTensorBlocks") + 1
    return python_print(PassManager([p() for p in DEFAULT_PIPELINE[:upto]]).run(program, PassContext()))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_user_k_loop_is_fused_into_matmul_acc(platform):
    a, b = _operands(64, K, 96, torch.float16, 4)
    c = torch.empty(64, 96)
    k_loop(a, b, c, config=RunConfig(platform=platform))
    _close(c, a.float() @ b.float(), torch.float16)
    text = _after_tile_tensor_blocks(k_loop.specialize(a, b, c))
    assert "pl.tensor.matmul_acc(" in text and "pl.tensor.add(" not in text
