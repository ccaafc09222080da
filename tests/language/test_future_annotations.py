"""Kernels in a module with `from __future__ import annotations` (annotations are strings)."""

from __future__ import annotations

import torch

import pypto.language as pl


@pl.jit
def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, b)
    return c


@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[8, 16], pl.FP32], c: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.mul(a, 2.0)
        return c


def test_string_annotations_work_for_jit_and_programs():
    a, b, c = torch.randn(8, 16), torch.randn(8, 16), torch.zeros(8, 16)
    add(a, b, c)
    torch.testing.assert_close(c, a + b)
    from pypto import ir

    ir.compile(P, dump_passes=False)(a, c)
    torch.testing.assert_close(c, a * 2.0)
