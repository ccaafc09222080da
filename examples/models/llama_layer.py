"""A tiny LLaMA-style decoder layer as tile kernels, checked against a plain torch implementation.

    h   = RMSNorm(x) * w_attn
    q, k, v = h Wq, h Wk, h Wv;  q, k = RoPE(q), RoPE(k)           (rotate-half form, theta 10000)
    x1  = x + CausalAttention(q, k, v) Wo
    out = x1 + W2 (SiLU(RMSNorm(x1) * w_ffn W1) * (RMSNorm(x1) * w_ffn W3))

Sizes: 128 tokens, hidden 256, 4 heads of 64, FFN 512; weights FP16 ([in, out]), the residual
stream and all normalisation / softmax math FP32, matmul operands FP16 with FP32 accumulation.

Kernels and where they come from:
- `rmsnorm`, `add_rmsnorm`, `add` (AIV) and `linear` (AIC, dispatched by `dense`): `_blocks.py`;
- `rope_qkv` (AIV, here): rotates q and k head by head — for each head the two halves of its
  columns are loaded separately, so rotate_half needs no data shuffling — and casts q, k, v to FP16;
- the causal flash attention of `flash_attention.py` (scores / softmax / PV / online-softmax combine);
- the SwiGLU FFN of `ffn.py`.

    python examples/models/llama_layer.py [--platform a5sim]
"""

import argparse
import sys

import torch
from _blocks import (
    Timings,
    add_kernel,
    add_rmsnorm_kernel,
    compile_program,
    dense_function,
    report,
    rmsnorm_kernel,
    run_program,
)
from ffn import ffn_function, torch_ffn
from flash_attention import attention_function, torch_attention

import pypto.language as pl

S, D, H, F = 128, 256, 4, 512
HD = D // H
EPS = 1e-6
THETA = 10000.0
BR = 32                 # rows per vector task
BM, BN, BK = 64, 128, 128   # matmul blocks
BQ = 64                 # attention query / key block


