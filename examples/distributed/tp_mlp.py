"""A tensor-parallel MLP, y = relu(x W1) W2, on P = 2 and 4 ranks (Megatron-style), against the
same MLP in torch on one device:

- W1 [D, F] is split by columns (column-parallel): rank r computes h_r = relu(x W1[:, cols_r]),
  its own F/P hidden units — no communication, relu being elementwise;
- W2 [F, D] is split by rows (row-parallel): rank r computes the partial product h_r W2[rows_r, :];
- an allreduce (Sum) over the ranks adds the partial products: every rank holds y.

    python examples/distributed/tp_mlp.py
"""

import torch
from _common import SMALL, check, config

import pypto.language as pl
import pypto.language.distributed as pld

M, D, F = (32, 64, 128) if SMALL else (64, 128, 512)


@pl.jit
def mlp_shard(x: pl.Tensor, w1: pl.Tensor, w2: pl.Tensor, y: pl.InOut[pld.DistributedTensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        h = pl.relu(pl.matmul(x, w1))                    # [M, F/P]: this rank's hidden units
        y[:] = pl.matmul(pl.cast(h, pl.FP16), w2)       # [M, D]: this rank's partial product
    return y


@pl.jit
def save(y: pld.DistributedTensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out[:] = pl.add(y, 0.0)
    return out


def tensor_parallel_mlp(p: int):
    """The host orchestrator for P ranks (the shard shapes F/P are static)."""
    fp = F // p

    @pl.jit.host
    def tp_mlp(xs: pl.Tensor[[p, M, D], pl.FP16], w1s: pl.Tensor[[p, D, fp], pl.FP16],
               w2s: pl.Tensor[[p, fp, D], pl.FP16], ys: pl.Out[pl.Tensor[[p, M, D], pl.FP32]]):
        y = pld.window(pld.alloc_window_buffer([M, D], dtype=pl.FP32), [M, D], dtype=pl.FP32)
        for r in pl.range(pld.world_size()):
            mlp_shard(xs[r], w1s[r], w2s[r], y, device=r)
        pld.allreduce(y, op=pld.ReduceOp.Sum, mode="ring")     # sum of the partial products
        for r in pl.range(pld.world_size()):
            save(y, ys[r], device=r)
        return ys
    return tp_mlp


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(M, D).half()
    w1 = (torch.randn(D, F) / D ** 0.5).half()
    w2 = (torch.randn(F, D) / F ** 0.5).half()
    # the single-device reference (FP32 accumulation, the hidden layer rounded to FP16 as on chip)
    h = torch.relu(x.float() @ w1.float()).half()
    want = h.float() @ w2.float()
    for p in (2, 4):
        fp = F // p
        w1s = torch.stack([w1[:, r * fp:(r + 1) * fp] for r in range(p)])      # column shards
        w2s = torch.stack([w2[r * fp:(r + 1) * fp, :] for r in range(p)])      # row shards
        ys = torch.zeros(p, M, D)
        tensor_parallel_mlp(p)(x.expand(p, M, D).contiguous(), w1s, w2s, ys, config=config(p))
        check(f"tensor-parallel MLP on {p} ranks vs one-device torch ({M}x{D} -> {F} -> {D})", ys,
              want.expand(p, M, D), rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
