"""Allgather + GEMM: C = A @ B with A sharded by rows over the ranks (rank r holds rows
[r*M/P, (r+1)*M/P) of A) and B replicated. Every rank gathers the whole of A into a window
(`pld.allgather`, inside a kernel) and multiplies it by B, so every rank ends with the full
product C [M, N].

    python examples/distributed/allgather_gemm.py
"""

import torch
from _common import SMALL, check, config

import pypto.language as pl
import pypto.language.distributed as pld

P = 4
M, K, N = (64, 64, 64) if SMALL else (128, 128, 128)
MP = M // P                                            # rows of A per rank


@pl.jit.incore
def gather_rows(a_part: pl.Tensor, a_all: pl.InOut[pld.DistributedTensor], sig: pld.DistributedTensor):
    a_all = pld.allgather(a_part, a_all, sig)         # a_all[s] = rank s's rows
    return a_all


@pl.jit
def gemm_chip(a_part: pl.Tensor, b: pl.Tensor, a_all: pl.InOut[pld.DistributedTensor],
              sig: pld.DistributedTensor, c: pl.Out[pl.Tensor]):
    a_all = gather_rows(a_part, a_all, sig)
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.matmul(pl.reshape(a_all, [M, K]), b)    # [P, MP, K] is A [M, K], row-major
    return c


@pl.jit.host
def allgather_gemm(a_parts: pl.Tensor[[P, MP, K], pl.FP16], bs: pl.Tensor[[P, K, N], pl.FP16],
                   cs: pl.Out[pl.Tensor[[P, M, N], pl.FP32]]):
    a_all = pld.window(pld.alloc_window_buffer([P, MP, K], dtype=pl.FP16), [P, MP, K], dtype=pl.FP16)
    sig = pld.window(pld.alloc_window_buffer([P, 1], dtype=pl.INT32), [P, 1], dtype=pl.INT32)
    for r in pl.range(pld.world_size()):
        gemm_chip(a_parts[r], bs[r], a_all, sig, cs[r], device=r)
    return cs


def main() -> None:
    torch.manual_seed(0)
    a = torch.randn(M, K).half()
    b = (torch.randn(K, N) / K ** 0.5).half()
    cs = torch.zeros(P, M, N)
    allgather_gemm(a.view(P, MP, K), b.expand(P, K, N).contiguous(), cs, config=config(P))
    want = a.float() @ b.float()
    check(f"allgather + GEMM: every one of {P} ranks holds C = A @ B [{M}x{N}]", cs, want.expand(P, M, N),
          rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