def rope_kernel(BR: int, D: int, H: int):
    """`rope_qkv(q, k, v, cos, sin, q16 Out, k16 Out, v16 Out)` on [BR, D] FP32 blocks (H heads of
    D/H columns; cos, sin [BR, D/(2H)] for the block's positions): q16 = RoPE(q), k16 = RoPE(k),
    v16 = v, all cast to FP16. Per head, with x1, x2 the two column halves:
    (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)."""
    half = D // H // 2

    @pl.inline
    def rotate(x: pl.Tensor[[BR, D], pl.FP32], c: pl.Tile[[BR, half], pl.FP32], s: pl.Tile[[BR, half], pl.FP32],
               col: pl.Scalar[pl.INDEX], y: pl.Tensor[[BR, D], pl.FP16]) -> pl.Tensor[[BR, D], pl.FP16]:
        x1 = pl.load(x, [0, col], [BR, half])
        x2 = pl.load(x, [0, col + half], [BR, half])
        y = pl.store(pl.cast(pl.sub(pl.mul(x1, c), pl.mul(x2, s)), pl.FP16), [0, col], y)
        y = pl.store(pl.cast(pl.add(pl.mul(x2, c), pl.mul(x1, s)), pl.FP16), [0, col + half], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def rope_qkv(q: pl.Tensor[[BR, D], pl.FP32], k: pl.Tensor[[BR, D], pl.FP32], v: pl.Tensor[[BR, D], pl.FP32],
                 cos: pl.Tensor[[BR, half], pl.FP32], sin: pl.Tensor[[BR, half], pl.FP32],
                 q16: pl.Out[pl.Tensor[[BR, D], pl.FP16]], k16: pl.Out[pl.Tensor[[BR, D], pl.FP16]],
                 v16: pl.Out[pl.Tensor[[BR, D], pl.FP16]]):
        c = pl.load(cos, [0, 0], [BR, half])
        s = pl.load(sin, [0, 0], [BR, half])
        for h in pl.range(H):
            q16 = rotate(q, c, s, h * 2 * half, q16)
            k16 = rotate(k, c, s, h * 2 * half, k16)
        v16 = pl.store(pl.cast(pl.load(v, [0, 0], [BR, D]), pl.FP16), [0, 0], v16)
    return rope_qkv


def build_program():
    """The decoder layer as a @pl.program whose `main(x, cos, sin, weights..., out)` runs it."""
    rmsnorm = rmsnorm_kernel(BR, D, EPS)
    add_rmsnorm = add_rmsnorm_kernel(BR, D, EPS)
    add = add_kernel(BR, D)
    dense = dense_function(S, D, D, BM, BN, BK, pl.FP16)
    rope_qkv = rope_kernel(BR, D, H)
    attention = attention_function(S, S, H, HD, BQ, BQ, pl.FP16, causal=True)
    ffn = ffn_function(S, D, F, BM, BN, BK)
    half = HD // 2

    @pl.program
    class LlamaLayer:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[S, D], pl.FP32], cos: pl.Tensor[[S, half], pl.FP32],
                 sin: pl.Tensor[[S, half], pl.FP32], w_attn: pl.Tensor[[1, D], pl.FP32],
                 wq: pl.Tensor[[D, D], pl.FP16], wk: pl.Tensor[[D, D], pl.FP16], wv: pl.Tensor[[D, D], pl.FP16],
                 wo: pl.Tensor[[D, D], pl.FP16], w_ffn: pl.Tensor[[1, D], pl.FP32],
                 w1: pl.Tensor[[D, F], pl.FP16], w3: pl.Tensor[[D, F], pl.FP16], w2: pl.Tensor[[F, D], pl.FP16],
                 out: pl.Out[pl.Tensor[[S, D], pl.FP32]]):
            h = pl.create_tensor([S, D], dtype=pl.FP16)
            q32 = pl.create_tensor([S, D], dtype=pl.FP32)
            k32 = pl.create_tensor([S, D], dtype=pl.FP32)
            v32 = pl.create_tensor([S, D], dtype=pl.FP32)
            q = pl.create_tensor([S, D], dtype=pl.FP16)
            k = pl.create_tensor([S, D], dtype=pl.FP16)
            v = pl.create_tensor([S, D], dtype=pl.FP16)
            attn = pl.create_tensor([S, D], dtype=pl.FP16)
            o = pl.create_tensor([S, D], dtype=pl.FP32)
            x1 = pl.create_tensor([S, D], dtype=pl.FP32)
            h2 = pl.create_tensor([S, D], dtype=pl.FP16)
            f = pl.create_tensor([S, D], dtype=pl.FP32)
            no_padding = pl.create_tensor([1, S], dtype=pl.FP32)   # zero-filled: every key visible
            for i in pl.parallel(S // BR):
                rmsnorm(pl.slice(x, [BR, D], [i * BR, 0]), w_attn, pl.slice(h, [BR, D], [i * BR, 0]))
            q32 = dense(h, wq, q32)
            k32 = dense(h, wk, k32)
            v32 = dense(h, wv, v32)
            for i in pl.parallel(S // BR):
                rope_qkv(pl.slice(q32, [BR, D], [i * BR, 0]), pl.slice(k32, [BR, D], [i * BR, 0]),
                         pl.slice(v32, [BR, D], [i * BR, 0]), pl.slice(cos, [BR, half], [i * BR, 0]),
                         pl.slice(sin, [BR, half], [i * BR, 0]), pl.slice(q, [BR, D], [i * BR, 0]),
                         pl.slice(k, [BR, D], [i * BR, 0]), pl.slice(v, [BR, D], [i * BR, 0]))
            attn = attention(q, k, v, no_padding, attn)
            o = dense(attn, wo, o)
            for i in pl.parallel(S // BR):
                add_rmsnorm(pl.slice(x, [BR, D], [i * BR, 0]), pl.slice(o, [BR, D], [i * BR, 0]), w_ffn,
                            pl.slice(x1, [BR, D], [i * BR, 0]), pl.slice(h2, [BR, D], [i * BR, 0]))
            f = ffn(h2, w1, w3, w2, f)
            for i in pl.parallel(S // BR):
                add(pl.slice(x1, [BR, D], [i * BR, 0]), pl.slice(f, [BR, D], [i * BR, 0]),
                    pl.slice(out, [BR, D], [i * BR, 0]))
    return LlamaLayer


def rope_tables(S: int, head_dim: int, theta: float = THETA) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [S, head_dim/2] FP32 of positions 0..S-1 (inv_freq = theta^(-2i/head_dim))."""
    inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = torch.arange(S, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return ang.cos().float(), ang.sin().float()


def torch_layer(x, cos, sin, w):
    """The same decoder layer in plain FP32 torch (HF LLaMA conventions: rotate_half RoPE)."""
    def rms(t, g):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS) * g

    def rope(t):
        th = t.view(S, H, 2, HD // 2)
        t1, t2 = th[:, :, 0], th[:, :, 1]
        c, s = cos[:, None, :], sin[:, None, :]
        return torch.stack((t1 * c - t2 * s, t2 * c + t1 * s), dim=2).reshape(S, D)

    f32 = {n: t.float() for n, t in w.items()}
    h = rms(x, f32["w_attn"])
    q, k, v = rope(h @ f32["wq"]), rope(h @ f32["wk"]), h @ f32["wv"]
    x1 = x + torch_attention(q, k, v, H, causal=True) @ f32["wo"]
    return x1 + torch_ffn(rms(x1, f32["w_ffn"]), f32["w1"], f32["w3"], f32["w2"])


def random_weights(seed: int = 0) -> dict[str, torch.Tensor]:
    """Weights in the program's parameter order, scaled like an initialised model."""
    g = torch.Generator().manual_seed(seed)

    def mat(n_in, n_out):
        return (torch.randn(n_in, n_out, generator=g) / n_in ** 0.5).half()

    return {"w_attn": 1.0 + 0.1 * torch.randn(1, D, generator=g), "wq": mat(D, D), "wk": mat(D, D),
            "wv": mat(D, D), "wo": mat(D, D), "w_ffn": 1.0 + 0.1 * torch.randn(1, D, generator=g),
            "w1": mat(D, F), "w3": mat(D, F), "w2": mat(F, D)}


def run(platform: str = "a2a3sim", seed: int = 0, sanitize: bool = False):
    """Compile and simulate the layer on random input; returns (out, reference, Timings)."""
    w = random_weights(seed)
    x = torch.randn(S, D, generator=torch.Generator().manual_seed(seed + 1))
    cos, sin = rope_tables(S, HD)
    out = torch.empty(S, D)
    t = Timings()
    compiled = compile_program(build_program(), platform, t)
    run_program(compiled, (x, cos, sin, *w.values(), out), t, sanitize)
    return out, torch_layer(x, cos, sin, w), t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="a2a3sim", choices=["a2a3sim", "a5sim"])
    args = ap.parse_args()
    out, ref, t = run(args.platform)
    # FP16 matmul operands (h, q, k, v, P, attention output, FFN activations): FP16-level tolerance
    ok = report(f"LLaMA decoder layer (128 tokens, hidden 256, 4 heads, FFN 512, {args.platform})", out, ref,
                rtol=1e-2, atol=1e-2)
    print(f"  {t.line()}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
