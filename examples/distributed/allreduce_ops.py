"""Allreduce with every reduction (`pld.ReduceOp.Sum`, `Max`, `Min`, `Prod`) in both algorithms
(`mode="mesh"`, `mode="ring"`), called from the host orchestrator (a builtin chip program
dispatched to every rank; the signal is left out, so the host driver allocates it) and from inside
a kernel (lowered to notify / wait / remote_load by the LowerCollectives pass; one mesh and one ring
signal serve all the calls, being self-clearing), checked against torch on every rank.

    python examples/distributed/allreduce_ops.py
"""

import torch
from _common import SMALL, check, config

import pypto.language as pl
import pypto.language.distributed as pld

R, N = (8, 64) if SMALL else (64, 256)
P = 4
NR = pl.dynamic("NR")
OPS = {"Sum": lambda x: x.sum(0), "Max": lambda x: x.amax(0), "Min": lambda x: x.amin(0),
       "Prod": lambda x: x.prod(0)}
ORDER = [(op, mode) for mode in ("mesh", "ring") for op in OPS]      # row block k of the outputs


# ---- from the host orchestrator --------------------------------------------------------------
@pl.jit
def load(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        data[:] = pl.add(inp, 0.0)
    return data


@pl.jit
def save(data: pld.DistributedTensor, out: pl.Out[pl.Tensor], k: pl.Scalar[pl.INDEX]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[k * R:(k + 1) * R, :] = pl.add(data, 0.0)      # row block k of this rank's output
    return out


@pl.jit.host
def host_allreduce(xs: pl.Tensor[[NR, R, N], pl.FP32], ys: pl.Out[pl.Tensor[[NR, 8 * R, N], pl.FP32]]):
    data = pld.window(pld.alloc_window_buffer([R, N], dtype=pl.FP32), [R, N], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        load(xs[r], data, device=r)
    pld.allreduce(data, op=pld.ReduceOp.Sum, mode="mesh")
    for r in pl.range(pld.world_size()):
        save(data, ys[r], 0, device=r)
        load(xs[r], data, device=r)
    pld.allreduce(data, op=pld.ReduceOp.Max, mode="mesh")
    for r in pl.range(pld.world_size()):
        save(data, ys[r], 1, device=r)
        load(xs[r], data, device=r)
    pld.allreduce(data, op=pld.ReduceOp.Min, mode="mesh")
    for r in pl.range(pld.world_size()):
        save(data, ys[r], 2, device=r)
        load(xs[r], data, device=r)
    pld.allreduce(data, op=pld.ReduceOp.Prod, mode="mesh")
    for r in pl.range(pld.world_size()):
        save(data, ys[r], 3, device=r)
        load(xs[r], data, device=r)
    pld.allreduce(data, op=pld.ReduceOp.Sum, mode="ring")
    for r in pl.range(pld.world_size()):
        save(data, ys[r], 4, device=r)
        load(xs[r], data, device=r)
    pld.allreduce(data, op=pld.ReduceOp.Max, mode="ring")
    for r in pl.range(pld.world_size()):
        save(data, ys[r], 5, device=r)
        load(xs[r], data, device=r)
    pld.allreduce(data, op=pld.ReduceOp.Min, mode="ring")
    for r in pl.range(pld.world_size()):
        save(data, ys[r], 6, device=r)
        load(xs[r], data, device=r)
    pld.allreduce(data, op=pld.ReduceOp.Prod, mode="ring")
    for r in pl.range(pld.world_size()):
        save(data, ys[r], 7, device=r)
    return ys


# ---- inside a kernel -----------------------------------------------------------------------------
@pl.jit.incore
def reduce_in_kernel(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], mesh: pld.DistributedTensor,
                     ring: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    # reload the input, allreduce it, keep the result as row block k of `out`
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)
    data = pld.allreduce(data, mesh, op=pld.ReduceOp.Sum, mode="mesh")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [0 * R, 0], out)
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)
    data = pld.allreduce(data, mesh, op=pld.ReduceOp.Max, mode="mesh")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [1 * R, 0], out)
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)
    data = pld.allreduce(data, mesh, op=pld.ReduceOp.Min, mode="mesh")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [2 * R, 0], out)
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)
    data = pld.allreduce(data, mesh, op=pld.ReduceOp.Prod, mode="mesh")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [3 * R, 0], out)
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)
    data = pld.allreduce(data, ring, op=pld.ReduceOp.Sum, mode="ring")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [4 * R, 0], out)
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)
    data = pld.allreduce(data, ring, op=pld.ReduceOp.Max, mode="ring")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [5 * R, 0], out)
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)
    data = pld.allreduce(data, ring, op=pld.ReduceOp.Min, mode="ring")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [6 * R, 0], out)
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)
    data = pld.allreduce(data, ring, op=pld.ReduceOp.Prod, mode="ring")
    out = pl.store(pl.load(data, [0, 0], [R, N]), [7 * R, 0], out)
    return data, out


@pl.jit
def chip_reduce(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], mesh: pld.DistributedTensor,
                ring: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    data, out = reduce_in_kernel(inp, data, mesh, ring, out)
    return out


@pl.jit.host
def kernel_allreduce(xs: pl.Tensor[[P, R, N], pl.FP32], ys: pl.Out[pl.Tensor[[P, 8 * R, N], pl.FP32]]):
    data = pld.window(pld.alloc_window_buffer([R, N], dtype=pl.FP32), [R, N], dtype=pl.FP32)
    mesh = pld.window(pld.alloc_window_buffer([P, 1], dtype=pl.INT32), [P, 1], dtype=pl.INT32)
    ring = pld.window(pld.alloc_window_buffer([2 * (P - 1), P], dtype=pl.INT32), [2 * (P - 1), P],
                      dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        chip_reduce(xs[r], data, mesh, ring, ys[r], device=r)
    return ys


def main() -> None:
    torch.manual_seed(0)
    xs = 1.0 + 0.25 * torch.randn(P, R, N)      # values near 1 keep the product of P ranks inside FP32
    for where, host in (("host", host_allreduce), ("kernel", kernel_allreduce)):
        ys = torch.zeros(P, 8 * R, N)
        host(xs, ys, config=config(P))
        for k, (op, mode) in enumerate(ORDER):
            check(f"{where} allreduce {op:4} {mode} on {P} ranks", ys[:, k * R:(k + 1) * R],
                  OPS[op](xs).expand(P, R, N), rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    main()
