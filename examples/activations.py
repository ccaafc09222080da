"""Activations at tile level: ReLU, SiLU, GELU (tanh form) and SwiGLU, built from catalog ops.

- ReLU(x)   = relu(x)
- SiLU(x)   = x * sigmoid(x) = x / (1 + exp(-x))
- GELU(x)   = 0.5 x (1 + tanh(c (x + 0.044715 x^3))), c = sqrt(2/pi); since 0.5 (1 + tanh(z)) is
              sigmoid(2z), this is x / (1 + exp(-2c (x + 0.044715 x^3)))
- SwiGLU(g, u) = SiLU(g) * u

The kernel walks the rows in blocks of 32; the last block is partial (valid_shape), so the tail
needs no padding of the tensors.

    python examples/activations.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir

M, N, ROWS = 80, 128, 32
BLOCKS = (M + ROWS - 1) // ROWS
GELU_C = 0.7978845608028654  # sqrt(2 / pi)


@pl.inline
def sigmoid_times(x: pl.Tile[[ROWS, N], pl.FP32], z: pl.Tile[[ROWS, N], pl.FP32]) -> pl.Tile[[ROWS, N], pl.FP32]:
    """x * sigmoid(z) = x / (1 + exp(-z))."""
    e = pl.exp(pl.neg(z))
    d = pl.adds(e, 1.0)
    out = pl.mul(x, pl.recip(d))
    return out


@pl.program
class Activations:
    @pl.function(type=pl.FunctionType.InCore)
    def act_kernel(self, x: pl.Tensor[[M, N], pl.FP32], up: pl.Tensor[[M, N], pl.FP32],
                   relu_out: pl.Out[pl.Tensor[[M, N], pl.FP32]], silu_out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
                   gelu_out: pl.Out[pl.Tensor[[M, N], pl.FP32]], swiglu_out: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
        for b in pl.range(BLOCKS):
            rows = pl.min(ROWS, M - b * ROWS)
            t = pl.load(x, [b * ROWS, 0], [ROWS, N], valid_shape=[rows, N])
            u = pl.load(up, [b * ROWS, 0], [ROWS, N], valid_shape=[rows, N])
            relu_out = pl.store(pl.relu(t), [b * ROWS, 0], relu_out)
            silu = sigmoid_times(t, t)
            silu_out = pl.store(silu, [b * ROWS, 0], silu_out)
            cube = pl.mul(pl.mul(t, t), t)
            inner = pl.add(t, pl.muls(cube, 0.044715))
            gelu = sigmoid_times(t, pl.muls(inner, 2.0 * GELU_C))
            gelu_out = pl.store(gelu, [b * ROWS, 0], gelu_out)
            swiglu_out = pl.store(pl.mul(silu, u), [b * ROWS, 0], swiglu_out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], up: pl.Tensor[[M, N], pl.FP32],
             relu_out: pl.Out[pl.Tensor[[M, N], pl.FP32]], silu_out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
             gelu_out: pl.Out[pl.Tensor[[M, N], pl.FP32]], swiglu_out: pl.Out[pl.Tensor[[M, N], pl.FP32]]):
        self.act_kernel(x, up, relu_out, silu_out, gelu_out, swiglu_out)


def main() -> None:
    torch.manual_seed(0)
    x, up = torch.randn(M, N) * 3, torch.randn(M, N)
    outs = [torch.empty(M, N) for _ in range(4)]
    ir.compile(Activations)(x, up, *outs)
    relu, silu, gelu, swiglu = outs
    F = torch.nn.functional
    check("ReLU (80x128 fp32, 3 row blocks, partial tail)", relu, F.relu(x))
    check("SiLU", silu, F.silu(x), rtol=1e-5, atol=1e-5)
    check("GELU (tanh approximation)", gelu, F.gelu(x, approximate="tanh"), rtol=1e-5, atol=1e-5)
    check("SwiGLU", swiglu, F.silu(x) * up, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    main()
