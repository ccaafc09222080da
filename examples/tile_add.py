"""Tile-level add: explicit load / add / store over row blocks, in a @pl.program.

    python examples/tile_add.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir

ROWS, COLS, BLOCK = 128, 128, 32


@pl.program
class TileAdd:
    @pl.function(type=pl.FunctionType.InCore)
    def add_tiles(self, a: pl.Tensor[[ROWS, COLS], pl.FP32], b: pl.Tensor[[ROWS, COLS], pl.FP32],
                  c: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        for i in pl.range(0, ROWS, BLOCK):
            ta: pl.Tile[[BLOCK, COLS], pl.FP32] = pl.load(a, [i, 0], [BLOCK, COLS])
            tb: pl.Tile[[BLOCK, COLS], pl.FP32] = pl.load(b, [i, 0], [BLOCK, COLS])
            tc: pl.Tile[[BLOCK, COLS], pl.FP32] = pl.add(ta, tb)
            c = pl.store(tc, [i, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[ROWS, COLS], pl.FP32], b: pl.Tensor[[ROWS, COLS], pl.FP32],
             c: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        c = self.add_tiles(a, b, c)
        return c


def main() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(ROWS, COLS), torch.randn(ROWS, COLS)
    c = torch.zeros(ROWS, COLS)
    compiled = ir.compile(TileAdd)
    print("artifacts in:", compiled.output_dir)
    compiled(a, b, c)
    check("tile add (128x128 fp32 in 32-row tiles)", c, a + b)


if __name__ == "__main__":
    main()
