"""Ring shift: every rank's block moves to the next rank (rank r ends with rank r-1's block), written
three ways with the one-sided primitives:

- `push`: a Vec tile stored straight into the next rank's window (`pld.tile.remote_store`), then a
  notify tells that rank its data is there;
- `pull`: each rank writes its own window and notifies the next rank "ready"; that rank reads it
  (`pld.tile.remote_load`);
- `put_get`: DDR to DDR, staged through Vec in chunks (`pld.tensor.put` into the next rank's window,
  `pld.tensor.get` of my own window into my output).

    python examples/distributed/ring_shift.py
"""

import torch
from _common import SMALL, check, config

import pypto.language as pl
import pypto.language.distributed as pld

R, N = (8, 64) if SMALL else (32, 256)
NR = pl.dynamic("NR")


@pl.jit.incore
def push(inp: pl.Tensor, data: pld.DistributedTensor, sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    nxt = (me + 1) % pld.nranks(ctx)
    pld.tile.remote_store(pl.load(inp, [0, 0], [R, N]), data, nxt, [0, 0])
    pld.notify(sig, nxt, [0, 0], 1)                 # after the data: a fence precedes every notify
    pld.wait(sig, [0, 0], 1)                        # my predecessor's block has arrived
    out = pl.store(pl.load(data, [0, 0], [R, N]), [0, 0], out)
    return out


@pl.jit.incore
def pull(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor,
         out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    n = pld.nranks(ctx)
    data = pl.store(pl.load(inp, [0, 0], [R, N]), [0, 0], data)
    pld.notify(sig, (me + 1) % n, [0, 0], 1)        # "my block is ready" to the rank that reads it
    pld.wait(sig, [0, 0], 1)
    t = pld.tile.remote_load(data, (me + n - 1) % n, [0, 0], [R, N])
    out = pl.store(t, [0, 0], out)
    return data, out


@pl.jit.incore
def put_get(inp: pl.Tensor, data: pld.DistributedTensor, sig: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    ctx = pld.get_comm_ctx(data)
    me = pld.rank(ctx)
    nxt = (me + 1) % pld.nranks(ctx)
    pld.tensor.put(data, nxt, inp, chunk_rows=R // 2, chunk_cols=N, pipeline=True)
    pld.notify(sig, nxt, [0, 0], 1)
    pld.wait(sig, [0, 0], 1)
    out = pld.tensor.get(out, me, data)
    return out


@pl.jit
def chip_push(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor,
              out: pl.Out[pl.Tensor]):
    out = push(inp, data, sig, out)
    return out


@pl.jit
def chip_pull(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor,
              out: pl.Out[pl.Tensor]):
    data, out = pull(inp, data, sig, out)
    return out


@pl.jit
def chip_put_get(inp: pl.Tensor, data: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor,
                 out: pl.Out[pl.Tensor]):
    out = put_get(inp, data, sig, out)
    return out


@pl.jit.host
def shift(xs: pl.Tensor[[NR, R, N], pl.FP32], y_push: pl.Out[pl.Tensor[[NR, R, N], pl.FP32]],
          y_pull: pl.Out[pl.Tensor[[NR, R, N], pl.FP32]], y_put: pl.Out[pl.Tensor[[NR, R, N], pl.FP32]]):
    # one data window and one signal per variant: a signal cell counts notifies, it is not reset
    d1 = pld.window(pld.alloc_window_buffer([R, N], dtype=pl.FP32), [R, N], dtype=pl.FP32)
    d2 = pld.window(pld.alloc_window_buffer([R, N], dtype=pl.FP32), [R, N], dtype=pl.FP32)
    d3 = pld.window(pld.alloc_window_buffer([R, N], dtype=pl.FP32), [R, N], dtype=pl.FP32)
    s1 = pld.window(pld.alloc_window_buffer([1, 1], dtype=pl.INT32), [1, 1], dtype=pl.INT32)
    s2 = pld.window(pld.alloc_window_buffer([1, 1], dtype=pl.INT32), [1, 1], dtype=pl.INT32)
    s3 = pld.window(pld.alloc_window_buffer([1, 1], dtype=pl.INT32), [1, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        chip_push(xs[r], d1, s1, y_push[r], device=r)
        chip_pull(xs[r], d2, s2, y_pull[r], device=r)
        chip_put_get(xs[r], d3, s3, y_put[r], device=r)
    return y_push


def main() -> None:
    torch.manual_seed(0)
    for p in (2, 4):
        xs = torch.randn(p, R, N)
        ys = [torch.zeros(p, R, N) for _ in range(3)]
        shift(xs, *ys, config=config(p))
        want = torch.roll(xs, 1, dims=0)                # rank r holds rank r-1's block
        for name, y in zip(("remote_store (push)", "remote_load (pull)", "put/get"), ys):
            check(f"ring shift with {name} on {p} ranks", y, want, rtol=0, atol=0)


if __name__ == "__main__":
    main()
