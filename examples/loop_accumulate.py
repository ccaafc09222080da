"""A loop with a carried value: sum the row blocks of a tensor into one tile.

`acc` is carried through the loop with init_values / pl.yield_ (SSA style); the same kernel is
also written with plain rebinding (non-SSA style), which ConvertToSSA turns into the same loop.

    python examples/loop_accumulate.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir

BLOCKS, ROWS, COLS = 8, 16, 64


@pl.program
class BlockSum:
    @pl.function(type=pl.FunctionType.InCore)
    def block_sum(self, x: pl.Tensor[[BLOCKS * ROWS, COLS], pl.FP32],
                  y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        acc0: pl.Tile[[ROWS, COLS], pl.FP32] = pl.load(x, [0, 0], [ROWS, COLS])
        for i, (acc,) in pl.range(1, BLOCKS, init_values=(acc0,)):
            blk: pl.Tile[[ROWS, COLS], pl.FP32] = pl.load(x, [i * ROWS, 0], [ROWS, COLS])
            nxt: pl.Tile[[ROWS, COLS], pl.FP32] = pl.add(acc, blk)
            total: pl.Tile[[ROWS, COLS], pl.FP32] = pl.yield_(nxt)
        y = pl.store(total, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[BLOCKS * ROWS, COLS], pl.FP32],
             y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        y = self.block_sum(x, y)
        return y


@pl.jit
def block_sum_rebinding(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        acc = pl.load(x, [0, 0], [ROWS, COLS])
        for i in pl.range(1, BLOCKS):
            blk = pl.load(x, [i * ROWS, 0], [ROWS, COLS])
            acc = pl.add(acc, blk)  # plain rebinding: becomes a loop-carried value
        y = pl.store(acc, [0, 0], y)
    return y


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(BLOCKS * ROWS, COLS)
    expected = x.view(BLOCKS, ROWS, COLS).sum(dim=0)
    y = torch.empty(ROWS, COLS)
    ir.compile(BlockSum)(x, y)
    check("loop-carried block sum (init_values / yield_)", y, expected, rtol=1e-5, atol=1e-5)
    y2 = torch.empty(ROWS, COLS)
    block_sum_rebinding(x, y2)
    check("loop-carried block sum (plain rebinding, @pl.jit)", y2, expected, rtol=1e-5, atol=1e-5)


if __name__ == "__main__":
    main()
