"""Row softmax at tile level: row_max, row_expand_sub, exp, row_sum, row_expand_div.

The reductions write into scratch tiles made with pl.create_tile.

    python examples/softmax.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir

M, N = 64, 128


@pl.program
class RowSoftmax:
    @pl.function(type=pl.FunctionType.InCore)
    def softmax_kernel(self, x: pl.Tensor[[M, N], pl.FP32],
                       y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t: pl.Tile[[M, N], pl.FP32] = pl.load(x, [0, 0], [M, N])
        scratch: pl.Tile[[M, N], pl.FP32] = pl.create_tile([M, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        row_max: pl.Tile[[M, 1], pl.FP32] = pl.row_max(t, scratch)
        shifted: pl.Tile[[M, N], pl.FP32] = pl.row_expand_sub(t, row_max)
        e: pl.Tile[[M, N], pl.FP32] = pl.exp(shifted)
        row_sum: pl.Tile[[M, 1], pl.FP32] = pl.row_sum(e, scratch)
        out: pl.Tile[[M, N], pl.FP32] = pl.row_expand_div(e, row_sum)
        y = pl.store(out, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32],
             y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        y = self.softmax_kernel(x, y)
        return y


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(M, N) * 3
    y = torch.empty(M, N)
    ir.compile(RowSoftmax)(x, y)
    check("row softmax (64x128 fp32)", y, torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    main()
