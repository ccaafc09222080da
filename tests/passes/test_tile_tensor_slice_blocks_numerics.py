"""Slices of values computed in a tensor-level region too large for one core (issue 11): the slice
moves onto the region's inputs (push_slices) and the region is blocked (TileTensorBlocks); checked
against torch on both backends, with 2048-row inputs and slices at offsets that are not multiples
of any block."""

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]


@pl.jit
def exp_window(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(pl.add(pl.mul(a, 0.5), b))
        y[:] = pl.slice(e, [1000, 1000], [37, 5])
    return y


@pl.jit
def matmul_window(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c = pl.matmul(a, b)
        y[:] = c[100:1100, 8:1000]
    return y


@pl.jit
def scaled_rows(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        s = pl.row_sum(pl.exp(a))
        e = pl.row_expand_mul(pl.add(a, b), s)
        y[:] = e[37:1037, :]
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_a_window_of_an_elementwise_chain_with_a_broadcast(dtype, platform):
    torch.manual_seed(0)
    a, b = torch.randn(2048, 1024).to(dtype), torch.randn(1, 1024).to(dtype)
    y = torch.full((1000, 1000), float("nan")).to(dtype)
    exp_window(a, b, y, config=RunConfig(platform=platform))
    ref = torch.exp(a.float() * 0.5 + b.float())[37:1037, 5:1005]
    # FP16: each op rounds to FP16, and exp scales the rounding of its argument (|x| up to ~5)
    rtol, atol = (1e-5, 1e-5) if dtype is torch.float32 else (8e-3, 2e-3)
    torch.testing.assert_close(y.float(), ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_window_of_a_matmul_result(platform):
    torch.manual_seed(1)
    a, b = torch.randn(2048, 256).half(), (torch.randn(256, 1024) / 10).half()
    y = torch.full((1000, 992), float("nan"))
    matmul_window(a, b, y, config=RunConfig(platform=platform))
    torch.testing.assert_close(y, (a.float() @ b.float())[100:1100, 8:1000], rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_rows_of_a_chain_with_a_row_reduction(platform):
    torch.manual_seed(2)
    a, b = torch.randn(2048, 1024) / 4, torch.randn(1, 1024)
    y = torch.full((1000, 1024), float("nan"))
    scaled_rows(a, b, y, config=RunConfig(platform=platform))
    ref = ((a + b) * torch.exp(a).sum(1, keepdim=True))[37:1037]
    torch.testing.assert_close(y, ref, rtol=1e-4, atol=1e-3)
