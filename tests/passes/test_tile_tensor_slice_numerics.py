"""Values computed inside a tensor-level region can be sliced there (issue 11: `c = pl.matmul(a, b);
c[16:32, :]`, `pl.slice` of a computed value): the slice is a view of the value's tile; checked
against torch on both backends (FP16 and BF16 matmul operands, FP32 vector values)."""

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]


@pl.jit
def matmul_rows(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b)
        y[:] = c[16:32, :]
    return y


@pl.jit
def exp_block(a: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(pl.mul(a, 0.5))
        y[:] = pl.add(pl.slice(e, [16, 48], [8, 16]), 1.0)
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_rows_of_a_matmul_result_sliced_in_the_region(dtype, platform):
    torch.manual_seed(0)
    a, b = torch.randn(64, 96).to(dtype), (torch.randn(96, 80) / 10).to(dtype)
    y = torch.full((16, 80), float("nan"))
    matmul_rows(a, b, y, config=RunConfig(platform=platform))
    torch.testing.assert_close(y, (a.float() @ b.float())[16:32], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_block_of_a_vector_value_sliced_in_the_region(platform):
    torch.manual_seed(1)
    a = torch.randn(40, 72)
    y = torch.full((16, 48), float("nan"))
    exp_block(a, y, config=RunConfig(platform=platform))
    torch.testing.assert_close(y, torch.exp(a * 0.5)[8:24, 16:64] + 1.0, rtol=1e-5, atol=1e-6)
