"""A linear layer written at the tensor level: y = relu(x @ w + bias), FP16 in and out, one
expression; no tile, load, store, K loop or cube/vector split in the source (compare
examples/fused_linear.py, the same layer by hand). The compiler blocks the matmul over M, N and K
(matmul + matmul_acc on the cube unit, the bias in the first K block) and runs the relu and the
cast on each output block, one task per block.

    python examples/tensor_linear.py
"""

import torch
from _check import check

import pypto.language as pl

M, K, N = 1000, 1024, 768      # M is not a multiple of the block: the last row block is partial


@pl.jit
def linear(x: pl.Tensor[[M, K], pl.FP16], w: pl.Tensor[[K, N], pl.FP16], bias: pl.Tensor[[1, N], pl.FP32],
           y: pl.Out[pl.Tensor[[M, N], pl.FP16]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.cast(pl.relu(pl.matmul_bias(x, w, bias)), pl.FP16)
    return y


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(M, K).half()
    w = (torch.randn(K, N) / K ** 0.5).half()
    bias = torch.randn(1, N)
    y = torch.empty(M, N, dtype=torch.float16)
    linear(x, w, bias, y)
    check(f"tensor-level linear relu(x @ w + b) ({M}x{K} @ {K}x{N} fp16)", y,
          torch.relu(x.float() @ w.float() + bias).half(), rtol=2e-3, atol=2e-3)


if __name__ == "__main__":
    main()
