"""A linear layer y = relu(x @ w + bias) split across a cube kernel and a vector kernel.

- `matmul_kernel` (AIC, cube unit): x [M, K] @ w [K, N] with K walked in blocks of 64; the first
  block starts the FP32 accumulator with `matmul`, the others add into it with `matmul_acc`
  (operands go DDR -> Mat -> Left/Right, the product lives in Acc); the result is stored to an
  intermediate DDR tensor `h`.
- `bias_relu_kernel` (AIV, vector unit): loads `h`, adds the bias row with `col_expand_add`,
  applies `relu`, casts to FP16 and stores `y`.
The orchestration creates `h`; the runtime orders the two tasks through it (written by the first,
read by the second).

    python examples/fused_linear.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir

M, K, N, KB = 64, 256, 64, 64


@pl.program
class FusedLinear:
    @pl.function(type=pl.FunctionType.InCore)
    def matmul_kernel(self, x: pl.Tensor[[M, K], pl.FP16], w: pl.Tensor[[K, N], pl.FP16],
                      h: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        xa = pl.move(pl.load(x, [0, 0], [M, KB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
        wb = pl.move(pl.load(w, [0, 0], [KB, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
        acc = pl.matmul(xa, wb)
        for k in pl.range(1, K // KB):
            xk = pl.move(pl.load(x, [0, k * KB], [M, KB], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            wk = pl.move(pl.load(w, [k * KB, 0], [KB, N], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            acc = pl.matmul_acc(acc, xk, wk)
        h = pl.store(acc, [0, 0], h)
        return h

    @pl.function(type=pl.FunctionType.InCore)
    def bias_relu_kernel(self, h: pl.Tensor[[M, N], pl.FP32], bias: pl.Tensor[[1, N], pl.FP32],
                         y: pl.Out[pl.Tensor[[M, N], pl.FP16]]) -> pl.Tensor[[M, N], pl.FP16]:
        t = pl.load(h, [0, 0], [M, N])
        b = pl.load(bias, [0, 0], [1, N])
        act = pl.relu(pl.col_expand_add(t, b))
        y = pl.store(pl.cast(act, pl.FP16), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, K], pl.FP16], w: pl.Tensor[[K, N], pl.FP16], bias: pl.Tensor[[1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[M, N], pl.FP16]]) -> pl.Tensor[[M, N], pl.FP16]:
        h = pl.create_tensor([M, N], dtype=pl.FP32)
        h = self.matmul_kernel(x, w, h)
        y = self.bias_relu_kernel(h, bias, y)
        return y


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(M, K).half()
    w = (torch.randn(K, N) / 16).half()
    bias = torch.randn(1, N)
    y = torch.empty(M, N, dtype=torch.float16)
    ir.compile(FusedLinear)(x, w, bias, y)
    expected = torch.relu(x.float() @ w.float() + bias).half()
    check("fused linear relu(x @ w + b): cube kernel + vector kernel (fp16, K=256)", y, expected,
          rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
