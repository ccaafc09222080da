"""Calls inside kernel bodies bind their arguments like Python calls (parser/call_binding.py):
keyword arguments that name a parameter, and Python defaults of the callee's parameters, for
program functions (`self.k(a, o=o)`), `@pl.jit` sub-functions and inline helpers; a `@pl.jit`
entry's own defaults fill arguments its caller leaves out."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError

H = [16, 64]


@pl.jit.incore
def _shift(x: pl.Tensor, y: pl.Out[pl.Tensor], s: pl.Scalar[pl.FP32] = 1.0):
    y[:] = pl.add(x, s)
    return y


@pl.jit.inline
def _scaled(x, scale=2.0):
    return pl.mul(x, scale)


def test_jit_sub_function_and_inline_helper_keywords_and_defaults():
    @pl.jit
    def k(x: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor], w: pl.Out[pl.Tensor]):
        y = _shift(x, y=y)                 # s takes its default 1.0
        z = _shift(s=4.0, y=z, x=x)
        with pl.at(level=pl.Level.CORE_GROUP):
            w[:] = pl.add(_scaled(x), _scaled(x, scale=3.0))
        return y, z, w

    x = torch.randn(16, 64)
    y, z, w = torch.zeros(16, 64), torch.zeros(16, 64), torch.zeros(16, 64)
    k(x, y, z, w)
    torch.testing.assert_close(y, x + 1.0)
    torch.testing.assert_close(z, x + 4.0)
    torch.testing.assert_close(w, 2.0 * x + 3.0 * x)


def test_program_function_keywords():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            o = pl.store(pl.exp(pl.load(a, [0, 0], H)), [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            o = self.k(o=o, a=a)
            return o

    a, o = torch.randn(*H), torch.zeros(*H)
    ir.compile(P, dump_passes=False, skip_ptoas=True)(a, o)
    torch.testing.assert_close(o, torch.exp(a))


def test_entry_defaults_fill_left_out_arguments():
    @pl.jit
    def k(x: pl.Tensor, y: pl.Out[pl.Tensor], s: pl.Scalar[pl.FP32] = 2.0):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.mul(x, s)
        return y

    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    k(x, y)
    torch.testing.assert_close(y, 2.0 * x)
    k(x, y, 3.0)
    torch.testing.assert_close(y, 3.0 * x)
    assert len(k._cache) == 1


@pytest.mark.parametrize("call,message", [
    ("_shift(x, y, s=2.0, y=y)", "'_shift' got multiple values for argument 'y'"),
    ("_shift(x)", "'_shift' is missing argument 'y'"),
    ("_shift(x, y, scale=2.0)", "'_shift' got an unexpected keyword argument 'scale' (its parameters: x, y, s; "
                                "a call also takes deps=[...])"),
])
def test_binding_errors_name_the_argument(tmp_path, call, message):
    import importlib.util
    import sys

    src = tmp_path / "bad_call.py"
    src.write_text("import pypto.language as pl\nfrom test_call_keywords import _shift\n\n\n@pl.jit\n"
                   "def k(x: pl.Tensor, y: pl.Out[pl.Tensor]):\n"
                   f"    y = {call}\n"
                   "    return y\n")
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    try:
        spec = importlib.util.spec_from_file_location("bad_call", src)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with pytest.raises(ParserTypeError) as e:
            mod.k(torch.randn(16, 64), torch.zeros(16, 64))
    finally:
        sys.path.remove(__file__.rsplit("/", 1)[0])
    assert e.value.message == message
    assert e.value.span.begin_line == 7
