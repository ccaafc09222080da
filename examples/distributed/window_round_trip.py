"""Window round trip: the host allocates a window slot, one chip program copies each rank's input
into its copy of the window, a second chip program (a later dispatch of the same host call) reads it
back, scaled. Then the same build runs again through a prepared worker (`compiled.prepare`), and a
persistent worker (`persistent=True`) keeps a window's contents from one call to the next.

    python examples/distributed/window_round_trip.py
"""

import torch
from _common import SMALL, check, config

import pypto.language as pl
import pypto.language.distributed as pld

R, N = (8, 64) if SMALL else (32, 256)
NR = pl.dynamic("NR")


@pl.jit
def to_window(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        data[:] = pl.add(inp, 0.0)
    return data


@pl.jit
def from_window(data: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.mul(data, 2.0)
    return out


@pl.jit.host
def round_trip(xs: pl.Tensor[[NR, R, N], pl.FP32], ys: pl.Out[pl.Tensor[[NR, R, N], pl.FP32]]):
    data = pld.window(pld.alloc_window_buffer([R, N], dtype=pl.FP32), [R, N], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        to_window(xs[r], data, device=r)
    for r in pl.range(pld.world_size()):
        from_window(data, ys[r], device=r)
    return ys


@pl.jit
def add_into_window(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        data[:] = pl.add(data, inp)
    return data


@pl.jit.host
def accumulate(xs: pl.Tensor[[NR, R, N], pl.FP32], ys: pl.Out[pl.Tensor[[NR, R, N], pl.FP32]]):
    data = pld.window(pld.alloc_window_buffer([R, N], dtype=pl.FP32), [R, N], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        add_into_window(xs[r], data, device=r)
    for r in pl.range(pld.world_size()):
        from_window(data, ys[r], device=r)
    return ys


def main() -> None:
    p = 4
    torch.manual_seed(0)
    xs, ys = torch.randn(p, R, N), torch.zeros(p, R, N)
    round_trip(xs, ys, config=config(p))
    check(f"window round trip on {p} ranks ({R}x{N} FP32 each)", ys, 2 * xs, rtol=0, atol=0)

    # a prepared worker: host tensors in shared memory, the rank processes kept between calls
    compiled = round_trip.compile()
    xs.share_memory_()
    ys = torch.zeros(p, R, N).share_memory_()
    with compiled.prepare(config=config(p)) as rt:
        for k in range(3):
            xs.copy_(torch.randn(p, R, N))
            rt(xs, ys)
            check(f"prepared worker, call {k}", ys, 2 * xs, rtol=0, atol=0)

    # persistent=True: the window outlives the call, so each call adds to what the last one left
    with accumulate.compile().prepare(config=config(p), persistent=True) as rt:
        for k in range(1, 4):
            rt(xs, ys)
            check(f"persistent window after call {k}", ys, 2 * k * xs, rtol=1e-6, atol=1e-6)


if __name__ == "__main__":
    main()
