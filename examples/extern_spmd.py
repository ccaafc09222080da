"""An SPMD hand-written C++ kernel called from `@pl.jit`: row L2-normalisation, checked against torch.

A DSL kernel computes each row's inverse norm s = rsqrt(sum(x^2)); the C++ kernel
`extern/scale_rows.cpp` then scales the rows, out = x * s. It is declared with
`@pl.jit.extern(core_type="aiv", source=..., core_num=4)`: every call runs as 4 tasks, and each
reads its block index (`pypto_block_idx()`) to take its quarter of the rows. The four tasks run at
the same time on four vector cores of the simulated chip; the declared `cost=` formula gives the
simulator's clock each block's share of the work. See docs/tools.md, "External C++ kernels".

    python examples/extern_spmd.py
"""

import torch
from _check import check

import pypto.language as pl

M, N = 128, 64


@pl.jit.incore
def inv_norm(x: pl.Tensor, s: pl.Out[pl.Tensor]):
    xt = pl.load(x, [0, 0], [M, N])
    scratch = pl.create_tile([M, N], dtype=pl.FP32, target_memory=pl.Mem.Vec)
    ss = pl.row_sum(pl.mul(xt, xt), scratch)
    s = pl.store(pl.rsqrt(ss), [0, 0], s)
    return s


# cost: cycles of one block — its rows, one vector pass at 64 fp32 lanes per cycle, plus set-up
@pl.jit.extern(core_type="aiv", source="extern/scale_rows.cpp", core_num=4,
               cost="x.numel() // block_num // 64 + 100")
def scale_rows(x: pl.Tensor, s: pl.Tensor, out: pl.Out[pl.Tensor]):
    ...


@pl.jit
def l2_normalize(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    s = pl.create_tensor([M, 1], dtype=pl.FP32)
    s = inv_norm(x, s)
    out = scale_rows(x, s, out)
    return out


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(M, N)
    out = torch.empty(M, N)
    l2_normalize(x, out)
    check("row L2-normalise: norm (DSL) + SPMD scale over 4 blocks (C++), 128x64 fp32", out,
          x / x.norm(dim=1, keepdim=True), rtol=1e-5, atol=1e-5)
    run = l2_normalize.compile(x, out).last_run  # the cached build's record of the run above
    blocks = [t for t in run.tasks if t.kernel == "scale_rows"]
    print(f"scale_rows ran as {len(blocks)} tasks on {', '.join(t.core for t in blocks)}, "
          f"cycles {blocks[0].start_cycle}..{max(t.end_cycle for t in blocks)}")


if __name__ == "__main__":
    main()
