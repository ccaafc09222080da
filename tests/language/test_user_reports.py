"""Regressions found by trying the project as a new user (second round)."""

import torch

import pypto.language as pl
from pypto import ir

K = pl.dynamic("K")
R, C = 16, 32


def test_carried_tile_whose_initial_value_is_also_used_elsewhere():
    @pl.jit
    def g(x: pl.Tensor, z: pl.Out[pl.Tensor], w: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            s = pl.load(x, [0, 0], [R, C])
            z = pl.store(s, [0, 0], z)  # a second use of the loop's initial value
            for i in pl.range(3):
                s = pl.adds(s, 1.0)
            w = pl.store(s, [0, 0], w)
        return z, w

    x, z, w = torch.randn(R, C), torch.zeros(R, C), torch.zeros(R, C)
    g(x, z, w)
    torch.testing.assert_close(z, x)
    torch.testing.assert_close(w, x + 3.0)


def test_variable_first_assigned_in_both_branches_is_visible_after_the_if():
    @pl.jit
    def k(a: pl.Tensor, flag: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.load(a, [0, 0], [R, C])
            if flag > 0:
                r = pl.exp(t)
            else:
                r = pl.neg(t)
            y = pl.store(r, [0, 0], y)
        return y

    a = torch.randn(R, C)
    for flag, ref in ((1, torch.exp(a)), (0, -a)):
        y = torch.zeros(R, C)
        k(a, flag, y)
        torch.testing.assert_close(y, ref)


def test_dynamic_dims_in_expressions_print_parse_and_run():
    @pl.function(type=pl.FunctionType.InCore)
    def k(x: pl.Tensor[[16, K], pl.FP32], y: pl.Out[pl.Tensor[[16, K], pl.FP32]]) -> pl.Tensor[[16, K], pl.FP32]:
        for j in pl.range(K // 16):
            t = pl.load(x, [0, j * 16], [16, 16])
            y = pl.store(t, [0, j * 16], y)
        return y

    text = k.as_python()
    assert "pl.range(0, K // 16, 1)" in text and "K_1" not in text
    ir.assert_structural_equal(pl.parse(text), k)
    compiled = ir.compile(ir.Program("k", (k,)), dump_passes=False,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    for cols in (16, 48):
        x, y = torch.randn(16, cols), torch.zeros(16, cols)
        compiled(x, y)
        torch.testing.assert_close(y, x)


def test_tuple_assignment_is_simultaneous():
    @pl.jit
    def fib(a: pl.Tensor, b: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            ta = pl.load(a, [0, 0], [8, 16])
            tb = pl.load(b, [0, 0], [8, 16])
            for i in pl.range(3):
                ta, tb = tb, pl.add(ta, tb)
            y = pl.store(tb, [0, 0], y)
        return y

    a, b, y = torch.randn(8, 16), torch.randn(8, 16), torch.zeros(8, 16)
    fib(a, b, y)
    x0, x1 = a, b
    for _ in range(3):
        x0, x1 = x1, x0 + x1
    torch.testing.assert_close(y, x1)


def test_tensor_broadcasting_lowers_to_row_and_col_expansion():
    @pl.jit
    def f(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.sub(pl.add(a, b), c)  # [32, 64] + [1, 64] - [32, 1]
        return y

    @pl.jit
    def g(b: pl.Tensor, c: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.mul(c, b)  # [32, 1] * [1, 64]: neither operand has the result's shape
        return y

    a, b, c = torch.randn(32, 64), torch.randn(1, 64), torch.randn(32, 1)
    y, y2 = torch.zeros(32, 64), torch.zeros(32, 64)
    f(a, b, c, y)
    g(b, c, y2)
    torch.testing.assert_close(y, a + b - c)
    torch.testing.assert_close(y2, c * b)


def test_create_tensor_in_an_incore_region_starts_at_zero():
    @pl.function
    def sum_16(data: pl.Tensor[[16], pl.FP32]) -> pl.Tensor[[1], pl.FP32]:
        init_sum = pl.create_tensor([1], dtype=pl.FP32)
        for i, (rs,) in pl.range(16, init_values=(init_sum,)):
            out = pl.yield_(pl.add(rs, pl.slice(data, [1], [i])))
        return out

    compiled = ir.compile(ir.Program("s", (sum_16,)), dump_passes=False)
    assert "pl.tile.full([1], 0.0" in compiled.program.as_python()
    d = torch.randn(16)
    torch.testing.assert_close(compiled(d), d.sum().reshape(1), rtol=1e-5, atol=1e-5)


RB = 16


@pl.inline
def _emit_block(x: pl.Tensor[[64, 32], pl.FP32], b: pl.Scalar[pl.INDEX],
                y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]):
    y[b * RB:(b + 1) * RB, :] = pl.mul(x[b * RB:(b + 1) * RB, :], 2.0)


def test_symbolic_slice_bounds_and_inline_helper_without_return():
    @pl.function
    def f(x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for b in pl.range(4):
            _emit_block(x, b, y)  # called as a statement
        return y

    assert "pl.tensor.slice(x, [16, 32], [b * 16, 0])" in f.as_python()
    x, y = torch.randn(64, 32), torch.zeros(64, 32)
    ir.compile(ir.Program("f", (f,)), dump_passes=False)(x, y)
    torch.testing.assert_close(y, x * 2)


def test_tile_subscript_slicing():
    @pl.function(type=pl.FunctionType.InCore)
    def k(x: pl.Tensor[[32, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [32, 32])
        u = t[16:32, :]
        y = pl.store(u, [0, 0], y)
        return y

    assert "pl.tile.slice(t, [16, 32], [16, 0]" in k.as_python()
    x, y = torch.randn(32, 32), torch.zeros(16, 32)
    ir.compile(ir.Program("k", (k,)), dump_passes=False)(x, y)
    torch.testing.assert_close(y, x[16:32])


M_DYN = pl.dynamic("M")


def test_computed_valid_shapes_round_trip_through_annotations():
    @pl.function(type=pl.FunctionType.InCore)
    def k(x: pl.Tensor[[M_DYN, 64], pl.FP32], y: pl.Out[pl.Tensor[[M_DYN, 64], pl.FP32]]) -> pl.Tensor[[M_DYN, 64], pl.FP32]:
        for i in pl.range(0, M_DYN, 16):
            t = pl.load(x, [i, 0], [16, 64], valid_shape=[pl.min(16, M_DYN - i), 64])
            y = pl.store(pl.mul(t, 2.0), [i, 0], y)
        return y

    text = k.as_python()
    assert "pl.TileView(valid_shape=[pl.min(16, M - i), 64]" in text
    ir.assert_structural_equal(pl.parse(text), k)
    c = ir.compile(ir.Program("k", (k,)), dump_passes=False, verification_level=ir.VerificationLevel.ROUNDTRIP)
    for m in (16, 40):
        x, y = torch.randn(m, 64), torch.zeros(m, 64)
        c(x, y)
        torch.testing.assert_close(y, 2 * x)


def test_names_rebound_in_one_branch_keep_python_semantics():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], n: pl.Scalar[pl.INDEX],
              y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t0 = pl.load(x, [0, 0], [16, 16])
            for i, (acc,) in pl.range(3, init_values=(t0,)):
                if n < 2:
                    acc = pl.muls(acc, 2.0)  # rebinding the carried value in one branch only
                nxt = pl.adds(acc, 1.0)
                out = pl.yield_(nxt)
            y = pl.store(out, [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], n: pl.Scalar[pl.INDEX],
                 y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            y = self.k(x, n, y)
            return y

    compiled = ir.compile(P, dump_passes=False, verification_level=ir.VerificationLevel.ROUNDTRIP)
    x = torch.randn(16, 16)
    for n in (0, 5):
        ref = x.clone()
        for _ in range(3):
            ref = (ref * 2.0 if n < 2 else ref) + 1.0
        y = torch.zeros(16, 16)
        compiled(x, n, y)
        torch.testing.assert_close(y, ref)


def test_partial_slices_lower_to_partial_loads():
    @pl.function
    def f(x: pl.Tensor[[M_DYN, 32], pl.FP32], y: pl.Out[pl.Tensor[[M_DYN, 32], pl.FP32]]) -> pl.Tensor[[M_DYN, 32], pl.FP32]:
        for i in pl.range(0, M_DYN, 16):
            rows = pl.min(16, M_DYN - i)
            blk = pl.slice(x, [16, 32], [i, 0], valid_shape=[rows, 32])
            y = pl.assemble(y, pl.mul(blk, 2.0), [i, 0])
        return y

    c = ir.compile(ir.Program("f", (f,)), dump_passes=False, verification_level=ir.VerificationLevel.ROUNDTRIP)
    assert "TileView(valid_shape=[rows, 32]" in c.program.as_python()
    for m in (16, 40):  # 40 rows: the last block holds 8
        x, y = torch.randn(m, 32), torch.zeros(m, 32)
        c(x, y)
        torch.testing.assert_close(y, 2 * x)
