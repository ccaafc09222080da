"""A function that declares return types (`-> T`) must return them: a body without any `return`
is a located ParserSyntaxError at the function (new-user trial: it was accepted silently). A body
of only `...` (the language guide's signature examples) and a function without a return annotation
stay accepted."""

import pytest
from marker_lines import assert_at

import pypto.language as pl
from pypto.core.errors import ParserSyntaxError, ParserTypeError


def test_a_declared_return_without_a_return_statement_is_located_at_the_function():
    with pytest.raises(ParserSyntaxError) as info:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 128], pl.FP32],  # MARK-no-return
                  out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
                t = pl.load(a, [0, 0], [64, 128])
                out = pl.store(t, [0, 0], out)
    assert info.value.message == "function 'k' declares 1 return value but has no return statement"
    assert_at(info.value, __file__, "MARK-no-return")


def test_two_declared_values_and_one_returned_count_both():
    with pytest.raises(ParserTypeError) as info:
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32]) -> tuple[pl.Tensor[[64], pl.FP32], pl.Tensor[[64], pl.FP32]]:  # MARK-two
            return a
    assert info.value.message == "function 'f' declares 2 return values but returns 1"
    assert_at(info.value, __file__, "MARK-two")


def test_a_signature_only_body_and_an_unannotated_function_are_accepted():
    @pl.function
    def declared(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        """Only the signature."""
        ...

    @pl.function
    def no_annotation(a: pl.Tensor[[64], pl.FP32], out: pl.Out[pl.Tensor[[64], pl.FP32]]):
        out = pl.add(a, 1.0)

    assert len(declared.return_types) == 1 and len(no_annotation.return_types) == 0


@pl.inline
def _forgets_to_return(t: pl.Tile[[16, 64], pl.FP32]) -> pl.Tile[[16, 64], pl.FP32]:  # MARK-inline
    _u = pl.mul(t, t)


def test_an_inline_helper_that_declares_a_value_must_return_it():
    with pytest.raises(ParserSyntaxError) as info:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[[16, 64], pl.FP32], y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
            s = _forgets_to_return(pl.load(x, [0, 0], [16, 64]))
            y = pl.store(s, [0, 0], y)
    assert info.value.message == ("inline function '_forgets_to_return' declares 1 return value but has "
                                  "no return statement")
    assert_at(info.value, __file__, "MARK-inline")
