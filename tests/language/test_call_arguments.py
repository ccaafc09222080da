"""Calls of program functions (`self.k(...)`) check each argument against the callee's parameter:
a tensor of another dtype, rank or static size is a located ParserTypeError at the call, not a
kernel meeting the wrong tensor at run time (found by benchmarks/stress.py, mutant-compile)."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError

SRC = '''
import pypto.language as pl

M = pl.dynamic("M")

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[{K}, 32], pl.FP32], n: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 32])
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[{X}, pl.{DT}], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        y = self.k({ARGS}, y)
        return y
'''


def program(k="64", x="[64, 32]", dt="FP32", args="x, 2"):
    return SRC.replace("{K}", k).replace("{X}", x).replace("{DT}", dt).replace("{ARGS}", args)


@pytest.mark.parametrize(("k", "x", "dt", "args", "got"), [
    ("64", "[6432]", "FP32", "x, 2", "pl.Tensor[[6432], pl.FP32]"),       # rank
    ("48", "[64, 32]", "FP32", "x, 2", "pl.Tensor[[64, 32], pl.FP32]"),     # static size
    ("64", "[64, 32]", "FP16", "x, 2", "pl.Tensor[[64, 32], pl.FP16]"),    # dtype
    ("64", "[64, 32]", "FP32", "x, x", "pl.Tensor[[64, 32], pl.FP32]"),    # tensor for a scalar
])
def test_an_argument_the_parameter_cannot_take_is_located_at_the_call(k, x, dt, args, got):
    with pytest.raises(ParserTypeError) as info:
        pl.parse(program(k, x, dt, args))
    e = info.value
    assert e.span is not None and e.span.begin_line == 17   # the line of `y = self.k(...)`
    assert "of 'k' expects" in e.message and e.message.endswith(f"got {got}")


def test_a_dynamic_parameter_dimension_takes_any_size():
    prog = pl.parse(program(k="M"))
    x, y = torch.randn(64, 32), torch.zeros(16, 32)
    ir.compile(prog, dump_passes=False, skip_ptoas=True)(x, y)
    torch.testing.assert_close(y, x[:16])
