"""SPEC §2.4: user errors are ParserError subclasses located at the user's file and line."""

from pathlib import Path

import pytest

import pypto.language as pl
from pypto.core.errors import (
    InvalidOperationError,
    ParserError,
    ParserSyntaxError,
    ParserTypeError,
    SSAViolationError,
    UndefinedVariableError,
)

THIS = Path(__file__).resolve()
SRC = THIS.read_text().splitlines()


def line_of(marker: str) -> int:
    """1-based line of the (unique) source line containing `marker`."""
    hits = [i + 1 for i, line in enumerate(SRC) if marker in line and "line_of(" not in line and "assert_located(" not in line]
    assert len(hits) == 1, hits
    return hits[0]


def assert_located(err: ParserError, marker: str) -> None:
    assert err.span is not None
    assert Path(err.span.filename).resolve() == THIS
    assert err.span.begin_line == line_of(marker)
    rendered = str(err)
    assert rendered.startswith(f"{err.span.filename}:{err.span.begin_line}:{err.span.begin_col}: error: ")
    assert marker in rendered  # the source line is shown
    assert "^" in rendered


def test_missing_parameter_annotation():
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32], b) -> pl.Tensor[[64], pl.FP32]:  # MARK-missing-ann
            return a
    assert ei.value.message == "Parameter 'b' missing type annotation"
    assert_located(ei.value, "MARK-missing-ann")


def test_undefined_variable():
    with pytest.raises(UndefinedVariableError) as ei:
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            y: pl.Tensor[[64], pl.FP32] = pl.add(a, not_defined_anywhere)  # noqa: F821  MARK-undef
            return y
    assert ei.value.message == "Undefined variable 'not_defined_anywhere'"
    assert_located(ei.value, "MARK-undef")
    assert ei.value.span.begin_col == SRC[line_of("MARK-undef") - 1].index("not_defined_anywhere") + 1


def test_tensor_op_outside_incore_in_orchestration():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            y: pl.Tensor[[64], pl.FP32] = pl.add(a, a)  # MARK-misplaced
            return y
    assert ei.value.message == ("Misplaced tensor op 'tensor.add' in Orchestration function "
                                "(should be inside InCore block)")
    assert_located(ei.value, "MARK-misplaced")


