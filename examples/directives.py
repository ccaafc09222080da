"""Directives and helpers (docs/language.md "Directives"; SPEC §13): pl.func_attr, pl.const,
pl.Array / pl.array.*, a plain while loop, an f-string in pl.static_print, pl.Scalar(dtype),
pl.RUNTIME, the chip's core counts, and JITFunction.lower — run on the simulator against torch.

    python examples/directives.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig

# --- doc: directives ---
ROWS = 16


@pl.program
class Gather4:
    @pl.function(type=pl.FunctionType.InCore)
    def pick(self, a: pl.Tensor[[128, 64], pl.FP32], n: pl.Scalar(pl.INDEX),
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        pl.func_attr({"owner": "docs", "blocks": [4]})           # metadata, kept in kernel_config.py
        starts = pl.array.create(4, pl.INT32)                      # pl.Array[4, pl.INT32], all zero
        for j, (acc,) in pl.range(4, init_values=(starts,)):
            acc2 = pl.array.update_element(acc, j, (3 - j) * ROWS)  # rows in reverse block order
            starts2 = pl.yield_(acc2)
        i = 0
        while i < n:                                               # a plain Python while loop
            row = pl.array.get_element(starts2, i)
            t = pl.load(a, [row, 0], [ROWS, 64])
            t2 = pl.tile.adds(t, pl.const(1.0, pl.FP32))
            pl.static_print(f"tile: {t2}")                         # printed once, at parse time
            out = pl.store(t2, [i * ROWS, 0], out)
            i = i + 1
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        out = self.pick(a, n, out)
        return out


@pl.jit
def spread(x: pl.Tensor, y: pl.Out[pl.Tensor], scale: pl.RUNTIME):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.system.syncall()                                        # all-core barrier (a cost only)
        clusters = pl.system.available_cluster_count()             # 24 on Ascend910B, 36 on Ascend950
        y[:] = pl.mul(x, pl.cast(scale, pl.FP32))
        y[:] = pl.adds(y, pl.cast(clusters, pl.FP32))
    return y
# --- end doc ---


def main() -> None:
    torch.manual_seed(0)
    a, out = torch.randn(128, 64), torch.zeros(64, 64)
    ir.compile(Gather4, dump_passes=False, skip_ptoas=True)(a, 4, out)
    want = torch.cat([a[(3 - j) * ROWS:(4 - j) * ROWS] for j in range(4)]) + 1.0
    check("directives: array offsets in a while loop", out, want)
    assert Gather4.get_function("pick").attrs == (("blocks", (4,)), ("owner", "docs"))

    x, y = torch.randn(32, 64), torch.zeros(32, 64)
    spread(x, y, 2.0, config=RunConfig(platform="a2a3sim"))
    check("directives: RUNTIME scale + cluster count (a2a3sim)", y, x * 2.0 + 24)
    lowered = spread.lower(x, y, 2.0)                              # the lowered ir.Program, no build
    assert "pl.system.available_cluster_count()" in lowered.as_python()


if __name__ == "__main__":
    main()
