"""Parameters of @pl.inline helpers behave like Python's: an argument is evaluated once, and a
helper that rebinds a parameter (also inside a loop) changes only its own variable — the rebinding
stays loop-carried and the caller's variables keep their values."""

import torch

import pypto.language as pl
from pypto import ir

R, C, N = 16, 64, 4


@pl.inline
def add_blocks(acc: pl.Tile[[R, C], pl.FP32], x: pl.Tensor[[N * R, C], pl.FP32]) -> pl.Tile[[R, C], pl.FP32]:
    for i in pl.range(1, N):
        acc = pl.add(acc, pl.load(x, [i * R, 0], [R, C]))  # rebinds the parameter: loop-carried
    return acc


@pl.inline
def square(t: pl.Tile[[R, C], pl.FP32]) -> pl.Tile[[R, C], pl.FP32]:
    out = pl.mul(t, t)
    return out


@pl.program
class InlineParams:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[N * R, C], pl.FP32], total: pl.Out[pl.Tensor[[R, C], pl.FP32]],
          first: pl.Out[pl.Tensor[[R, C], pl.FP32]], sq: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        # an expression argument for a parameter the helper rebinds in a loop
        s = add_blocks(pl.load(x, [0, 0], [R, C]), x)
        total = pl.store(s, [0, 0], total)
        # a variable argument: the helper's rebinding must not change the caller's `b0`
        b0 = pl.load(x, [0, 0], [R, C])
        s2 = add_blocks(b0, x)
        first = pl.store(pl.sub(s2, b0), [0, 0], first)
        # an expression argument used twice by the helper is evaluated once
        sq = pl.store(square(pl.exp(b0)), [0, 0], sq)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[N * R, C], pl.FP32], total: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             first: pl.Out[pl.Tensor[[R, C], pl.FP32]], sq: pl.Out[pl.Tensor[[R, C], pl.FP32]]):
        self.k(x, total, first, sq)


def test_inline_parameters_are_variables_of_the_helper():
    text = InlineParams.as_python()
    # the argument expression is bound once at the call site, not substituted into the loop
    assert text.count("pl.tile.exp(") == 1
    assert "acc: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 64]" in text
    assert "acc_1: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] = b0" in text
    x = torch.randn(N * R, C)
    total, first, sq = torch.empty(R, C), torch.empty(R, C), torch.empty(R, C)
    ir.compile(InlineParams, dump_passes=False)(x, total, first, sq)
    blocks = x.view(N, R, C)
    torch.testing.assert_close(total, blocks.sum(0))
    torch.testing.assert_close(first, blocks[1:].sum(0))
    torch.testing.assert_close(sq, torch.exp(blocks[0]) ** 2)