def test_tensor_op_outside_incore_in_jit_entry_is_rejected_on_call():
    import torch

    @pl.jit
    def bad(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        c = pl.add(a, a)  # MARK-jit-misplaced
        return c

    with pytest.raises(InvalidOperationError) as ei:
        bad(torch.ones(8, 8), torch.zeros(8, 8))
    assert_located(ei.value, "MARK-jit-misplaced")


def test_tensor_op_inside_pl_at_is_fine():
    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y: pl.Tensor[[64], pl.FP32] = pl.add(a, a)
        return y
    assert orch.name == "orch"


def test_strict_ssa_rejects_reassignment():
    with pytest.raises(SSAViolationError) as ei:
        @pl.function(strict_ssa=True)
        def example(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            result: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
            result: pl.Tensor[[64], pl.FP32] = pl.add(result, 1.0)  # MARK-ssa
            return result
    assert_located(ei.value, "MARK-ssa")


def test_op_type_error_names_op_and_argument():
    with pytest.raises(ParserTypeError) as ei:
        @pl.function(type=pl.FunctionType.InCore)
        def k(a: pl.Tensor[[64, 64], pl.FP32]) -> pl.Tensor[[64, 64], pl.FP32]:
            t = pl.tile.add(a, a)  # MARK-tile-on-tensor
            return a
    assert "tile.add: argument 'lhs' must be a Tile, got Tensor" in ei.value.message
    assert_located(ei.value, "MARK-tile-on-tensor")


def test_unsupported_statement_is_a_parser_error():
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            try:  # MARK-try
                pass
            finally:
                pass
            return a
    assert "unsupported statement 'Try'" in ei.value.message
    assert_located(ei.value, "MARK-try")


def test_a_loop_over_a_python_iterable_lists_every_loop_helper():
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            for i in range(4):  # MARK-pyrange
                a = pl.add(a, 1.0)
            return a
    assert ei.value.message == ("a kernel loop must iterate over pl.range(...), pl.parallel(...), "
                                "pl.unroll(...), pl.pipeline(...), pl.while_(...) or pl.spmd(...)")
    assert_located(ei.value, "MARK-pyrange")


def test_pl_cond_not_first_is_reported_at_the_first_statement_with_its_line():
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            for (x,) in pl.while_(init_values=(0,)):
                y = x + 1  # MARK-before-cond
                pl.cond(x < 10)  # MARK-late-cond
                x_out = pl.yield_(y)
            return a
    assert ei.value.message == ("the first statement of a pl.while_ loop must be pl.cond(<condition>); move "
                                f"the pl.cond at line {line_of('MARK-late-cond')} to the top of the loop body")
    assert_located(ei.value, "MARK-before-cond")
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.function
        def g(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            for (x,) in pl.while_(init_values=(0,)):
                pl.cond()  # MARK-empty-cond
                x_out = pl.yield_(x + 1)
            return a
    assert ei.value.message == "pl.cond takes exactly one argument, the loop condition: pl.cond(x < 10)"
    assert_located(ei.value, "MARK-empty-cond")


@pytest.mark.parametrize("call,hint", [
    ("min(n, 2)", "use pl.min(a, b) for scalars, pl.minimum(a, b) for tensors and tiles"),
    ("max(n, 2)", "use pl.max(a, b) for scalars, pl.maximum(a, b) for tensors and tiles"),
    ("abs(n)", "use pl.abs(x)"),
])
def test_python_builtins_on_ir_values_name_the_op_to_use(tmp_path, call, hint):
    import importlib.util

    src = tmp_path / "builtin_kernel.py"
    src.write_text("import pypto.language as pl\n\n\n@pl.function\n"
                   "def f(a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:\n"
                   f"    m = {call}\n"
                   "    return a\n")
    spec = importlib.util.spec_from_file_location("builtin_kernel", src)
    with pytest.raises(ParserTypeError) as ei:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    assert ei.value.message.endswith(f"is a Python function, not a PyPTO op or kernel; it cannot take IR values; {hint}")
    assert ei.value.span.begin_line == 6


def test_if_condition_must_be_bool():
    with pytest.raises(ParserTypeError) as ei:
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            if n:  # MARK-ifcond
                a = pl.mul(a, 2.0)
            return a
    assert ei.value.message == "if condition must be a Bool-typed scalar"
    assert_located(ei.value, "MARK-ifcond")


def test_static_assert():
    with pytest.raises(ParserError) as ei:
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            pl.static_assert(1 > 2, "one is not bigger")  # MARK-sa
            return a
    assert ei.value.message == "static_assert failed: one is not bigger"
    assert_located(ei.value, "MARK-sa")


def test_writing_an_input_parameter_is_rejected():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.function(type=pl.FunctionType.InCore)
        def k(a: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.load(a, [0, 0], [16, 16])
            a = pl.store(t, [0, 0], a)  # MARK-write-direct
            return a
    assert "cannot write input parameter 'a'" in ei.value.message
    assert "pl.Out[...] or pl.InOut[...]" in ei.value.message
    assert_located(ei.value, "MARK-write-direct")


def test_writing_an_input_parameter_through_subscript_and_loop_is_rejected():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                b[:] = pl.add(a, a)  # MARK-write-in-sub
            return b
    assert_located(ei.value, "MARK-write-in-sub")

    with pytest.raises(InvalidOperationError) as ei:
        @pl.function(type=pl.FunctionType.InCore)
        def k(a: pl.Tensor[[16, 16], pl.FP32]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.load(a, [0, 0], [16, 16])
            for i, (acc,) in pl.range(2, init_values=(a,)):
                nxt = pl.store(t, [0, 0], acc)  # MARK-write-in-loop
                out = pl.yield_(nxt)
            return out
    assert_located(ei.value, "MARK-write-in-loop")


def test_misspelled_names_get_a_suggestion():
    with pytest.raises(UndefinedVariableError) as ei:
        @pl.function
        def f(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            y = pl.ad(a, a)  # MARK-typo-op
            return y
    assert "Undefined name 'pl.ad'; did you mean 'pl.add'?" in ei.value.message
    assert_located(ei.value, "MARK-typo-op")

    with pytest.raises(UndefinedVariableError, match="did you mean 'total'"):
        @pl.function
        def g(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            total = pl.add(a, a)
            return totl  # noqa: F821


def test_a_slice_over_a_dynamic_dimension_names_the_block_loop():
    M = pl.dynamic("M")
    with pytest.raises(ParserTypeError) as ei:
        @pl.function
        def f(x: pl.Tensor[[M, 64], pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y[:] = pl.exp(x[0:, :])  # MARK-dyn-slice
            return y
    assert_located(ei.value, "MARK-dyn-slice")
    msg = ei.value.message
    assert msg.startswith("this slice of 'x' spans the dynamic dimension M (axis 0), whose size is only known "
                          "at run time; slices need a compile-time size")
    assert ("`for i in pl.range(0, M, 16):` with `blk = pl.slice(src, [16, 64], [i, 0], "
            "valid_shape=[pl.min(16, M - i), 64])` and `x[i:i + 16, :] = <result computed from blk>`") in msg
    with pytest.raises(ParserTypeError, match="must differ by a compile-time constant"):  # other bounds: as before
        @pl.function
        def g(x: pl.Tensor[[64, 64], pl.FP32], i: pl.Scalar[pl.INDEX], j: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 64], pl.FP32]:
            s = x[i:j, :]
            return s


def test_a_wrong_function_type_on_a_standalone_function_is_located_at_the_decorator():
    """Inside a @pl.program it already was; a standalone @pl.function raised a bare TypeError."""
    with pytest.raises(ParserTypeError) as ei:
        @pl.function(type="InCore")  # MARK-bad-type
        def f(a: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            return a
    assert ei.value.message == "@pl.function(type=...) expects a pl.FunctionType, got 'InCore'"
    assert_located(ei.value, "MARK-bad-type")
