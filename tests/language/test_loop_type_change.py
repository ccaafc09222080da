"""A name that changes type in a loop or one branch of an if (docs/language.md "SSA and control
flow"): a loop-carried value keeps one type, so the errors name both types and both lines instead of
saying the name was "assigned inside a loop"."""

import pytest
import torch
from marker_lines import assert_at, line_of

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError, UndefinedVariableError

S = [16, 64]


def _line(marker: str) -> int:
    return line_of(__file__, marker)


def test_a_cast_of_the_carried_value_names_both_types():
    with pytest.raises(ParserTypeError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[S, pl.FP32], y: pl.Out[pl.Tensor[S, pl.FP16]]) -> pl.Tensor[S, pl.FP16]:
            t = pl.load(x, [0, 0], S)  # MARK-t-before
            for i in pl.range(4):
                t = pl.cast(t, pl.FP16)  # MARK-t-cast
            y = pl.store(t, [0, 0], y)
            return y
    assert_at(e.value, __file__, "MARK-t-cast")
    before, cast = _line("MARK-t-before"), _line("MARK-t-cast")
    assert e.value.message == (
        f"'t' changes type inside the loop: it is an FP32 tile before the loop (line {before}), and line "
        f"{cast} reads it and assigns it an FP16 tile, so the next iteration would read an FP16 tile. A value "
        f"carried from one iteration to the next must keep its type: give the converted value a new name "
        f"(e.g. 't_fp16 = pl.cast(t, pl.FP16)'), or convert it back before the iteration ends")


def test_a_name_that_changes_type_in_the_loop_and_is_used_after_it():
    with pytest.raises(UndefinedVariableError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[S, pl.FP32], y: pl.Out[pl.Tensor[S, pl.FP16]]) -> pl.Tensor[S, pl.FP16]:
            t = pl.load(x, [0, 0], S)  # MARK-u-before
            for i in pl.range(4):
                u = pl.add(pl.load(x, [0, 0], S), 1.0)
                t = pl.cast(u, pl.FP16)  # MARK-u-cast
            y = pl.store(t, [0, 0], y)  # MARK-u-use
            return y
    assert_at(e.value, __file__, "MARK-u-use")
    assert e.value.message.startswith(
        f"'t' changes type in the loop: it is an FP32 tile before the loop (line {_line('MARK-u-before')}) but "
        f"the loop assigns it an FP16 tile at line {_line('MARK-u-cast')}. A value carried through a loop must "
        f"keep its type")


def test_one_branch_changing_the_type():
    with pytest.raises(ParserTypeError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[S, pl.FP32], n: pl.Scalar[pl.INDEX],
              y: pl.Out[pl.Tensor[S, pl.FP16]]) -> pl.Tensor[S, pl.FP16]:
            t = pl.load(x, [0, 0], S)  # MARK-br-before
            if n > 0:  # MARK-br-test
                t = pl.cast(t, pl.FP16)  # MARK-br-cast
            y = pl.store(t, [0, 0], y)
            return y
    assert_at(e.value, __file__, "MARK-br-test")
    assert e.value.message == (
        f"'t' is an FP32 tile before the if (line {_line('MARK-br-before')}) but the then-branch assigns it an "
        f"FP16 tile at line {_line('MARK-br-cast')} (without an else-branch it keeps that type when the "
        f"condition is false); after the if a name has one type: give the converted value a new name, or "
        f"convert it in both branches")


def test_an_enclosing_loops_carried_value_rebound_in_an_inner_loop():
    with pytest.raises(UndefinedVariableError) as e:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[S, pl.FP32], y: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
            t0 = pl.load(x, [0, 0], S)
            for i, (acc,) in pl.range(4, init_values=(t0,)):
                for j in pl.range(2):
                    acc = pl.add(acc, 1.0)
                out = pl.yield_(acc)  # MARK-acc-use
            y = pl.store(out, [0, 0], y)
            return y
    assert_at(e.value, __file__, "MARK-acc-use")
    assert "'acc' is the loop-carried value of the enclosing loop" in e.value.message
    assert "Copy it to a new name before the inner loop (e.g. 'acc_in = acc')" in e.value.message


def test_loop_local_values_of_another_type_and_carried_values_of_the_same_type_still_work():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[S, pl.FP32], y: pl.Out[pl.Tensor[S, pl.FP16]],
              z: pl.Out[pl.Tensor[S, pl.FP32]]) -> tuple[pl.Tensor[S, pl.FP16], pl.Tensor[S, pl.FP32]]:
            t = pl.load(x, [0, 0], S)
            for i in pl.range(3):
                h = pl.cast(t, pl.FP16)       # loop-local, another type
                y = pl.store(h, [0, 0], y)
                t = pl.add(t, 1.0)            # carried, same type
            z = pl.store(t, [0, 0], z)
            return y, z

    x = torch.randn(*S)
    y, z = torch.zeros(*S, dtype=torch.float16), torch.zeros(*S)
    ir.compile(P)(x, y, z)
    torch.testing.assert_close(z, x + 3.0)
    torch.testing.assert_close(y, (x + 2.0).half())
