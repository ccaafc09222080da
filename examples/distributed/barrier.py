"""A hand-written barrier from `pld.notify` / `pld.wait`: every rank writes its block into its own
window, then arrives at the barrier (adds 1 to its cell `[me, 0]` at every rank) and waits until all
cells of its own signal are >= 1; only then does it read every peer's block (`pld.remote_load`) and
sum them. Without the barrier a fast rank would read a peer's window before the peer wrote it.

A second barrier after the reads keeps any rank from leaving (and its caller from overwriting the
window) while a slower peer still reads it; at the end each rank subtracts what it received from its
own cells, so the signal is all zero again and can serve the next call (self-clearing, like the
library collectives).

    python examples/distributed/barrier.py
"""

import torch
from _common import SMALL, check, config

import pypto.language as pl
import pypto.language.distributed as pld

R, N = (8, 64) if SMALL else (16, 256)
NR = pl.dynamic("NR")


@pl.jit.inline
def arrive_and_wait(sig, me, n, step):
    """Barrier number `step` (1, 2, ...) on signal `sig` [NR, 1]."""
    for p in pl.range(n):
        pld.notify(sig, p, [me, 0], 1)                         # "rank me has arrived" at every rank
    for s in pl.range(n):
        pld.wait(sig, [s, 0], step, cmp=pld.WaitCmp.Ge)        # every rank has arrived here


@pl.jit.incore
def sum_over_ranks(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor,
                   out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)   # my block, into my own window
    arrive_and_wait(sig, me, n, 1)
    acc = pld.remote_load(data, 0, [0, 0], [R, N])
    for q in pl.range(1, n):
        acc = pl.add(acc, pld.remote_load(data, q, [0, 0], [R, N]))
    arrive_and_wait(sig, me, n, 2)                             # nobody reads my window any more
    for s in pl.range(n):
        pld.notify(sig, me, [s, 0], -2)                        # clear: my cells back to 0
    out = pl.store(acc, [0, 0], out)
    return data, out


@pl.jit
def chip(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor,
         out: pl.Out[pl.Tensor]):
    data, out = sum_over_ranks(inp, data, sig, out)
    return out


@pl.jit.host
def sum_all(xs: pl.Tensor[[NR, R, N], pl.FP32], ys: pl.Out[pl.Tensor[[NR, R, N], pl.FP32]],
            sigs: pl.Out[pl.Tensor[[NR, NR, 1], pl.INT32]]):
    data = pld.window(pld.alloc_window_buffer([R, N], dtype=pl.FP32), [R, N], dtype=pl.FP32)
    sig = pld.window(pld.alloc_window_buffer([NR, 1], dtype=pl.INT32), [NR, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        chip(xs[r], data, sig, ys[r], device=r)
    for r in pl.range(pld.world_size()):
        chip(xs[r], data, sig, ys[r], device=r)                # the same signal, reused
    for r in pl.range(pld.world_size()):
        copy_signal(sig, sigs[r], device=r)
    return ys


@pl.jit.incore
def read_signal(sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    out = pld.get(out, pld.rank(pld.get_comm_ctx(sig)), sig)   # my own copy of the signal
    return out


@pl.jit
def copy_signal(sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    out = read_signal(sig, out)
    return out


def main() -> None:
    torch.manual_seed(0)
    for p in (2, 4):
        xs, ys = torch.randn(p, R, N), torch.zeros(p, R, N)
        sigs = torch.full((p, p, 1), -1, dtype=torch.int32)
        sum_all(xs, ys, sigs, config=config(p))
        check(f"hand-written barrier, sum over {p} ranks", ys, xs.sum(0).expand(p, R, N), rtol=1e-5, atol=1e-5)
        check(f"signal back at zero after two calls on {p} ranks", sigs, torch.zeros(p, p, 1, dtype=torch.int32),
              rtol=0, atol=0)


if __name__ == "__main__":
    main()
