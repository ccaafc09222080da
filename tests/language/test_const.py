"""`pl.const(value, dtype)` (SPEC §13 "Directives and helpers"): a typed scalar constant in kernels."""

import sys
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.language.parser.diagnostics import ParserTypeError

sys.path.insert(0, str(Path(__file__).parents[1] / "ops"))
from op_harness import kernel_program, run_kernel  # noqa: E402

BODY = """
ta = pl.load(a, [pl.const(16, pl.INT32), 0], [16, 32])
y_t = pl.tile.adds(ta, pl.const(2.5, pl.FP16))
"""


def test_const_in_a_kernel_offsets_and_operands_against_torch():
    a = torch.randn(32, 32)
    (y,) = run_kernel(BODY, [("a", "FP32", (32, 32))], [("y", "FP32", (16, 32))], a)
    torch.testing.assert_close(y, a[16:] + 2.5)


def test_const_prints_with_its_dtype_and_reparses():
    prog = kernel_program(BODY, [("a", "FP32", (32, 32))], [("y", "FP32", (16, 32))])
    text = prog.as_python()
    assert "pl.const(16, pl.INT32)" in text and "pl.const(2.5, pl.FP16)" in text
    ir.assert_structural_equal(pl.parse(text), prog)


@pytest.mark.parametrize("call,msg", [
    ("pl.const(a, pl.FP32)", "the value must be a Python number known at parse time, got Var"),
    ("pl.const('x', pl.INT32)", "the value must be a Python number known at parse time, got str"),
    ("pl.const(2.5, pl.INT32)", "2.5 is not an integer, as INT32 needs"),
    ("pl.const(1.0, 3)", "second argument must be a data type"),
    ("pl.const(1.0)", r"pl.const takes \(value, dtype\)"),
])
def test_bad_const_is_a_located_parser_type_error(call, msg):
    with pytest.raises(ParserTypeError, match=msg) as e:
        kernel_program(f"y_t = pl.tile.adds(pl.load(a, [0, 0], [16, 32]), {call})",
                       [("a", "FP32", (32, 32))], [("y", "FP32", (16, 32))])
    assert e.value.span is not None and e.value.span.begin_line == 8
