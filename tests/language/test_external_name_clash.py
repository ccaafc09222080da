"""Standalone functions called inside a program are called by name: two different functions of one
name are rejected at the second call (one of them would otherwise run in place of the other), while
structurally equal copies — a kernel factory called twice with the same sizes — are accepted."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserSyntaxError


def scale_kernel(factor: float):
    @pl.function(type=pl.FunctionType.InCore)
    def scale(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
        y = pl.store(pl.muls(pl.load(x, [0, 0], [16, 64]), factor), [0, 0], y)
    return scale


def test_two_different_functions_of_one_name_are_rejected():
    double, triple = scale_kernel(2.0), scale_kernel(3.0)
    with pytest.raises(ParserSyntaxError, match="already calls a different function named 'scale'") as e:
        @pl.program
        class Clash:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[16, 64], pl.FP32], a: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
                     b: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
                double(x, a)
                triple(x, b)
    assert "test_external_name_clash.py" in str(e.value) and "triple(x, b)" in str(e.value)


def test_equal_copies_of_a_function_share_its_name():
    first, second = scale_kernel(2.0), scale_kernel(2.0)

    @pl.program
    class Copies:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32], a: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
                 b: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
            first(x, a)
            second(x, b)

    assert Copies.function_names == ("main", "scale")
    x, a, b = torch.randn(16, 64), torch.empty(16, 64), torch.empty(16, 64)
    ir.compile(Copies, dump_passes=False)(x, a, b)
    torch.testing.assert_close(a, 2 * x)
    torch.testing.assert_close(b, 2 * x)
