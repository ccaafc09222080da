"""RMSNorm followed by a matmul, written at the tensor level: no tile, load, store or block loop
in the source (issue 11 "done when"). The row count M is dynamic, so one compile serves every M;
the compiler (TileTensorBlocks) blocks both regions for the chip:

- the RMSNorm region runs as one task per block of 8 rows; 8 rows of 4096 FP32 do not fit Vec, so
  each task makes two passes over [8, 512] column blocks (the sum of squares accumulated across
  the blocks, then the scaling and the stores);
- the matmul region runs as one task per [128, 256] output block with a K loop of matmul_acc on
  the cube unit.

    python examples/tensor_rmsnorm_matmul.py
"""

import torch
from _check import check

import pypto.language as pl

M = pl.dynamic("M")          # rows: known at run time only
H, N = 4096, 512             # hidden size, output features
EPS = 1e-6


@pl.jit
def rmsnorm_matmul(x: pl.Tensor[[M, H], pl.FP16], gamma: pl.Tensor[[1, H], pl.FP16],
                   w: pl.Tensor[[H, N], pl.FP16], y: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
    xn = pl.create_tensor([M, H], dtype=pl.FP16)
    with pl.at(level=pl.Level.CORE_GROUP):
        xf = pl.cast(x, pl.FP32)
        inv = pl.rsqrt(pl.adds(pl.muls(pl.row_sum(pl.mul(xf, xf)), 1.0 / H), EPS))
        normed = pl.col_expand_mul(pl.row_expand_mul(xf, inv), pl.cast(gamma, pl.FP32))
        xn = pl.assemble(xn, pl.cast(normed, pl.FP16), [0, 0])
    with pl.at(level=pl.Level.CORE_GROUP):
        y = pl.assemble(y, pl.matmul(xn, w), [0, 0])
    return y


def reference(x: torch.Tensor, gamma: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """The same math in torch (FP32 inside, the normalised rows rounded to FP16 as the kernel does)."""
    xf = x.float()
    xn = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * gamma.float()).half()
    return xn.float() @ w.float()


def main(rows: int = 2048) -> None:
    torch.manual_seed(0)
    x = torch.randn(rows, H).half()
    gamma = (torch.rand(1, H) + 0.5).half()
    w = (torch.randn(H, N) / H ** 0.5).half()
    y = torch.empty(rows, N)
    rmsnorm_matmul(x, gamma, w, y)
    check(f"tensor-level RMSNorm + matmul ({rows}x{H} @ {H}x{N}, fp16, dynamic rows)", y,
          reference(x, gamma, w), rtol=2e-3, atol=2e-3)


if __name__ == "__main__":
    main()
