"""Concatenation: joining tiles along columns and rows, and a partial tile padded before joining.

- `pl.concat(a, b)` joins [16, 32] + [16, 32] into [16, 64] (the last axis);
- `pl.concat(a, b, axis=0)` stacks them into [32, 32];
- a partial tile (load with valid_shape) must be made fully valid first: `pl.fillpad` fills
  the columns past its valid region with zeros, then it concatenates like any tile.

    python examples/concat.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto import ir

R, C, VALID = 16, 32, 20


@pl.program
class Concat:
    @pl.function(type=pl.FunctionType.InCore)
    def concat_kernel(self, a: pl.Tensor[[R, C], pl.BF16], b: pl.Tensor[[R, C], pl.BF16],
                      cols: pl.Out[pl.Tensor[[R, 2 * C], pl.BF16]], rows: pl.Out[pl.Tensor[[2 * R, C], pl.BF16]],
                      padded: pl.Out[pl.Tensor[[R, 2 * C], pl.BF16]]):
        ta = pl.load(a, [0, 0], [R, C])
        tb = pl.load(b, [0, 0], [R, C])
        cols = pl.store(pl.concat(ta, tb), [0, 0], cols)
        rows = pl.store(pl.concat(ta, tb, axis=0), [0, 0], rows)
        part = pl.load(a, [0, 0], [R, C], valid_shape=[R, VALID])
        full = pl.fillpad(part, pad_value=pl.PadValue.zero)
        padded = pl.store(pl.concat(full, tb), [0, 0], padded)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.BF16], b: pl.Tensor[[R, C], pl.BF16],
             cols: pl.Out[pl.Tensor[[R, 2 * C], pl.BF16]], rows: pl.Out[pl.Tensor[[2 * R, C], pl.BF16]],
             padded: pl.Out[pl.Tensor[[R, 2 * C], pl.BF16]]):
        self.concat_kernel(a, b, cols, rows, padded)


def main() -> None:
    torch.manual_seed(0)
    a, b = torch.randn(R, C).bfloat16(), torch.randn(R, C).bfloat16()
    cols, rows, padded = (torch.empty(R, 2 * C).bfloat16(), torch.empty(2 * R, C).bfloat16(),
                          torch.empty(R, 2 * C).bfloat16())
    ir.compile(Concat)(a, b, cols, rows, padded)
    check("concat along columns (bf16)", cols, torch.cat([a, b], dim=1), rtol=0, atol=0)
    check("concat along rows (bf16)", rows, torch.cat([a, b], dim=0), rtol=0, atol=0)
    a_pad = a.clone()
    a_pad[:, VALID:] = 0
    check("fillpad a partial tile, then concat", padded, torch.cat([a_pad, b], dim=1), rtol=0, atol=0)


if __name__ == "__main__":
    main()
