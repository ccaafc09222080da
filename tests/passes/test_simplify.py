"""Before/Expected tests of Simplify (constant folding of scalar index expressions)."""

from dataclasses import replace

import pypto.language as pl
from pypto import ir
from pypto.core.dtype import INDEX, INT8, UINT8
from pypto.passes.base import PassContext
from pypto.passes.simplify import Simplify, simplify_expr


def run(prog):
    return Simplify().run(prog, PassContext())


def test_index_arithmetic_folds_and_reassociates():
    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            for i in pl.range(0, 2 * 2):
                t = pl.load(x, [(i + 1) * 16 - 16 + 0, 0 * i], [16, 16])
                u = pl.add(t, t)
                y = pl.store(u, [((i * 4) * 4 + 3) - 3, 8 // 8 - 1], y)
            return y

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            for i in pl.range(0, 4):
                t = pl.load(x, [i * 16, 0], [16, 16])
                u = pl.add(t, t)
                y = pl.store(u, [i * 16, 0], y)
            return y

    out = run(Before)
    ir.assert_structural_equal(out, Expected)
    assert run(out) is out  # a fixed point: nothing left to rewrite
    assert run(Expected) is Expected


def test_conditions_and_comparisons_fold():
    @pl.program
    class Before:
        @pl.function
        def f(self, a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            r = pl.mul(a, 1.0)
            if (n + 0 > 2) and (3 > 1 + 1):
                r = pl.add(r, 1.0)
            if n - n == 0 or n > 7:
                r = pl.add(r, 2.0)
            return r

    @pl.program
    class Expected:
        @pl.function
        def f(self, a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            r = pl.mul(a, 1.0)
            if n > 2:
                r = pl.add(r, 1.0)
            if True:
                r = pl.add(r, 2.0)
            return r

    ir.assert_structural_equal(run(Before), Expected)


def _idx(v):
    return ir.ConstInt(v, INDEX)


def test_folding_follows_simulator_integer_semantics():
    # floor division and modulo round toward -inf (Python), like the simulator
    e = ir.BinaryExpr("floordiv", _idx(-7), _idx(2), INDEX)
    assert simplify_expr(e).value == -4
    e = ir.BinaryExpr("floormod", _idx(-7), _idx(2), INDEX)
    assert simplify_expr(e).value == 1
    # integer results wrap to the dtype's width
    e = ir.BinaryExpr("add", ir.ConstInt(100, INT8), ir.ConstInt(100, INT8), INT8)
    assert simplify_expr(e).value == -56
    e = ir.BinaryExpr("sub", ir.ConstInt(1, UINT8), ir.ConstInt(2, UINT8), UINT8)
    assert simplify_expr(e).value == 255
    # never folded: division by zero (a run-time error), float arithmetic (rounding)
    e = ir.BinaryExpr("floordiv", _idx(1), _idx(0), INDEX)
    assert simplify_expr(e) is e
    f = ir.BinaryExpr("add", ir.ConstFloat(0.1), ir.ConstFloat(0.2), pl.FP32)
    assert simplify_expr(f) is f


def test_identities_keep_types():
    x = ir.Var("x", ir.ScalarType(pl.INT32))
    # x + 0 with an INDEX constant has dtype INDEX: replacing it by the INT32 x would change the type
    e = ir.BinaryExpr("add", x, _idx(0), INDEX)
    assert simplify_expr(e) is e
    e = ir.BinaryExpr("add", x, ir.ConstInt(0, pl.INT32), pl.INT32)
    assert simplify_expr(e) is x
    n = ir.UnaryExpr("neg", ir.UnaryExpr("neg", x, pl.INT32), pl.INT32)
    assert simplify_expr(n) is x


def test_constant_if_with_results_is_replaced_by_its_branch():
    @pl.program
    class Before:
        @pl.function
        def f(self, a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            r = pl.mul(a, 1.0)
            if n - n != 0:
                r1 = pl.add(r, 2.0)
                r2 = pl.yield_(r1)
            else:
                r2 = pl.yield_(r)
            r3 = pl.add(r2, 3.0)
            return r3

    @pl.program
    class Expected:
        @pl.function
        def f(self, a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            r = pl.mul(a, 1.0)
            r3 = pl.add(r, 3.0)
            return r3

    ir.assert_structural_equal(run(Before), Expected)


def test_a_static_dimension_query_folds_and_a_dynamic_one_stays():
    M = pl.dynamic("M")

    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.Orchestration)
        def f(self, x: pl.Tensor[[M, 64], pl.FP32]) -> pl.Scalar[pl.INDEX]:
            n = pl.dim(x, 1) // 32 + pl.dim(x, 0)
            return n

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.Orchestration)
        def f(self, x: pl.Tensor[[M, 64], pl.FP32]) -> pl.Scalar[pl.INDEX]:
            n = pl.dim(x, 0) + 2
            return n

    out = run(Before)
    ir.assert_structural_equal(out, Expected)
    assert run(out) is out


T = pl.Tensor[[8, 64], pl.FP32]


def _tuple_program():
    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: T, o1: pl.Out[T], o2: pl.Out[T]) -> tuple[T, T]:
            t = [pl.store(pl.load(a, [0, 0], [8, 64]), [0, 0], o1), o2]
            x = t[0]
            y = t[1]
            return x, y

    return Before


def test_tuple_read_element_wise_is_taken_apart():
    # an inline helper's multiple returns: `t = [a, b]; x = t[0]; y = t[1]` (kernels have no tuples)
    Before = _tuple_program()

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: T, o1: pl.Out[T], o2: pl.Out[T]) -> tuple[T, T]:
            t_0 = pl.store(pl.load(a, [0, 0], [8, 64]), [0, 0], o1)
            x = t_0
            y = o2
            return x, y

    out = run(Before)
    ir.assert_structural_equal(out, Expected)
    assert run(out) is out


def test_tuple_read_as_a_whole_is_kept():
    prog = _tuple_program()
    k = prog.functions[0]
    stmts = k.body.stmts
    t, x = stmts[0].var, stmts[1].var
    assert isinstance(stmts[0].value, ir.MakeTuple)
    # `return x, t`: `t` is also read as a whole, so its binding stays a tuple
    body = replace(k.body, stmts=(*stmts[:-1], ir.ReturnStmt((x, t))))
    whole = replace(prog, functions=(replace(k, body=body),))
    assert run(whole) is whole
