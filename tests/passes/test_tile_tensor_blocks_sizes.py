"""Tensor-level programs of any size run without hand tiling (issue 11): TileTensorBlocks in the
Default pipeline, checked against torch on both backends, FP32 and FP16, sizes 1 to 1000 along
rows and columns (primes and non-multiples of the block give partial tail blocks)."""

import pytest
import torch

import pypto.language as pl
from pypto.runtime import RunConfig

PLATFORMS = ["a2a3sim", "a5sim"]
SHAPES = [(1, 1000), (7, 1000), (64, 1000), (97, 256), (256, 256), (1000, 1), (1000, 7), (1000, 64),
          (1000, 97), (256, 1000)]
TOL = {torch.float32: 1e-5, torch.float16: 2e-3}


@pl.jit
def chain(a: pl.Tensor, b: pl.Tensor, v: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y = pl.add(pl.mul(a, 0.5), b)                    # scalar + elementwise
        z = pl.row_expand_mul(pl.relu(y), v)             # activation + broadcast of an [R, 1] tensor
        c[:] = pl.exp(pl.neg(z))
    return c


@pl.jit
def widen(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.cast(pl.sub(a, b), pl.FP32)           # FP16 in, FP32 out
    return c


@pl.jit
def softmax(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        m = pl.row_max(x)
        e = pl.exp(pl.row_expand_sub(x, m))
        y[:] = pl.row_expand_div(e, pl.row_sum(e))
    return y


def _cores(kernel, *args, config):
    """Distinct cores the last run of `kernel` placed its tasks on."""
    rec = kernel.compile(*args, config=config).last_run
    return {(t.core_type, t.core_index) for t in rec.tasks}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=[f"{r}x{c}" for r, c in SHAPES])
def test_an_elementwise_broadcast_chain_of_any_size_matches_torch(shape, dtype, platform):
    torch.manual_seed(shape[0] * 7 + shape[1])
    a, b = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    v = torch.rand(shape[0], 1, dtype=dtype)
    c = torch.full(shape, float("nan"), dtype=dtype)
    chain(a, b, v, c, config=RunConfig(platform=platform))
    want = torch.exp(-(torch.relu(a.float() * 0.5 + b.float()) * v.float()))
    torch.testing.assert_close(c.float(), want, rtol=TOL[dtype] * 5, atol=TOL[dtype] * 5)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("shape", [(97, 1000), (1000, 97)], ids=["97x1000", "1000x97"])
def test_a_cast_chain_is_tiled(shape, platform):
    a, b = torch.randn(shape, dtype=torch.float16), torch.randn(shape, dtype=torch.float16)
    c = torch.empty(shape, dtype=torch.float32)
    widen(a, b, c, config=RunConfig(platform=platform))
    torch.testing.assert_close(c, (a - b).float())


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("shape", [(1, 1000), (97, 1000), (1000, 97), (1000, 7), (256, 256)],
                         ids=["1x1000", "97x1000", "1000x97", "1000x7", "256x256"])
def test_a_softmax_of_any_row_count_matches_torch(shape, dtype, platform):
    x = torch.randn(shape, dtype=dtype)
    y = torch.empty(shape, dtype=dtype)
    softmax(x, y, config=RunConfig(platform=platform))
    torch.testing.assert_close(y.float(), torch.softmax(x.float(), -1), rtol=TOL[dtype] * 5, atol=TOL[dtype] * 5)


def test_the_blocks_of_a_large_op_run_on_many_cores():
    cfg = RunConfig(platform="a2a3sim")
    a, b = torch.randn(1000, 256), torch.randn(1000, 256)
    v, c = torch.rand(1000, 1), torch.empty(1000, 256)
    chain(a, b, v, c, config=cfg)
    # lowered, a block keeps a_tile and b_tile (1 KiB per row each; the results are computed in
    # place, v's [rows, 1] tile reuses b's buffer): 92 rows fit Vec (184 KiB) -> 88 (a multiple of 8)
    # -> 12 blocks (the last one partial), each a parallel task on a core of its own
    assert len(chain.compile(a, b, v, c, config=cfg).last_run.tasks) == 12
    assert len(_cores(chain, a, b, v, c, config=cfg)) == 12
