"""LayerNorm written at the tensor level: y = (x - mean) / sqrt(var + eps) * gamma + beta over the
rows of a [1024, 2048] FP16 tensor, FP32 inside; no tile, load or store in the source (compare
examples/layernorm.py, tiled by hand). The compiler blocks the rows (a row reduction keeps its rows
whole), one task per block.

    python examples/tensor_layernorm.py
"""

import torch
from _check import check

import pypto.language as pl

R, C = 1024, 2048
EPS = 1e-5


@pl.jit
def layernorm(x: pl.Tensor[[R, C], pl.FP16], gamma: pl.Tensor[[1, C], pl.FP32], beta: pl.Tensor[[1, C], pl.FP32],
              y: pl.Out[pl.Tensor[[R, C], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        xf = pl.cast(x, pl.FP32)
        centred = pl.row_expand_sub(xf, pl.muls(pl.row_sum(xf), 1.0 / C))
        var = pl.muls(pl.row_sum(pl.mul(centred, centred)), 1.0 / C)
        normed = pl.row_expand_mul(centred, pl.rsqrt(pl.adds(var, EPS)))
        y[:] = pl.cast(pl.col_expand_add(pl.col_expand_mul(normed, gamma), beta), pl.FP16)
    return y


def main() -> None:
    torch.manual_seed(0)
    x = (torch.randn(R, C) * 2 + 1).half()
    gamma, beta = torch.rand(1, C) + 0.5, torch.randn(1, C)
    y = torch.empty(R, C, dtype=torch.float16)
    layernorm(x, gamma, beta, y)
    want = torch.nn.functional.layer_norm(x.float(), (C,), eps=EPS) * gamma + beta
    check(f"tensor-level LayerNorm ({R}x{C} fp16)", y, want.half(), rtol=2e-3, atol=2e-3)


if __name__ == "__main__":
    main()
