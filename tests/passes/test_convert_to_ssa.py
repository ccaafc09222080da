"""Before/Expected tests of ConvertToSSA, written in the DSL (Language Guide "SSA")."""

import pypto.language as pl
from pypto import ir
from pypto.passes.base import PassContext
from pypto.passes.convert_to_ssa import ConvertToSSA


def run(prog):
    return ConvertToSSA().run(prog, PassContext())


def test_straight_line_reassignment_matches_guide_ssa_form():
    @pl.program
    class Before:
        @pl.function
        def example(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            result: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
            result: pl.Tensor[[64], pl.FP32] = pl.add(result, 1.0)
            return result

    @pl.program
    class Expected:
        @pl.function
        def example(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            result_0: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
            result_1: pl.Tensor[[64], pl.FP32] = pl.add(result_0, 1.0)
            return result_1

    assert not ir.structural_equal(Before, Expected)
    ir.assert_structural_equal(run(Before), Expected)
    ir.assert_structural_equal(run(Expected), Expected)


def test_loop_rebinding_becomes_loop_carried_value():
    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            acc = pl.load(x, [0, 0], [16, 16])
            for i in pl.range(1, 4):
                tmp = pl.load(x, [i * 16, 0], [16, 16])  # loop-local: never carried
                acc = pl.add(acc, tmp)
            y = pl.store(acc, [0, 0], y)
            return y

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            acc = pl.load(x, [0, 0], [16, 16])
            for i, (acc_it,) in pl.range(1, 4, init_values=(acc,)):
                tmp = pl.load(x, [i * 16, 0], [16, 16])
                acc_next = pl.add(acc_it, tmp)
                acc_out = pl.yield_(acc_next)
            y_1 = pl.store(acc_out, [0, 0], y)
            return y_1

    ir.assert_structural_equal(run(Before), Expected)


def test_if_assignment_becomes_if_result():
    @pl.program
    class Before:
        @pl.function
        def f(self, a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            r = pl.mul(a, 1.0)
            if n > 2:
                r = pl.add(r, 1.0)
            return r

    @pl.program
    class Expected:
        @pl.function
        def f(self, a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            r = pl.mul(a, 1.0)
            if n > 2:
                r1 = pl.add(r, 1.0)
                r2 = pl.yield_(r1)
            else:
                r2 = pl.yield_(r)
            return r2

    ir.assert_structural_equal(run(Before), Expected)
