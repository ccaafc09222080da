"""Compile-time constant arguments of inline helpers: an enum member, a string or None is passed as
the Python object itself (it can steer `if` statements in the helper at compile time); Python ints,
floats and bools become IR constants (SPEC §9 inline functions)."""

import pytest
import torch

import pypto.language as pl
import pypto.language.distributed as pld
from pypto.core.errors import ParserTypeError


@pl.jit.inline
def combine(a, o, op, scale, flag, mode):
    t = pl.load(a, [0, 0], [8, 64])
    if flag:
        t = pl.mul(t, scale)
    if mode == "neg":
        t = pl.neg(t)
    if op == pld.ReduceOp.Max:
        o = pl.store(pl.maximum(t, pl.exp(t)), [0, 0], o)
    else:
        o = pl.store(pl.add(t, pl.exp(t)), [0, 0], o)
    return o


@pl.jit.incore
def k_max(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = combine(a, o, pld.ReduceOp.Max, 3.0, True, "neg")
    return o


@pl.jit.incore
def k_sum(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = combine(a, o, pld.ReduceOp.Sum, 2.0, False, None)
    return o


@pl.jit
def f_max(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = k_max(a, o)
    return o


@pl.jit
def f_sum(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = k_sum(a, o)
    return o


def test_jit_inline_takes_enum_string_and_number_arguments():
    a = torch.randn(8, 64)
    o = torch.zeros(8, 64)
    f_max(a, o)
    t = -(a * 3.0)
    torch.testing.assert_close(o, torch.maximum(t, torch.exp(t)))
    f_sum(a, o)
    torch.testing.assert_close(o, a + torch.exp(a))


@pl.inline
def pick(a: pl.Tensor[[8, 64], pl.FP32], o: pl.Out[pl.Tensor[[8, 64], pl.FP32]], op: pld.ReduceOp):
    t = pl.load(a, [0, 0], [8, 64])
    if op == pld.ReduceOp.Max:
        t = pl.exp(t)
    o = pl.store(t, [0, 0], o)
    return o


@pl.jit.incore
def k_pick(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = pick(a, o, pld.ReduceOp.Max)
    return o


@pl.jit
def f_pick(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = k_pick(a, o)
    return o


def test_annotated_inline_parameter_takes_an_enum():
    a = torch.randn(8, 64)
    o = torch.zeros(8, 64)
    f_pick(a, o)
    torch.testing.assert_close(o, torch.exp(a))


@pl.jit.inline
def plain(a, o):
    o = pl.store(pl.load(a, [0, 0], [8, 64]), [0, 0], o)
    return o


@pl.jit.incore
def k_bad(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = plain(a, pld.ReduceOp.Max)  # an enum where the helper needs a tensor
    return o


@pl.jit
def f_bad(a: pl.Tensor, o: pl.Out[pl.Tensor]):
    o = k_bad(a, o)
    return o


def test_enum_used_as_a_value_is_still_an_error():
    with pytest.raises(ParserTypeError, match=r"test_inline_static_args.py:\d+:\d+: error: expected a value, got ReduceOp"):
        f_bad(torch.randn(8, 64), torch.zeros(8, 64))
