"""Conditions on compile-time values are decided while parsing, for every Python comparison
(`is`, `is not`, `in`, `not in`, `==`, `<`, chains ...), `and` / `or` (short-circuiting) and
`a if c else b`; only the taken branch is parsed. A user trial found `if value is None:` on a
closure constant refused ("unsupported comparison Is"). Run-time comparisons become IR."""

from pathlib import Path

import pytest
import torch
from marker_lines import assert_at
from module_files import import_file

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserSyntaxError, ParserTypeError, UndefinedVariableError

# (condition, what Python says) over the constants of _module() below
CONDITIONS = [
    ("A is None", True), ("A is not None", False), ("B in (1, 2, 3)", True), ("B not in [1, 3]", True),
    ("B in range(3, 9)", False), ("MODE == 'fast'", True), ("MODE != 'fast'", False), ("B < 3", True),
    ("B <= 1", False), ("B > 1", True), ("B >= 3", False), ("0 < B <= 2 < 5", True),
    ("0 < B < 2", False), ("A is None and B > 1", True), ("A is not None and A.missing > 0", False),
    ("A or B", True), ("not A", True), ("LAYOUT is pl.NZ", True), ("DT in (pl.FP16, pl.BF16)", False),
    ("'a' in MODE", True), ("MODE", True), ("(B if A is None else 0) == 2", True), ("A == B", False),
]


def _module(tmp_path: Path, cond: str) -> Path:
    path = tmp_path / "conditions_kernel.py"
    path.write_text(
        "import pypto.language as pl\n\n"
        "A = None\nB = 2\nMODE = 'fast'\nLAYOUT = pl.NZ\nDT = pl.FP32\n\n\n"
        "@pl.function\n"
        "def f(x: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) "
        "-> pl.Tensor[[16, 64], pl.FP32]:\n"
        f"    if {cond}:\n"
        "        o[:] = pl.adds(x, 1.0)\n"
        "    else:\n"
        "        o[:] = pl.adds(x, A.missing)\n"  # parsed only if taken (A is None: an error)
        "    return o\n")
    return path


@pytest.mark.parametrize(("cond", "truth"), CONDITIONS, ids=[c for c, _ in CONDITIONS])
def test_a_condition_on_constants_keeps_only_the_taken_branch(tmp_path, cond, truth):
    path = _module(tmp_path, cond)
    if not truth:  # the else branch is parsed: its mistake is reported, located
        with pytest.raises(UndefinedVariableError) as ei:
            import_file(path)
        assert ei.value.message == "Undefined name 'A.missing'"
        assert (Path(ei.value.span.filename), ei.value.span.begin_line) == (path, 15)
        return
    printed = import_file(path).f.as_python()
    assert "if " not in printed and "pl.tensor.adds(x, 1.0)" in printed, printed


BIAS = None


def _scaled(scale):  # type: ignore[no-untyped-def]
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                 o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [0, 0], [16, 64])
                if BIAS is None:
                    t = pl.muls(t, 2.0)
                else:
                    t = pl.adds(t, BIAS.value)  # never parsed: BIAS is None
                if scale is not None and scale > 1:  # a closure constant
                    t = pl.muls(t, scale)
                o = pl.store(t, [0, 0], o)
            return o
    return P


def test_closure_and_module_constants_decide_ifs_in_a_kernel():
    for scale in (None, 3.0):
        compiled = ir.compile(_scaled(scale), dump_passes=False, skip_ptoas=True)
        x, o = torch.randn(16, 64), torch.zeros(16, 64)
        compiled(x, o)
        torch.testing.assert_close(o, x * 2 * (scale or 1))


@pl.program
class RunTime:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32],
             o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i in pl.range(4):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [i * 16, 0], [16, 64])
                if i in (0, 3):
                    t = pl.muls(t, 2.0)
                if 0 < i < 3 and i is not None:
                    t = pl.adds(t, 1.0)
                if i not in range(1, 4):
                    t = pl.adds(t, 10.0)
                o = pl.store(t, [i * 16, 0], o)
        return o


def test_run_time_comparisons_membership_and_chains():
    printed = RunTime.as_python()
    assert "if (i == 0) or (i == 3):" in printed and "if (0 < i) and (i < 3):" in printed
    assert "if ((i != 1) and (i != 2)) and (i != 3):" in printed
    compiled = ir.compile(RunTime, dump_passes=False, skip_ptoas=True)
    x, o = torch.randn(64, 64), torch.zeros(64, 64)
    compiled(x, o)
    want = x.clone()
    want[:16] = x[:16] * 2 + 10
    want[16:48] = x[16:48] + 1
    want[48:] = x[48:] * 2
    torch.testing.assert_close(o, want)


def test_identity_and_membership_of_run_time_values_are_refused_where_written():
    with pytest.raises(ParserTypeError) as ei:
        @pl.function
        def f(n: pl.Scalar[pl.INDEX], m: pl.Scalar[pl.INDEX], x: pl.Tensor[[16], pl.FP32]) -> pl.Tensor[[16], pl.FP32]:
            if n is m:  # MARK-is-runtime
                x = pl.adds(x, 1.0)
            return x
    assert ei.value.message == ("'is' compares compile-time Python objects (e.g. 'CONFIG is None' on a module "
                                "constant), but 'n' is a run-time value; compare values with '==' / '!='")
    assert_at(ei.value, __file__, "MARK-is-runtime")
    with pytest.raises(ParserTypeError) as ei:
        @pl.function
        def g(n: pl.Scalar[pl.INDEX], m: pl.Scalar[pl.INDEX], x: pl.Tensor[[16], pl.FP32]) -> pl.Tensor[[16], pl.FP32]:
            if n in (1, m):  # MARK-in-runtime
                x = pl.adds(x, 1.0)
            return x
    assert ei.value.message == ("'in' needs a compile-time container on its right (a tuple, list, set or "
                                "range of constants); '(1, m)' is a run-time value")
    assert_at(ei.value, __file__, "MARK-in-runtime")
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.function
        def h(n: pl.Scalar[pl.INDEX], x: pl.Tensor[[16], pl.FP32]) -> pl.Tensor[[16], pl.FP32]:
            y = pl.adds(x, 1.0 if n > 2 else 2.0)  # MARK-ifexp-runtime
            return y
    assert ei.value.message == ("a conditional expression 'a if c else b' needs a condition known at compile "
                                "time; for a run-time condition use an if statement")
    assert_at(ei.value, __file__, "MARK-ifexp-runtime")
    with pytest.raises(ParserTypeError) as ei:
        @pl.function
        def k(x: pl.Tensor[[16], pl.FP32]) -> pl.Tensor[[16], pl.FP32]:
            if BIAS < 3:  # MARK-cmp-fails
                x = pl.adds(x, 1.0)
            return x
    assert ei.value.message == ("compile-time comparison 'BIAS < 3' failed: TypeError: '<' not supported "
                                "between instances of 'NoneType' and 'int'")
    assert_at(ei.value, __file__, "MARK-cmp-fails")
