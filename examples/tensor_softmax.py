"""Row softmax written at the tensor level: the whole [2048, 1024] tensor in one expression chain,
no tile, load or store in the source. The compiler (TileTensorBlocks) runs the chain per block of
whole rows, one task per block (compare examples/softmax.py, the same math tiled by hand).

    python examples/tensor_softmax.py
"""

import torch
from _check import check

import pypto.language as pl

R, C = 2048, 1024


@pl.jit
def softmax(x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(pl.row_expand_sub(x, pl.row_max(x)))
        y[:] = pl.row_expand_div(e, pl.row_sum(e))
    return y


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(R, C) * 4
    y = torch.empty(R, C)
    softmax(x, y)
    check(f"tensor-level row softmax ({R}x{C} fp32)", y, torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-6)


if __name__ == "__main__":
    main()
