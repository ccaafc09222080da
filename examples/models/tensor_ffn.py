"""The SwiGLU feed-forward block (LLaMA's MLP) written at the tensor level: whole tensors, no tile,
load, store, move, K loop or block loop in the source (compare examples/models/ffn.py, the same
math tiled by hand).

    y = (SiLU(x W1) * (x W3)) W2          x [M, D] FP16, W1, W3 [D, F], W2 [F, D] FP16, y FP32

Three `pl.at` regions, each a matmul followed by a vector chain on its product, connected by
intermediate tensors from `pl.create_tensor`; the compiler (TileTensorBlocks) blocks each matmul
over M, N and K for the cube unit (matmul + matmul_acc in Acc), runs the chain on each output
block, and makes one task per block. M is dynamic: one compile serves every row count.

    python examples/models/tensor_ffn.py [--platform a5sim]
"""

import argparse
import sys

import torch

import pypto.language as pl
from pypto.runtime import RunConfig

M = pl.dynamic("M")      # tokens: known at run time only
D, F = 512, 1024         # model and hidden sizes


@pl.jit
def tensor_ffn(x: pl.Tensor[[M, D], pl.FP16], w1: pl.Tensor[[D, F], pl.FP16], w3: pl.Tensor[[D, F], pl.FP16],
               w2: pl.Tensor[[F, D], pl.FP16], y: pl.Out[pl.Tensor[[M, D], pl.FP32]]):
    gate = pl.create_tensor([M, F], dtype=pl.FP32)
    act = pl.create_tensor([M, F], dtype=pl.FP16)
    with pl.at(level=pl.Level.CORE_GROUP):           # linear: the gate projection, then SiLU
        g = pl.matmul(x, w1)
        gate = pl.assemble(gate, pl.mul(g, pl.recip(pl.adds(pl.exp(pl.neg(g)), 1.0))), [0, 0])
    with pl.at(level=pl.Level.CORE_GROUP):           # linear: the up projection, times the gate
        act = pl.assemble(act, pl.cast(pl.mul(pl.matmul(x, w3), gate), pl.FP16), [0, 0])
    with pl.at(level=pl.Level.CORE_GROUP):           # linear: the down projection
        y = pl.assemble(y, pl.matmul(act, w2), [0, 0])
    return y


def reference(x: torch.Tensor, w1: torch.Tensor, w3: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """The same math in torch: FP32 products, the activation rounded to FP16 as the kernel does."""
    xf = x.float()
    g = xf @ w1.float()
    act = (torch.nn.functional.silu(g) * (xf @ w3.float())).half()
    return act.float() @ w2.float()


def inputs(rows: int, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """x [rows, D] and the weights W1, W3 [D, F], W2 [F, D], FP16, scaled to keep unit variance."""
    torch.manual_seed(seed)
    x = torch.randn(rows, D).half()
    w1, w3 = ((torch.randn(D, F) / D ** 0.5).half() for _ in range(2))
    w2 = (torch.randn(F, D) / F ** 0.5).half()
    return x, w1, w3, w2


def run(platform: str = "a2a3sim", rows: int = 300) -> tuple[torch.Tensor, torch.Tensor]:
    """Run the FFN on `rows` tokens; returns (result, torch reference)."""
    x, w1, w3, w2 = inputs(rows)
    y = torch.full((rows, D), float("nan"))
    tensor_ffn(x, w1, w3, w2, y, config=RunConfig(platform=platform))
    return y, reference(x, w1, w3, w2)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--platform", default="a2a3sim")
    ap.add_argument("--rows", type=int, default=300)
    args = ap.parse_args()
    y, ref = run(args.platform, args.rows)
    err = (y - ref).abs().max().item()
    ok = torch.allclose(y, ref, rtol=5e-3, atol=5e-3)
    print(f"tensor-level SwiGLU FFN ({args.rows}x{D} -> {F} -> {D}, fp16, {args.platform}): "
          f"max |error| {err:.2e} {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
