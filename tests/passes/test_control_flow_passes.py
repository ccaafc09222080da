"""CtrlFlowTransform (break/continue), UnrollLoops (pl.unroll) and InlineFunctions, checked by
running the compiled programs on the simulator against Python/torch semantics."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import CompileError
from pypto.passes.base import PassContext
from pypto.passes.inline_functions import InlineFunctions

B, R, C = 8, 16, 32


def blocks(x):
    return x.view(B, R, C)


@pl.program
class BreakNegStep:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[B * R, C], pl.FP32], n: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        acc = pl.load(x, [0, 0], [R, C])
        for i in pl.range(B - 1, 0, -1):
            t = pl.load(x, [i * R, 0], [R, C])
            acc = pl.add(acc, t)
            if i == n:
                break
            acc = pl.mul(acc, 0.5)
        y = pl.store(acc, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[B * R, C], pl.FP32], n: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        y = self.k(x, n, y)
        return y


def reference_break(x, n):
    xb = blocks(x)
    acc = xb[0].clone()
    for i in range(B - 1, 0, -1):
        acc = acc + xb[i]
        if i == n:
            break
        acc = acc * 0.5
    return acc


@pytest.mark.parametrize("n", [7, 4, 1, 0])
def test_break_with_negative_step_matches_python(n):
    x, y = torch.randn(B * R, C), torch.zeros(R, C)
    ir.compile(BreakNegStep, dump_passes=False)(x, n, y)
    torch.testing.assert_close(y, reference_break(x, n))


@pl.program
class ContinueOdd:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[B * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        acc = pl.load(x, [0, 0], [R, C])
        for i in pl.range(1, B):
            if i % 2 == 1:
                continue
            t = pl.load(x, [i * R, 0], [R, C])
            acc = pl.add(acc, t)
        y = pl.store(acc, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[B * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        y = self.k(x, y)
        return y


def test_continue_skips_the_rest_of_the_iteration():
    x, y = torch.randn(B * R, C), torch.zeros(R, C)
    ir.compile(ContinueOdd, dump_passes=False)(x, y)
    xb = blocks(x)
    torch.testing.assert_close(y, xb[0] + xb[2] + xb[4] + xb[6])


@pl.program
class WhileBreak:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[B * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        acc0 = pl.load(x, [0, 0], [R, C])
        for (j, acc) in pl.while_(init_values=(1, acc0)):
            pl.cond(j < B)
            t = pl.load(x, [j * R, 0], [R, C])
            nxt = pl.add(acc, t)
            if j == 3:
                break
            j_out, acc_out = pl.yield_(j + 1, nxt)
        y = pl.store(acc_out, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[B * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        y = self.k(x, y)
        return y


def test_break_in_while_with_explicit_carried_values_keeps_values_before_break():
    x, y = torch.randn(B * R, C), torch.zeros(R, C)
    ir.compile(WhileBreak, dump_passes=False)(x, y)
    xb = blocks(x)
    torch.testing.assert_close(y, xb[0] + xb[1] + xb[2])  # iteration j == 3 breaks before yielding


@pl.program
class Unrolled:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[B * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        acc0 = pl.load(x, [0, 0], [R, C])
        for i, (acc,) in pl.unroll(1, 4, init_values=(acc0,)):
            t = pl.load(x, [i * R, 0], [R, C])
            nxt = pl.add(acc, t)
            out = pl.yield_(nxt)
        acc2 = out
        for i in pl.unroll(4, B):
            t = pl.load(x, [i * R, 0], [R, C])
            acc2 = pl.add(acc2, t)
        y = pl.store(acc2, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[B * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        y = self.k(x, y)
        return y


def test_unroll_expands_loops_and_keeps_results():
    compiled = ir.compile(Unrolled, dump_passes=False)
    text = compiled.program.get_function("k").as_python()
    assert "pl.range" not in text and "pl.unroll" not in text
    assert text.count("pl.tile.load(x") == B
    x, y = torch.randn(B * R, C), torch.zeros(R, C)
    compiled(x, y)
    torch.testing.assert_close(y, blocks(x).sum(0), rtol=1e-5, atol=1e-5)


def test_unroll_needs_constant_bounds():
    @pl.program
    class Bad:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[B * R, C], pl.FP32], n: pl.Scalar[pl.INDEX],
              y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            for i in pl.unroll(n):
                t = pl.load(x, [i * R, 0], [R, C])
                y = pl.store(t, [0, 0], y)
            return y

    with pytest.raises(CompileError, match="compile-time constant stop"):
        ir.compile(Bad, dump_passes=False)


def test_inline_functions_pass_splices_inline_typed_functions():
    src = '''
import pypto.language as pl

@pl.program
class WithInline:
    @pl.function(type=pl.FunctionType.Inline)
    def twice(self, a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        b: pl.Tensor[[64], pl.FP32] = pl.add(a, a)
        return b

    @pl.function
    def main(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        y: pl.Tensor[[64], pl.FP32] = self.twice(x)
        z: pl.Tensor[[64], pl.FP32] = self.twice(y)
        return z
'''
    expected = '''
import pypto.language as pl

@pl.program
class WithInline:
    @pl.function
    def main(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        b: pl.Tensor[[64], pl.FP32] = pl.add(x, x)
        y: pl.Tensor[[64], pl.FP32] = b
        b2: pl.Tensor[[64], pl.FP32] = pl.add(y, y)
        z: pl.Tensor[[64], pl.FP32] = b2
        return z
'''
    after = InlineFunctions().run(pl.parse(src), PassContext())
    ir.assert_structural_equal(after, pl.parse(expected))


def test_unrolled_if_with_constant_condition_keeps_its_results():
    @pl.function
    def f(a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
        acc = pl.mul(a, 1.0)
        for i in pl.unroll(0, 3):
            if i < 1:
                r = pl.yield_(b)
            else:
                r = pl.yield_(a)
            acc = pl.add(acc, r)
        return acc

    compiled = ir.compile(ir.Program("f", (f,)), dump_passes=False,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    torch.testing.assert_close(compiled(a, b), a + b + a + a)


def test_explicit_if_results_are_carried_by_a_later_loop():
    @pl.function
    def f(a: pl.Tensor[[16, 16], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[16, 16], pl.FP32]:
        if n < 5:
            r = pl.yield_(a)
        else:
            r = pl.yield_(pl.neg(a))
        for i in pl.range(3):
            r = pl.add(r, 1.0)  # r (an if result) is carried by the loop
        return r

    compiled = ir.compile(ir.Program("f", (f,)), dump_passes=False)
    a = torch.randn(16, 16)
    torch.testing.assert_close(compiled(a, 1), a + 3.0)
    torch.testing.assert_close(compiled(a, 9), -a + 3.0)


def test_unrolled_body_with_an_inner_loop_round_trips():
    @pl.function
    def f(a: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
        acc = pl.mul(a, 1.0)
        for i in pl.unroll(2):
            for j in pl.range(2):
                t = pl.adds(a, 1.0)  # first bound inside the inner loop, in every unrolled copy
                acc = pl.add(acc, t)
        return acc

    compiled = ir.compile(ir.Program("f", (f,)), dump_passes=False,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    a = torch.randn(16, 16)
    torch.testing.assert_close(compiled(a), a + 4 * (a + 1.0))
