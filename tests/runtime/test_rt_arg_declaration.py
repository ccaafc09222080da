"""A call-time argument error of a compiled program names the parameter and carries a note at the
parameter's declaration in the user's source (new-user trial: the message named 'a' of 'main' but
no line). The exception classes and the message stay the same."""

from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ArgumentTypeError, ArgumentValueError
from pypto.runtime import CompiledProgram

LINES = Path(__file__).read_text().splitlines()


@pl.program
class Copy:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 128], pl.FP32], n: pl.Scalar[pl.INT8],
          out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        t = pl.load(a, [0, 0], [64, 128])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 128], pl.FP32],  # MARK-param-a
             n: pl.Scalar[pl.INT8],  # MARK-param-n
             out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        out = self.k(a, n, out)
        return out


@pytest.fixture(scope="module")
def cp():
    return ir.compile(Copy, dump_passes=False, skip_ptoas=True)


def _note_line(err: Exception, marker: str, name: str) -> None:
    (span, text), = err.notes  # type: ignore[attr-defined]
    assert text == f"parameter '{name}' of 'main' is declared here"
    assert Path(span.filename).resolve() == Path(__file__).resolve() and LINES[span.begin_line - 1].endswith(f"# {marker}")
    rendered = str(err).splitlines()
    assert rendered[0] == err.message  # type: ignore[attr-defined]
    assert rendered[1].startswith(f"{span.filename}:{span.begin_line}:{span.begin_col}: note: {text}")
    assert marker in rendered[2] and "^" in rendered[3]


def test_a_wrong_shape_notes_the_parameter_declaration(cp):
    out = torch.zeros(64, 128)
    with pytest.raises(ArgumentValueError) as info:
        cp(torch.randn(32, 128), 1, out)
    assert info.value.message == "argument 'a' of 'main' has shape [32, 128], expected [64, 128]"
    _note_line(info.value, "MARK-param-a", "a")
    assert torch.equal(out, torch.zeros(64, 128))


def test_a_wrong_dtype_and_an_out_of_range_scalar_note_theirs(cp):
    with pytest.raises(ArgumentTypeError) as info:
        cp(torch.randn(64, 128).double(), 1, torch.zeros(64, 128))
    assert info.value.message.startswith("argument 'a' of 'main' has dtype torch.float64")
    _note_line(info.value, "MARK-param-a", "a")
    with pytest.raises(ArgumentValueError) as info:
        cp(torch.randn(64, 128), 300, torch.zeros(64, 128))
    assert info.value.message == "argument 'n' of 'main' = 300 is out of range for INT8"
    _note_line(info.value, "MARK-param-n", "n")


def test_a_program_built_without_source_has_no_note():
    from rt_ir import add_program

    with pytest.raises(ArgumentValueError) as info:
        CompiledProgram(add_program(), "", None)(torch.randn(8, 32), torch.randn(16, 32), torch.zeros(16, 32))
    assert info.value.notes == () and str(info.value) == "argument 'a' of 'main' has shape [8, 32], expected [16, 32]"


@pl.jit
def doubled(a: pl.Tensor[[8, 16], pl.FP32], c: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):  # MARK-jit
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, a)
    return c


def test_a_jit_kernel_argument_error_notes_its_declaration():
    with pytest.raises(ArgumentTypeError) as info:
        doubled(torch.randn(8, 16).double(), torch.zeros(8, 16))
    (span, text), = info.value.notes
    assert text == "parameter 'a' of 'doubled' is declared here"
    assert LINES[span.begin_line - 1].endswith("# MARK-jit") and LINES[span.begin_line - 1][span.begin_col - 1] == "a"
