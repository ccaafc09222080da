"""Float -> integer casts round with their mode and saturate; NaN becomes 0 (a defined result where a
plain conversion is undefined). The simulator and the PyTorch reference script agree."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core import dtype as dt
from pypto.debug import torch_codegen
from pypto.ops.cast import cast_compute

VALUES = [-300.0, 200.0, 1000.0, 127.5, float("inf"), float("-inf"), float("nan"), -3.5, 2.5]


@pytest.mark.parametrize("target,mode,want", [
    (dt.INT8, "round", [-128, 127, 127, 127, 127, -128, 0, -4, 2]),
    (dt.INT8, "trunc", [-128, 127, 127, 127, 127, -128, 0, -3, 2]),
    (dt.UINT8, "floor", [0, 200, 255, 127, 255, 0, 0, 0, 2]),
    (dt.INT32, "ceil", [-300, 200, 1000, 128, 2**31 - 1, -2**31, 0, -3, 3]),
])
def test_float_to_int_saturates(target, mode, want):
    got = cast_compute(torch.tensor(VALUES), target, mode)
    assert got.tolist() == want


def test_int64_bounds_are_exact():
    got = cast_compute(torch.tensor([1e19, -1e19, 5.0], dtype=torch.float64), dt.INT64, "trunc")
    assert got.tolist() == [2**63 - 1, -2**63, 5]


TEXT = """
import pypto.language as pl

@pl.program
class Sat:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 16], pl.FP16], y: pl.Out[pl.Tensor[[16, 16], pl.INT8]]) -> pl.Tensor[[16, 16], pl.INT8]:
        t = pl.load(x, [0, 0], [16, 16])
        y = pl.store(pl.cast(t, pl.INT8), [0, 0], y)
        return y
"""


def test_a_saturating_cast_kernel_matches_its_reference_script():
    prog = pl.parse(TEXT)
    x = torch.tensor(VALUES * 29)[:256].reshape(16, 16).half()
    compiled = ir.compile(prog, dump_passes=False, skip_ptoas=True)
    y = torch.zeros(16, 16, dtype=torch.int8)
    compiled(x, y)
    assert torch.equal(y, cast_compute(x, dt.INT8, "round"))
    ns: dict = {}
    exec(compile(torch_codegen(prog), "<reference>", "exec"), ns)  # noqa: S102
    ref = torch.zeros(16, 16, dtype=torch.int8)
    ns["run"](x.clone(), ref)
    assert torch.equal(y, ref)
