"""A `pl.unroll` copy that divides by its (now constant) loop variable 0 or shifts by a negative
count: the IR keeps `2 // 0` as an expression that fails at run time (passes/simplify.py never
folds it), so it must print and re-parse like any other IR under ROUNDTRIP verification — it was
an unlocated VerificationError ("printed IR does not re-parse"); found by benchmarks/stress.py,
mutant-compile seed 1005. The run-time error names the user's line; a copy that never runs the
division runs fine."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import RuntimeSimError

SRC = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for i in pl.unroll(3):
{BODY}
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        y = self.k(x, y)
        return y
'''
LEVELS = [ir.VerificationLevel.BASIC, ir.VerificationLevel.ROUNDTRIP]


def _compile(body: str, level: ir.VerificationLevel):  # type: ignore[no-untyped-def]
    return ir.compile(pl.parse(SRC.replace("{BODY}", body)), dump_passes=False, skip_ptoas=True,
                      verification_level=level)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize(("expr", "message"), [
    ("2 // i * 8", "scalar 'floordiv' failed: integer division or modulo by zero"),
    ("2 % i * 8", "scalar 'floormod' failed: integer modulo by zero"),
    ("(1 << (i - 1)) * 8", "scalar 'shl' failed: negative shift count"),
])
def test_a_copy_failing_at_run_time_compiles_and_fails_located(level, expr, message):
    body = (f"            t = pl.load(x, [{expr}, 0], [8, 32])\n"
            "            y = pl.store(t, [i * 8, 0], y)")
    compiled = _compile(body, level)
    with pytest.raises(RuntimeSimError) as info:
        compiled(torch.randn(64, 32), torch.zeros(64, 32))
    assert info.value.message.endswith(message)
    assert info.value.span is not None and info.value.span.begin_line == 9


@pytest.mark.parametrize("level", LEVELS)
def test_a_copy_that_skips_the_division_runs(level):
    body = ("            if i > 0:\n"
            "                t = pl.load(x, [16 // i, 0], [8, 32])\n"
            "                y = pl.store(t, [i * 8, 0], y)")
    x, y = torch.randn(64, 32), torch.zeros(64, 32)
    _compile(body, level)(x, y)
    expected = torch.zeros(64, 32)
    expected[8:16], expected[16:24] = x[16:24], x[8:16]
    torch.testing.assert_close(y, expected)
