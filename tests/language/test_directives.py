"""Directives and helpers of upstream's `pl` (SPEC §13): plain `while` loops, f-strings in
`pl.static_print`, `pl.Scalar(dtype)`, `pl.Tuple[...]`, `pl.RUNTIME`, `JITFunction.lower`."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserSyntaxError, ParserTypeError


@pl.program
class WhileBlocks:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
          c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        i = 0
        acc = pl.tile.full([16, 64], 0.0, dtype=pl.FP32)
        while i < n:
            t = pl.load(a, [i * 16, 0], [16, 64])
            acc = pl.add(acc, t)
            i = i + 1
        c = pl.store(acc, [0, 0], c)
        return c


def test_plain_while_loop_prints_parses_and_runs():
    text = WhileBlocks.as_python()
    assert "        while i < n:\n" in text
    ir.assert_structural_equal(WhileBlocks, pl.parse(text))
    cp = ir.compile(WhileBlocks, skip_ptoas=True, dump_passes=False)
    a = torch.randn(64, 64)
    for n in (0, 1, 3, 4):
        c = torch.full((64, 64), 7.0)
        cp(a, n, c)
        want = a[: 16 * n].reshape(n, 16, 64).sum(0) if n else torch.zeros(16, 64)
        torch.testing.assert_close(c[:16], want)


def test_while_condition_must_be_bool_and_else_is_refused():
    with pytest.raises(ParserTypeError, match="while condition must be a Bool-typed scalar"):
        @pl.function
        def f(n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:
            while n:
                n = n - 1
            return n

    with pytest.raises(ParserSyntaxError, match="while ... else is not supported"):
        @pl.function
        def g(n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:
            while n > 0:
                n = n - 1
            else:
                n = n + 1
            return n


WIDTH = 2.5


def test_static_print_f_string(capsys):
    @pl.function(type=pl.FunctionType.InCore)
    def k(a: pl.Tensor[[16, 64], pl.FP32], c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 64])
        pl.static_print(f"t={t} w={WIDTH:.1f} r={WIDTH!r}")
        c = pl.store(t, [0, 0], c)
        return c

    out = capsys.readouterr().out
    assert "static_print: t=pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec] w=2.5 r=2.5" in out
    assert out.startswith(f"{__file__}:")


def test_scalar_call_spelling_and_tuple_annotation():
    @pl.function
    def f(x: pl.Scalar(pl.INT32)) -> pl.Tuple[pl.Scalar[pl.INT32], pl.Scalar[pl.INT32]]:
        return x, x + 1

    @pl.function
    def g(x: pl.Scalar[pl.INT32]) -> tuple[pl.Scalar[pl.INT32], pl.Scalar[pl.INT32]]:
        return x, x + 1

    ir.assert_structural_equal(f, g)
    assert len(f.return_types) == 2


@pl.jit
def scale_by(x: pl.Tensor, y: pl.Out[pl.Tensor], s: pl.RUNTIME):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.mul(x, pl.cast(s, pl.FP32))
    return y


def test_runtime_scalar_takes_its_dtype_from_the_value_and_is_not_specialised():
    x = torch.randn(16, 64)
    y = torch.zeros(16, 64)
    scale_by(x, y, 3.0)
    torch.testing.assert_close(y, x * 3.0)
    scale_by(x, y, 0.5)
    torch.testing.assert_close(y, x * 0.5)
    assert len(scale_by._cache) == 1  # one build serves every value
    scale_by(x, y, 2)                 # an int gives an INT64 scalar: a second build
    torch.testing.assert_close(y, x * 2.0)
    assert len(scale_by._cache) == 2
    prog = scale_by.specialize(x, y, 2)
    assert prog.get_function("scale_by").params[2].type.dtype == pl.INT64
    with pytest.raises(TypeError, match="'s' is pl.RUNTIME: it expects a Python bool, int or float"):
        scale_by.specialize(x, y, "3")


def test_bare_runtime_outside_jit_needs_a_dtype():
    with pytest.raises(ParserTypeError, match=r"elsewhere write pl.RUNTIME\[dtype\]"):
        @pl.function
        def f(x: pl.RUNTIME) -> pl.Scalar[pl.INT64]:
            return x

    @pl.function
    def g(x: pl.RUNTIME[pl.INT64]) -> pl.Scalar[pl.INT64]:
        return x

    assert g.params[0].type.dtype == pl.INT64


def test_jit_lower_returns_the_lowered_program_without_building():
    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    before = len(scale_by._cache)
    low = scale_by.lower(x, y, 1.5)
    assert isinstance(low, ir.Program)
    assert before == len(scale_by._cache)
    incore = [f for f in low.functions if f.func_type is pl.FunctionType.InCore]
    assert incore and "pl.tile.load" in low.as_python() and "MemRef" in low.as_python()
