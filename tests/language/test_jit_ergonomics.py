"""`@pl.jit` ergonomics of the Language Guide "@pl.jit family" (issue 11 item 2):
`@pl.jit.inline` helpers with unannotated parameters (typed by each call site) and
`kernel.compile()` without sample arguments when every parameter is fully annotated."""

import pytest
import torch

import pypto.language as pl
from pypto.core.errors import ArgumentTypeError, ParserSyntaxError


@pl.jit.inline
def reduce_step(local, peer, out):
    """The guide's form: no annotation at all; types come from the call."""
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.add(local, pl.mul(local, peer)), [0, 0])
    return out


@pl.jit
def chip_orch(inp: pl.Tensor, out: pl.Out[pl.Tensor], peer: pl.Scalar[pl.FP32]):
    return reduce_step(inp, peer, out)


def test_unannotated_inline_helper_called_from_a_jit_entry():
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    chip_orch(x, out, 0.5)
    torch.testing.assert_close(out, x + x * 0.5)
    text = chip_orch.compile(x, out, 0.5).program.as_python()
    assert "reduce_step" not in text  # spliced, not called


@pl.jit.inline
def axpy(a, b, s):
    return pl.add(a, pl.mul(b, s))


@pl.jit
def two_sites(x: pl.Tensor, y: pl.Tensor, h: pl.Tensor, out: pl.Out[pl.Tensor], out_h: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, axpy(x, y, 2.0), [0, 0])             # FP32 [16, 64]
        out_h = pl.assemble(out_h, axpy(h, h, 3.0), [0, 0])        # FP16 [8, 32]
    return out, out_h


def test_each_call_site_types_the_helper_on_its_own():
    x, y = torch.randn(16, 64), torch.randn(16, 64)
    h = torch.randn(8, 32).half()
    out, out_h = torch.zeros(16, 64), torch.zeros(8, 32).half()
    two_sites(x, y, h, out, out_h)
    torch.testing.assert_close(out, x + 2 * y)
    torch.testing.assert_close(out_h, (h.float() * 4).half(), rtol=1e-3, atol=1e-3)


def test_unannotated_parameter_outside_jit_inline_still_errors():
    @pl.inline
    def helper(a):
        return a

    @pl.jit
    def k(x: pl.Tensor, out: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, helper(x), [0, 0])
        return out

    with pytest.raises(ParserSyntaxError, match="Parameter 'a' missing type annotation"):
        k(torch.zeros(16, 64), torch.zeros(16, 64))


@pl.jit
def scale_fixed(x: pl.Tensor[[16, 64], pl.FP32], s: pl.Scalar[pl.FP32],
                out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        out = pl.assemble(out, pl.mul(x, s), [0, 0])
    return out


def test_compile_without_arguments_when_fully_annotated():
    compiled = scale_fixed.compile()
    assert compiled.program.functions  # a real build, from the annotations alone
    x, out = torch.randn(16, 64), torch.zeros(16, 64)
    assert scale_fixed.compile(x, 2.0, out) is compiled  # the same specialisation: a cache hit
    compiled(x, 3.0, out)
    torch.testing.assert_close(out, x * 3)
    scale_fixed(x, 2.0, out)
    torch.testing.assert_close(out, x * 2)


M = pl.dynamic("M")


def test_compile_without_arguments_with_a_dynamic_dimension():
    @pl.jit
    def dyn_add(a: pl.Tensor[[M, 64], pl.FP32], b: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            for i in pl.range(0, M, 16):
                blk = pl.slice(a, [16, 64], [i, 0], valid_shape=[pl.min(16, M - i), 64])
                b[i:i + 16, :] = pl.add(blk, 1.0)
        return b

    compiled = dyn_add.compile()
    for rows in (16, 40):
        a, b = torch.randn(rows, 64), torch.zeros(rows, 64)
        assert dyn_add.compile(a, b) is compiled
        dyn_add(a, b)
        torch.testing.assert_close(b, a + 1)


def test_compile_without_arguments_names_the_bare_parameters():
    @pl.jit
    def bare(x: pl.Tensor, n: pl.RUNTIME, out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]):  # MARK-bare
        return out

    with pytest.raises(ArgumentTypeError) as e:
        bare.compile()
    msg = str(e.value)
    assert "bare.compile() without sample arguments" in msg
    assert "'x', 'n' take their type from an argument" in msg and "'out'" not in msg
    assert __file__ in msg
    line = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1) if "MARK-bare" in t)
    assert f":{line}:" in msg


M_WHOLE = pl.dynamic("M_WHOLE")


@pl.jit
def _whole_write(x: pl.Tensor[[M_WHOLE, 128], pl.FP32], y: pl.Out[pl.Tensor[[M_WHOLE, 128], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        y[:] = pl.mul(pl.add(x, 1.0), x)
    return y


@pytest.mark.parametrize("rows", [1, 37, 300])
def test_whole_tensor_write_on_a_dynamic_dimension(rows):
    """`y[:] = v` writes all of y (tensor.assemble at [0, 0]): no run-time-sized slice is taken, so it
    works on dynamic dimensions, and one compile serves every row count."""
    x, y = torch.randn(rows, 128), torch.zeros(rows, 128)
    _whole_write(x, y)
    torch.testing.assert_close(y, (x + 1.0) * x)


def test_whole_tensor_write_prints_as_an_assemble_at_the_origin():
    from pypto.ir.printer import python_print

    text = python_print(_whole_write.specialize(torch.zeros(4, 128), torch.zeros(4, 128)))
    assert "y: pl.Tensor[[M_WHOLE, 128], pl.FP32] = pl.tensor.assemble(y, " in text and ", [0, 0])" in text
