"""A SwiGLU feed-forward block (LLaMA's MLP) as tile kernels, checked against torch.

    y = (SiLU(x W1) * (x W3)) W2          x [M, D] FP16, W1, W3 [D, F], W2 [F, D] FP16, y FP32

Three phases of tasks, one task per output block:

1. `linear` (AIC) twice per [BM, BN] block of the hidden layer: G = x W1 and U = x W3, each a
   loop over D in BK-blocks (matmul, then matmul_acc into the FP32 Acc tile);
2. `swiglu` (AIV) per block: A = SiLU(G) * U, cast to FP16 for the next matmul;
3. `linear` (AIC) per [BM, BN] block of y: y = A W2, a loop over F in BK-blocks.

The runtime orders the phases block by block through the DDR regions the tasks touch: the SwiGLU
of block (i, j) waits only for the two matmuls that wrote G and U at (i, j), and the down
projection of row block i only for the SwiGLU tasks of that row block.
`ffn_function(...)` returns the dispatch as an inline helper for orchestration code (the LLaMA
layer uses it).

    python examples/models/ffn.py [--platform a5sim]
"""

import argparse
import sys

import torch
from _blocks import Timings, compile_program, dense_function, report, run_program, swiglu_kernel

import pypto.language as pl


def ffn_function(M: int, D: int, F: int, BM: int = 64, BN: int = 128, BK: int = 128):
    """`y = ffn(x, w1, w3, w2, y)`, an inline helper of Orchestration code: y [M, D] FP32 =
    (SiLU(x W1) * (x W3)) W2 with x [M, D] and weights W1, W3 [D, F], W2 [F, D] in FP16.

    Raises:
        ValueError: a size that is not a multiple of its block.
    """
    up = dense_function(M, D, F, BM, BN, BK, pl.FP16)
    down = dense_function(M, F, D, BM, BN, BK, pl.FP16)
    swiglu = swiglu_kernel(BM, BN)

    @pl.inline
    def ffn(x: pl.Tensor[[M, D], pl.FP16], w1: pl.Tensor[[D, F], pl.FP16], w3: pl.Tensor[[D, F], pl.FP16],
            w2: pl.Tensor[[F, D], pl.FP16], y: pl.Tensor[[M, D], pl.FP32]) -> pl.Tensor[[M, D], pl.FP32]:
        g = up(x, w1, pl.create_tensor([M, F], dtype=pl.FP32))
        u = up(x, w3, pl.create_tensor([M, F], dtype=pl.FP32))
        a = pl.create_tensor([M, F], dtype=pl.FP16)
        for i in pl.parallel(M // BM):
            for j in pl.parallel(F // BN):
                swiglu(pl.slice(g, [BM, BN], [i * BM, j * BN]), pl.slice(u, [BM, BN], [i * BM, j * BN]),
                       pl.slice(a, [BM, BN], [i * BM, j * BN]))
        y = down(a, w2, y)
        return y
    return ffn


def torch_ffn(x, w1, w3, w2):
    """The same block in FP32 torch: (silu(x W1) * (x W3)) W2."""
    x, w1, w3, w2 = (t.float() for t in (x, w1, w3, w2))
    return (torch.nn.functional.silu(x @ w1) * (x @ w3)) @ w2


def run(platform: str = "a2a3sim", M: int = 128, D: int = 256, F: int = 512, seed: int = 0,
        sanitize: bool = False):
    """Compile and simulate the FFN on random FP16 data; returns (y, reference, Timings)."""
    ffn = ffn_function(M, D, F)

    @pl.program
    class SwiGLUFFN:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M, D], pl.FP16], w1: pl.Tensor[[D, F], pl.FP16],
                 w3: pl.Tensor[[D, F], pl.FP16], w2: pl.Tensor[[F, D], pl.FP16],
                 y: pl.Out[pl.Tensor[[M, D], pl.FP32]]):
            y = ffn(x, w1, w3, w2, y)

    g = torch.Generator().manual_seed(seed)
    x = torch.randn(M, D, generator=g).half()
    w1, w3 = ((torch.randn(D, F, generator=g) / D ** 0.5).half() for _ in range(2))
    w2 = (torch.randn(F, D, generator=g) / F ** 0.5).half()
    y = torch.empty(M, D)
    t = Timings()
    compiled = compile_program(SwiGLUFFN, platform, t)
    run_program(compiled, (x, w1, w3, w2, y), t, sanitize)
    return y, torch_ffn(x, w1, w3, w2), t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="a2a3sim", choices=["a2a3sim", "a5sim"])
    args = ap.parse_args()
    y, ref, t = run(args.platform)
    # the hidden activations are rounded to FP16 before the down projection: FP16-level tolerance
    ok = report(f"SwiGLU FFN (128 tokens, 256 -> 512 -> 256, fp16 weights, {args.platform})", y, ref,
                rtol=1e-2, atol=1e-2)
    print(f"  {t.line()}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
