"""The tiled FP16 matmul both `sim_throughput.py` and `compile_speed.py` measure.

`tiled_matmul(n, t)`: C[n, n] (FP32) = A[n, n] @ B[n, n] (FP16), one task per t x t output tile,
each looping over K in t-steps (Mat -> Left/Right -> Acc); n a multiple of t.
"""

from __future__ import annotations

import pypto.language as pl


def tiled_matmul(n: int, t: int = 128) -> object:
    """The `@pl.program` MatmulTiles for an n^3 product in t-tiles (shapes above)."""

    @pl.program
    class MatmulTiles:
        @pl.function(type=pl.FunctionType.InCore)
        def mm_tile(self, a: pl.Tensor[[t, n], pl.FP16], b: pl.Tensor[[n, t], pl.FP16],
                    c: pl.Out[pl.Tensor[[t, t], pl.FP32]]) -> pl.Tensor[[t, t], pl.FP32]:
            a0 = pl.load(a, [0, 0], [t, t], target_memory=pl.Mem.Mat)
            b0 = pl.load(b, [0, 0], [t, t], target_memory=pl.Mem.Mat)
            l0 = pl.move(a0, target_memory=pl.Mem.Left)
            r0 = pl.move(b0, target_memory=pl.Mem.Right)
            acc0 = pl.matmul(l0, r0)
            for k, (acc,) in pl.range(t, n, t, init_values=(acc0,)):
                ak = pl.load(a, [0, k], [t, t], target_memory=pl.Mem.Mat)
                bk = pl.load(b, [k, 0], [t, t], target_memory=pl.Mem.Mat)
                lk = pl.move(ak, target_memory=pl.Mem.Left)
                rk = pl.move(bk, target_memory=pl.Mem.Right)
                nacc = pl.matmul_acc(acc, lk, rk)
                out = pl.yield_(nacc)
            c = pl.store(out, [0, 0], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[n, n], pl.FP16], b: pl.Tensor[[n, n], pl.FP16],
                 c: pl.Out[pl.Tensor[[n, n], pl.FP32]]) -> pl.Tensor[[n, n], pl.FP32]:
            for i in pl.range(0, n, t):
                for j in pl.range(0, n, t):
                    sa = pl.slice(a, [t, n], [i, 0])
                    sb = pl.slice(b, [n, t], [0, j])
                    sc = pl.slice(c, [t, t], [i, j])
                    sc = self.mm_tile(sa, sb, sc)
            return c

    return MatmulTiles
