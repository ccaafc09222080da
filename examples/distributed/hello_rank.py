"""Hello, rank: every rank writes its own rank id into its row of a world-shaped output
(`pld.get_comm_ctx`, `pld.rank`, `pld.nranks` in a kernel; `@pl.jit.host` dispatching with `device=r`).

    python examples/distributed/hello_rank.py
"""

import torch
from _common import check, config

import pypto.language as pl
import pypto.language.distributed as pld

N = 64
NR = pl.dynamic("NR")


@pl.jit.incore
def whoami(win: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(win)
    me = pl.cast(pld.rank(ctx), pl.FP32)
    n = pl.cast(pld.nranks(ctx), pl.FP32)
    out = pl.store(pl.tile.full([1, N], me, dtype=pl.FP32), [0, 0], out)   # row 0: my rank
    out = pl.store(pl.tile.full([1, N], n, dtype=pl.FP32), [1, 0], out)    # row 1: the rank count
    return out


@pl.jit
def hello(win: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    out = whoami(win, out)
    return out


@pl.jit.host
def hello_world(out: pl.Out[pl.Tensor[[NR, 2, N], pl.FP32]]):
    win = pld.window(pld.alloc_window_buffer(4), [1, 1], dtype=pl.INT32)   # any window gives the context
    for r in pl.range(pld.world_size()):
        hello(win, out[r], device=r)
    return out


def main() -> None:
    p = 4
    out = torch.full((p, 2, N), -1.0)
    hello_world(out, config=config(p))
    want = torch.stack([torch.stack([torch.full((N,), float(r)), torch.full((N,), float(p))]) for r in range(p)])
    check(f"hello rank: each of {p} ranks wrote its rank id and the rank count", out, want, rtol=0, atol=0)


if __name__ == "__main__":
    main()
