"""One build for any rank count: the rank count is a dynamic dimension (`NR = pl.dynamic("NR")`),
bound from the number of devices when the program runs. The same compiled program runs at P = 2, 3
and 4: every rank weights its block by (rank + 1), then a kernel-level allreduce (mesh, on an
`[NR, 1]` signal, and ring, on a `[2*(NR-1), NR]` signal) sums them, so every rank ends with
sum_s (s + 1) * x_s.

    python examples/distributed/dynamic_ranks.py
"""

import sys
from pathlib import Path

import torch
from _common import SMALL, check, config

import pypto.language as pl
import pypto.language.distributed as pld

R, N = (8, 64) if SMALL else (32, 256)
NR = pl.dynamic("NR")


@pl.jit.incore
def weighted_sum(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], mesh: pld.DistributedTensor,
                 ring: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    w = pl.cast(pld.rank(pld.get_comm_ctx(data)) + 1, pl.FP32)
    data = pl.store(pl.muls(pl.load(inp, [0, 0], [R, N]), w), [0, 0], data)
    data = pld.allreduce(data, mesh, mode="mesh")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [0, 0], out)
    data = pl.store(pl.muls(pl.load(inp, [0, 0], [R, N]), w), [0, 0], data)
    data = pld.allreduce(data, ring, mode="ring")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [R, 0], out)
    return data, out


@pl.jit
def chip(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], mesh: pld.DistributedTensor,
         ring: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    data, out = weighted_sum(inp, data, mesh, ring, out)
    return out


@pl.jit.host
def weighted(xs: pl.Tensor[[NR, R, N], pl.FP32], ys: pl.Out[pl.Tensor[[NR, 2 * R, N], pl.FP32]]):
    data = pld.window(pld.alloc_window_buffer([R, N], dtype=pl.FP32), [R, N], dtype=pl.FP32)
    mesh = pld.window(pld.alloc_window_buffer([NR, 1], dtype=pl.INT32), [NR, 1], dtype=pl.INT32)
    ring = pld.window(pld.alloc_window_buffer([2 * (NR - 1), NR], dtype=pl.INT32), [2 * (NR - 1), NR],
                      dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        chip(xs[r], data, mesh, ring, ys[r], device=r)
    return ys


def main() -> None:
    torch.manual_seed(0)
    compiled = weighted.compile()                    # compiled once, before the rank count is known
    builds = set(Path(str(compiled)).parent.iterdir())
    for p in (2, 3, 4):
        xs, ys = torch.randn(p, R, N), torch.zeros(p, 2 * R, N)
        compiled(xs, ys, config=config(p))
        want = (xs * torch.arange(1, p + 1, dtype=torch.float32).view(p, 1, 1)).sum(0)
        check(f"one build, P = {p}: mesh allreduce", ys[:, :R], want.expand(p, R, N), rtol=1e-5, atol=1e-5)
        check(f"one build, P = {p}: ring allreduce", ys[:, R:], want.expand(p, R, N), rtol=1e-5, atol=1e-5)
    if set(Path(str(compiled)).parent.iterdir()) != builds:
        print("FAIL a rank count needed a new build")
        sys.exit(1)
    print(f"PASS one build folder served P = 2, 3, 4: {compiled}")


if __name__ == "__main__":
    main()
