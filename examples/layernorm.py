"""LayerNorm at tensor level with @pl.jit: the compiler loads, lowers and stores.

    y = (x - mean(x)) * rsqrt(var(x) + eps) * gamma + beta      (per row; gamma, beta are [1, N])

Row statistics come from `row_sum` (the lowering allocates its scratch tile), the row-wise
broadcasts from `row_expand_sub` / `row_expand_mul`, the per-column affine part from
`col_expand_mul` / `col_expand_add`.

    python examples/layernorm.py
"""

import torch
from _check import check

import pypto.language as pl

M, N = 64, 128
EPS = 1e-5


@pl.jit
def layernorm(x: pl.Tensor, gamma: pl.Tensor, beta: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        mean = pl.muls(pl.row_sum(x), 1.0 / N)
        xc = pl.row_expand_sub(x, mean)
        var = pl.muls(pl.row_sum(pl.mul(xc, xc)), 1.0 / N)
        inv = pl.rsqrt(pl.adds(var, EPS))
        normed = pl.row_expand_mul(xc, inv)
        y[:] = pl.col_expand_add(pl.col_expand_mul(normed, gamma), beta)
    return y


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(M, N) * 3 + 1
    gamma, beta = torch.rand(1, N) + 0.5, torch.randn(1, N)
    y = torch.empty(M, N)
    layernorm(x, gamma, beta, y)
    expected = torch.nn.functional.layer_norm(x, (N,), gamma[0], beta[0], eps=EPS)
    check("LayerNorm (64x128 fp32, tensor level)", y, expected, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    main()
