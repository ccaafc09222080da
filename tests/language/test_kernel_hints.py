"""Python habits a kernel body does not support get an error that says what to write instead
(SPEC §2.4; docs/language.md "Errors"): `x.shape`, plain Python helpers, nested `pl.at`, misspelt
enum members; `pl.static_assert` decides conditions on static dimensions at compile time."""

import pytest
import torch
from marker_lines import assert_at

import pypto.language as pl
from pypto.core.errors import ParserError, ParserSyntaxError, ParserTypeError, UndefinedVariableError

M = pl.dynamic("M")


def test_shape_attribute_suggests_the_size_or_pl_dim():
    with pytest.raises(ParserSyntaxError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[[M, 64], pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
            n = x.shape[0]  # MARK-shape-incore
            return y
    assert_at(e.value, __file__, "MARK-shape-incore")
    assert e.value.message == (
        "'x.shape' is not available in a kernel body: x is a tensor of shape [M, 64]; write pl.dim(x, i) for "
        "the size of dimension i (pl.dim(x, 0) for x.shape[0]) or the size itself (a number for a static "
        "dimension, the pl.dynamic variable for a dynamic one (M)). pl.static_assert(pl.dim(x, i) == n) checks "
        "a static size at compile time")
    with pytest.raises(ParserSyntaxError) as e:
        @pl.jit
        def entry(x: pl.Tensor, y: pl.Out[pl.Tensor]):
            n = x.shape[1]  # MARK-shape-orch
            return y
        entry(torch.randn(16, 64), torch.zeros(16, 64))
    assert_at(e.value, __file__, "MARK-shape-orch")
    assert "write pl.dim(x, i) for the size of dimension i (pl.dim(x, 0) for x.shape[0])" in e.value.message
    with pytest.raises(ParserSyntaxError, match=r"'t.dtype' is not available .* write pl.FP32"):
        @pl.function(type=pl.FunctionType.InCore)
        def k2(x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 64])
            d = t.dtype
            return x


def _plain_helper(t):
    return pl.add(t, 1.0)


def _plain_maker():
    return pl.create_tile([16, 64], dtype=pl.FP32)


def test_a_plain_python_helper_suggests_inline():
    inline = ("to use '_plain_helper' as a kernel helper, decorate it with @pl.inline (parameters annotated with "
              "their types) or @pl.jit.inline (a parameter annotated bare pl.Tensor takes the type of its "
              "argument), so its body is spliced in here")
    with pytest.raises(ParserTypeError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = _plain_helper(pl.load(x, [0, 0], [16, 64]))  # MARK-helper
            return pl.store(t, [0, 0], y)
    assert_at(e.value, __file__, "MARK-helper")
    assert e.value.message == ("'_plain_helper' is a Python function, not a PyPTO op or kernel; it cannot take "
                               "IR values; " + inline)
    with pytest.raises(ParserTypeError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def k2(y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = _plain_maker()  # MARK-maker
            return pl.store(t, [0, 0], y)
    assert_at(e.value, __file__, "MARK-maker")
    assert e.value.message.startswith("compile-time call '_plain_maker' failed: pl.create_tile(...) can only be "
                                      "used inside a @pl.function / @pl.jit body; to use '_plain_maker' as a")
    with pytest.raises(ParserTypeError) as e:  # a builtin is not a helper to decorate: the op to use instead
        @pl.function(type=pl.FunctionType.InCore)
        def k3(x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
            n = abs(x)
            return x
    assert e.value.message == ("'abs' is a Python function, not a PyPTO op or kernel; it cannot take IR values; "
                               "use pl.abs(x)")


def test_static_assert_decides_static_dimensions_at_compile_time():
    @pl.function(type=pl.FunctionType.InCore)
    def ok(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        pl.static_assert(pl.dim(x, 1) == 64)
        pl.static_assert(pl.dim(x, 0) * 4 == pl.dim(x, 1) and pl.dim(x, -1) % 32 == 0, "blocks of 32")
        return pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], y)

    assert "static_assert" not in ok.as_python()  # nothing is left in the IR
    with pytest.raises(ParserError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def bad(x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
            pl.static_assert(pl.dim(x, 1) == 128, "x must have 128 columns")  # MARK-static-fail
            return x
    assert_at(e.value, __file__, "MARK-static-fail")
    assert e.value.message == "static_assert failed: x must have 128 columns"
    with pytest.raises(ParserTypeError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def dyn(x: pl.Tensor[[M, 64], pl.FP32]) -> pl.Tensor[[M, 64], pl.FP32]:
            pl.static_assert(pl.dim(x, 0) == 64)  # MARK-static-dyn
            return x
    assert_at(e.value, __file__, "MARK-static-dyn")
    assert e.value.message == ("pl.static_assert needs a condition known at compile time; 'pl.dim(x, 0) == 64' "
                               "depends on a run-time value (a pl.dynamic dimension, a scalar parameter or a "
                               "loop variable)")


def test_a_static_dimension_of_a_partly_dynamic_tensor_is_static():
    """A user trial: `pl.static_assert(pl.dim(x, 1) == 64)` on `x: [M, 64]` was refused as run-time."""
    @pl.function(type=pl.FunctionType.InCore)
    def ok(x: pl.Tensor[[M, 64], pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
        pl.static_assert(pl.dim(x, 1) == 64)
        pl.static_assert(pl.dim(x, -1) // 32 == 2, "two blocks of 32")
        return y

    assert "static_assert" not in ok.as_python()
    with pytest.raises(ParserError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def bad(x: pl.Tensor[[M, 64], pl.FP32]) -> pl.Tensor[[M, 64], pl.FP32]:
            pl.static_assert(pl.dim(x, 1) == 128, "x must have 128 columns")  # MARK-partly-dyn-fail
            return x
    assert type(e.value) is ParserError
    assert e.value.message == "static_assert failed: x must have 128 columns"
    assert_at(e.value, __file__, "MARK-partly-dyn-fail")


def test_pl_unroll_over_a_static_dimension_of_a_partly_dynamic_tensor():
    """`pl.unroll(pl.dim(x, 1) // 32)`: the bound is a compile-time constant (Simplify folds a static
    dimension query), for a static and for a partly dynamic tensor."""
    from pypto import ir

    for rows in (16, M):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[rows, 64], pl.FP32],
                     o: pl.Out[pl.Tensor[[rows, 64], pl.FP32]]) -> pl.Tensor[[rows, 64], pl.FP32]:
                for j in pl.unroll(pl.dim(x, 1) // 32):
                    with pl.at(level=pl.Level.CORE_GROUP):
                        t = pl.load(x, [0, j * 32], [16, 32])
                        o = pl.store(pl.muls(t, 2.0), [0, j * 32], o)
                return o

        compiled = ir.compile(P, dump_passes=False, skip_ptoas=True)
        x, o = torch.randn(16, 64), torch.zeros(16, 64)
        compiled(x, o)
        torch.testing.assert_close(o, 2 * x)


def test_pl_at_does_not_nest_in_incore_code():
    with pytest.raises(ParserSyntaxError) as e:
        @pl.function
        def f(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):  # MARK-outer-at
                with pl.at(level=pl.Level.CORE_GROUP):  # MARK-inner-at
                    y[:] = pl.add(x, 1.0)
            return y
    assert_at(e.value, __file__, "MARK-inner-at")
    outer = e.value.span.begin_line - 1
    assert e.value.message == (
        f"pl.at inside InCore code: this code is already in the InCore region of the pl.at at line {outer} "
        f"(put any optimizations on that one), and InCore regions do not nest; remove this 'with pl.at(...)'")
    with pytest.raises(ParserSyntaxError) as e:
        @pl.jit.incore
        def kern(x: pl.Tensor, y: pl.Out[pl.Tensor]):
            with pl.at(level=pl.Level.CORE_GROUP):  # MARK-at-in-kernel
                y[:] = pl.add(x, 1.0)
            return y

        @pl.jit
        def entry(x: pl.Tensor, y: pl.Out[pl.Tensor]):
            y = kern(x, y)
            return y
        entry(torch.randn(16, 64), torch.zeros(16, 64))
    assert_at(e.value, __file__, "MARK-at-in-kernel")
    assert e.value.message.startswith("pl.at inside InCore code: this code is already the body of InCore "
                                      "function 'kern', which runs on the cores")


LEVELS = "pl.Level has AIV, AIC, CORE_GROUP, CHIP_DIE, CHIP, HOST, CLUSTER_0, CLUSTER_1, CLUSTER_2, GLOBAL"


def test_a_misspelt_enum_member_lists_the_valid_ones():
    with pytest.raises(UndefinedVariableError) as e:
        @pl.function
        def f(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE):  # MARK-level-typo
                y[:] = pl.add(x, 1.0)
            return y
    assert_at(e.value, __file__, "MARK-level-typo")
    assert e.value.message == (f"Undefined name 'pl.Level.CORE': pl.Level has no member 'CORE'; did you mean "
                               f"pl.Level.CORE_GROUP? ({LEVELS})")
    with pytest.raises(AttributeError) as e:  # evaluated by Python itself, before PyPTO sees the kernel
        pl.jit.incore(level=pl.Level.CORE)
    assert str(e.value) == f"pl.Level has no member 'CORE'; did you mean pl.Level.CORE_GROUP? ({LEVELS})"
    with pytest.raises(UndefinedVariableError, match=r"pl.Mem has no member 'Vect'; did you mean pl.Mem.Vec\?"):
        @pl.function(type=pl.FunctionType.InCore)
        def g(x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:
            t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vect] = pl.load(x, [0, 0], [16, 64])
            return x
    assert not hasattr(pl.Level, "CORE") and pl.Level.CORE_GROUP.level_number == 0


def test_a_tile_op_given_pl_full_names_the_tile_form():
    """pl.full / pl.create_tensor with no Tile argument build a DDR tensor; handed to a tile op in a
    tile-level kernel the error says so and names pl.tile.full / pl.create_tile (not "load it first")."""
    with pytest.raises(ParserTypeError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 64])
            f = pl.full([16, 64], 2.0, dtype=pl.FP32)
            r = pl.add(t, f)  # MARK-full-tile
            return pl.store(r, [0, 0], y)
    assert_at(e.value, __file__, "MARK-full-tile")
    assert e.value.message == (
        "tile.add: argument 'rhs' must be a Tile, got Tensor; 'f' is a Tensor: pl.full(...) with no Tile "
        "argument builds a DDR tensor (pl.tensor.full); in a tile-level kernel write pl.tile.full(...) to "
        "build a tile")
    with pytest.raises(ParserTypeError, match=r"pl.create_tensor\(\.\.\.\) with no Tile argument .* write "
                                              r"pl.create_tile\(\.\.\.\)"):
        @pl.function(type=pl.FunctionType.InCore)
        def k2(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 64])
            return pl.store(pl.add(t, pl.create_tensor([16, 64], dtype=pl.FP32)), [0, 0], y)


def test_pl_tile_full_in_a_tile_level_kernel_runs():
    @pl.program
    class FullAdd:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 64])
            f = pl.tile.full([16, 64], 2.0, dtype=pl.FP32)
            return pl.store(pl.add(t, f), [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            y = self.k(x, y)
            return y
    from pypto import ir
    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    ir.compile(FullAdd, dump_passes=False)(x, y)
    assert torch.equal(y, x + 2.0)
