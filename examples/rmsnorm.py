"""RMSNorm at tile level: y = x * rsqrt(mean(x^2) + eps) * w, FP16 in and out, FP32 inside.

Rows are processed in blocks of 16; the last block of the 100 rows is a partial tile
(load with valid_shape), so the reduction, the casts and the store all work on its valid rows only.

    python examples/rmsnorm.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir

M, N, ROWS = 100, 256, 16
BLOCKS = (M + ROWS - 1) // ROWS
EPS = 1e-6


@pl.program
class RMSNorm:
    @pl.function(type=pl.FunctionType.InCore)
    def rmsnorm_kernel(self, x: pl.Tensor[[M, N], pl.FP16], w: pl.Tensor[[1, N], pl.FP16],
                       y: pl.Out[pl.Tensor[[M, N], pl.FP16]]):
        weight = pl.cast(pl.load(w, [0, 0], [1, N]), pl.FP32)
        scratch = pl.create_tile([ROWS, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        for b in pl.range(BLOCKS):
            rows = pl.min(ROWS, M - b * ROWS)
            xb = pl.cast(pl.load(x, [b * ROWS, 0], [ROWS, N], valid_shape=[rows, N]), pl.FP32)
            sq = pl.mul(xb, xb)
            ss = pl.row_sum(sq, scratch)                 # [ROWS, 1], valid [rows, 1]
            inv = pl.rsqrt(pl.adds(pl.muls(ss, 1.0 / N), EPS))
            normed = pl.row_expand_mul(xb, inv)
            out = pl.col_expand_mul(normed, weight)
            y = pl.store(pl.cast(out, pl.FP16), [b * ROWS, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP16], w: pl.Tensor[[1, N], pl.FP16],
             y: pl.Out[pl.Tensor[[M, N], pl.FP16]]):
        self.rmsnorm_kernel(x, w, y)


def main() -> None:
    torch.manual_seed(0)
    x = (torch.randn(M, N) * 2).half()
    w = (torch.rand(1, N) + 0.5).half()
    y = torch.empty(M, N, dtype=torch.float16)
    ir.compile(RMSNorm)(x, w, y)
    xf = x.float()
    expected = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).half()
    check("RMSNorm (100x256 fp16, 16-row blocks, partial tail)", y, expected, rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
