"""A hand-written C++ kernel inside a PyPTO program: residual add (DSL) -> fused RMSNorm (C++)
-> gate (DSL), FP16 activations, checked against torch.

The RMSNorm kernel is `extern/rmsnorm.cpp` (with its local header `extern/rmsnorm_config.h`),
declared below by its Python signature only: `@pl.function(type=AIV, external_source=...)` with
a `...` body. The orchestration submits it like the DSL kernels — the simulator orders the three
tasks by the tensors they share — and, on the simulator, the C++ really runs: it is compiled with
the host C++ compiler (cached under ~/.cache/pypto/extern) and called on the task's tensors.
See docs/tools.md, "External C++ kernels".

    python examples/extern_rmsnorm.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir

M, N, ROWS = 100, 256, 16
BLOCKS = (M + ROWS - 1) // ROWS
EPS = 1e-6


@pl.program
class ResidualRMSNorm:
    @pl.function(type=pl.FunctionType.InCore)
    def residual_add(self, x: pl.Tensor[[M, N], pl.FP16], r: pl.Tensor[[M, N], pl.FP16],
                     h: pl.Out[pl.Tensor[[M, N], pl.FP16]]) -> pl.Tensor[[M, N], pl.FP16]:
        for b in pl.range(BLOCKS):
            rows = pl.min(ROWS, M - b * ROWS)
            xb = pl.load(x, [b * ROWS, 0], [ROWS, N], valid_shape=[rows, N])
            rb = pl.load(r, [b * ROWS, 0], [ROWS, N], valid_shape=[rows, N])
            h = pl.store(pl.add(xb, rb), [b * ROWS, 0], h)
        return h

    # The fused RMSNorm in C++: y = h * rsqrt(mean(h^2) + eps) * w. Its cost for the simulator's
    # clock: about one vector pass over h per step of the formula (5), 128 fp16 lanes per cycle.
    @pl.function(type=pl.FunctionType.AIV, external_source="extern/rmsnorm.cpp",
                 cost="5 * h.numel() // 128")
    def rmsnorm(self, h: pl.Tensor[[M, N], pl.FP16], w: pl.Tensor[[1, N], pl.FP16],
                y: pl.Out[pl.Tensor[[M, N], pl.FP16]], eps: pl.Scalar[pl.FP32]):
        ...

    @pl.function(type=pl.FunctionType.InCore)
    def gate(self, y: pl.Tensor[[M, N], pl.FP16], g: pl.Tensor[[M, N], pl.FP16],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for b in pl.range(BLOCKS):
            rows = pl.min(ROWS, M - b * ROWS)
            yb = pl.cast(pl.load(y, [b * ROWS, 0], [ROWS, N], valid_shape=[rows, N]), pl.FP32)
            gb = pl.cast(pl.load(g, [b * ROWS, 0], [ROWS, N], valid_shape=[rows, N]), pl.FP32)
            out = pl.store(pl.mul(yb, gb), [b * ROWS, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP16], r: pl.Tensor[[M, N], pl.FP16],
             w: pl.Tensor[[1, N], pl.FP16], g: pl.Tensor[[M, N], pl.FP16],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        h = pl.create_tensor([M, N], dtype=pl.FP16)
        h = self.residual_add(x, r, h)
        y = pl.create_tensor([M, N], dtype=pl.FP16)
        y = self.rmsnorm(h, w, y, EPS)
        out = self.gate(y, g, out)
        return out


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(M, N).half()
    r = torch.randn(M, N).half()
    w = (torch.rand(1, N) + 0.5).half()
    g = torch.randn(M, N).half()
    out = torch.empty(M, N, dtype=torch.float32)
    ir.compile(ResidualRMSNorm)(x, r, w, g, out)
    h = (x.float() + r.float()).half().float()
    y = (h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + EPS) * w.float()).half()
    expected = y.float() * g.float()
    check("residual add (DSL) + RMSNorm (C++) + gate (DSL), 100x256 fp16", out, expected, rtol=2e-3, atol=2e-3)


if __name__ == "__main__":
    main()
