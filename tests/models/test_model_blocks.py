"""The shared kernels of the model examples (`examples/models/_blocks.py`), one task each on the
simulator, against their torch definitions: LayerNorm, exact GELU, RMSNorm (with and without the
residual), SwiGLU and a biased FP32 linear layer."""

import torch
from _blocks import (
    add_layernorm_kernel,
    add_rmsnorm_kernel,
    dense_function,
    gelu_kernel,
    rmsnorm_kernel,
    swiglu_kernel,
)

import pypto.language as pl
from pypto import ir

BR, N = 16, 384
F = torch.nn.functional


def test_vector_kernels_match_torch():
    ln, gelu = add_layernorm_kernel(BR, N, 1e-12), gelu_kernel(BR, N)
    rms, add_rms, swiglu = rmsnorm_kernel(BR, N, 1e-6), add_rmsnorm_kernel(BR, N, 1e-6), swiglu_kernel(BR, N)

    @pl.program
    class Blocks:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[BR, N], pl.FP32], d: pl.Tensor[[BR, N], pl.FP32], g: pl.Tensor[[1, N], pl.FP32],
                 b: pl.Tensor[[1, N], pl.FP32], y_ln: pl.Out[pl.Tensor[[BR, N], pl.FP32]],
                 y_gelu: pl.Out[pl.Tensor[[BR, N], pl.FP32]], y_rms: pl.Out[pl.Tensor[[BR, N], pl.FP16]],
                 s: pl.Out[pl.Tensor[[BR, N], pl.FP32]], y_arms: pl.Out[pl.Tensor[[BR, N], pl.FP16]],
                 y_swiglu: pl.Out[pl.Tensor[[BR, N], pl.FP16]]):
            ln(x, d, g, b, y_ln)
            gelu(x, y_gelu)
            rms(x, g, y_rms)
            add_rms(x, d, g, s, y_arms)
            swiglu(x, d, y_swiglu)

    gen = torch.Generator().manual_seed(0)
    x, d = torch.randn(BR, N, generator=gen) * 3, torch.randn(BR, N, generator=gen)
    g, b = torch.rand(1, N, generator=gen) + 0.5, torch.randn(1, N, generator=gen)
    outs = [torch.empty(BR, N), torch.empty(BR, N), torch.empty(BR, N, dtype=torch.float16), torch.empty(BR, N),
            torch.empty(BR, N, dtype=torch.float16), torch.empty(BR, N, dtype=torch.float16)]
    ir.compile(Blocks, dump_passes=False)(x, d, g, b, *outs)
    y_ln, y_gelu, y_rms, s, y_arms, y_swiglu = outs

    def rmsnorm(t):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * g

    torch.testing.assert_close(y_ln, F.layer_norm(x + d, (N,), g[0], b[0], eps=1e-12), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(y_gelu, F.gelu(x), rtol=0, atol=2e-6)   # erf GELU, not the tanh form
    assert (F.gelu(x, approximate="tanh") - F.gelu(x)).abs().max() > 1e-4  # ... which this would tell apart
    torch.testing.assert_close(y_rms, rmsnorm(x).half(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(s, x + d)
    torch.testing.assert_close(y_arms, rmsnorm(x + d).half(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(y_swiglu, (F.silu(x) * d).half(), rtol=1e-3, atol=1e-3)


def test_dense_fp32_with_bias_over_blocks():
    M, K, N2 = 64, 384, 256
    dense = dense_function(M, K, N2, 32, 128, 64, pl.FP32, bias=True)

    @pl.program
    class Dense:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M, K], pl.FP32], w: pl.Tensor[[K, N2], pl.FP32], b: pl.Tensor[[1, N2], pl.FP32],
                 y: pl.Out[pl.Tensor[[M, N2], pl.FP32]]):
            y = dense(x, w, b, y)

    gen = torch.Generator().manual_seed(1)
    x, w, b = torch.randn(M, K, generator=gen), torch.randn(K, N2, generator=gen) / 20, torch.randn(1, N2, generator=gen)
    y = torch.empty(M, N2)
    compiled = ir.compile(Dense, dump_passes=False)
    compiled(x, w, b, y)
    torch.testing.assert_close(y, x @ w + b, rtol=1e-5, atol=1e-5)
    tasks = compiled.tasks
    assert len(tasks) == (M // 32) * (N2 // 128) and all(t.kernel == "linear_bias" for t in tasks)
    assert len({t.core for t in tasks}) == len(tasks)     # independent blocks on different cube cores
