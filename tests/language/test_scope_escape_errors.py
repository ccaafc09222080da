"""A scalar computed inside `pl.at` cannot leave it (only tensors leave an InCore scope, SPEC §5).
The error points at the use after the region, with a note at the assignment inside it — a user
trial found the caret on an earlier assignment of the same name outside the region."""

import pytest
from marker_lines import assert_at, line_of

import pypto.language as pl
from pypto import ir
from pypto.core.errors import CompileError

MESSAGE = ("value 'n' computed inside pl.at is used after it, but only tensors can leave an InCore "
           "scope: compute 'n' before the pl.at, or write it into a tensor")


def _compile(program) -> None:  # type: ignore[no-untyped-def]
    ir.compile(program, dump_passes=False, skip_ptoas=True)


def test_a_scalar_reassigned_inside_pl_at_and_read_after_it():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                 o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            n = 3
            with pl.at(level=pl.Level.CORE_GROUP):
                n = n + 1  # MARK-inside
                o[:] = pl.adds(x, 1.0)
            for i in pl.range(n):  # MARK-use
                with pl.at(level=pl.Level.CORE_GROUP):
                    o[:] = pl.adds(o, 1.0)
            return o

    with pytest.raises(CompileError) as ei:
        _compile(P)
    err = ei.value
    assert err.message == MESSAGE
    assert_at(err, __file__, "MARK-use")
    (note_span, note), = err.notes
    assert note == "'n' is assigned here, inside the pl.at"
    assert note_span.begin_line == line_of(__file__, "MARK-inside")
    assert f"{note_span.filename}:{note_span.begin_line}:{note_span.begin_col}: note: {note}" in str(err)


def test_a_scalar_first_assigned_inside_pl_at_and_returned():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                 o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                n = pl.dim(x, 0) * 2  # MARK-first
                o[:] = pl.adds(x, 1.0)
            if n > 4:  # MARK-if
                with pl.at(level=pl.Level.CORE_GROUP):
                    o[:] = pl.adds(o, 1.0)
            return o

    with pytest.raises(CompileError) as ei:
        _compile(P)
    assert ei.value.message == MESSAGE
    assert_at(ei.value, __file__, "MARK-if")
    assert ei.value.notes[0][0].begin_line == line_of(__file__, "MARK-first")
