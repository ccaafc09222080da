"""The Language Guide's matrix multiply: DDR → Mat → Left/Right → Acc → DDR, FP16 in, FP32 out.

    python examples/matmul.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir

M = K = N = 64


@pl.program
class Matmul:
    @pl.function(type=pl.FunctionType.InCore)
    def matmul_kernel(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
                      c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        a_l1 = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        a_l0a = pl.move(a_l1, target_memory=pl.Mem.Left)
        b_l0b = pl.move(b_l1, target_memory=pl.Mem.Right)
        c_acc = pl.matmul(a_l0a, b_l0b)
        out = pl.store(c_acc, [0, 0], c)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.matmul_kernel(a, b, c)
        return c


def main() -> None:
    torch.manual_seed(0)
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float32)
    ir.compile(Matmul)(a, b, c)
    check("matmul 64x64x64 (fp16 in, fp32 acc)", c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
