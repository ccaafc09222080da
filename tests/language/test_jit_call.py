"""Calling a @pl.jit kernel (SPEC §7): keyword arguments, CPU-only tensors checked before compiling,
argument errors without PyPTO frames, compile-time config fields honoured without a warning, and the
dtype message of `out[:] = value`."""

import os
import warnings

import pytest
import torch

import pypto
import pypto.language as pl
from pypto.core.errors import ArgumentTypeError, ArgumentValueError, ParserTypeError
from pypto.runtime import RunConfig

PKG = os.path.dirname(os.path.abspath(pypto.__file__)) + os.sep


def _pypto_frames(tb) -> int:
    n = 0
    while tb is not None:
        n += os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(PKG)
        tb = tb.tb_next
    return n


@pl.jit
def shift(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, 1.0)
    return c


def test_keyword_arguments() -> None:
    a = torch.randn(16, 32)
    c = torch.zeros(16, 32)
    assert shift(c=c, a=a) is c
    torch.testing.assert_close(c, a + 1)
    c2 = torch.zeros(16, 32)
    shift(a, c=c2)
    torch.testing.assert_close(c2, a + 1)
    for call, message in [(lambda: shift(a, c, b=a), "unexpected keyword argument 'b'"),
                          (lambda: shift(a, a=a), "multiple values for argument 'a'"),
                          (lambda: shift(a=a), "missing a required argument: 'c'"),
                          # a misspelt keyword is named (with the parameter meant), not the one it left out
                          (lambda: shift(a, cc=c), "unexpected keyword argument 'cc'; did you mean 'c'\\?")]:
        with pytest.raises(ArgumentTypeError, match=message) as e:
            call()
        assert str(e.value).startswith("shift(): ") and _pypto_frames(e.tb) <= 1


def test_a_meta_tensor_is_refused_before_compiling() -> None:
    @pl.jit
    def fresh(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, 1.0)
        return c

    with pytest.raises(ArgumentValueError) as e:
        fresh(torch.empty(16, 32, device="meta"), torch.zeros(16, 32))
    assert str(e.value).startswith("argument 'a' of 'fresh' is a tensor on device 'meta', but the simulator "
                                   "needs CPU tensors")
    assert len(fresh._cache) == 0 and _pypto_frames(e.tb) <= 1
    # ahead-of-time compilation only needs shapes and dtypes: meta tensors are fine there
    assert fresh.compile(torch.empty(16, 32, device="meta"), torch.empty(16, 32, device="meta")) is not None


def test_an_empty_tensor_for_a_bare_parameter_says_to_declare_a_dynamic_dimension() -> None:
    """A bare pl.Tensor takes a static shape from its argument; a size-0 dimension cannot be one
    (it was an AnnotationError without a word about the argument). Dynamic dimensions may be 0."""
    with pytest.raises(ArgumentValueError) as e:
        shift(torch.zeros(0, 32), torch.zeros(0, 32))
    assert str(e.value).startswith("parameter 'a' has a dimension of size 0, shape [0, 32]: a bare pl.Tensor "
                                   "takes its static shape from the argument")
    assert 'M = pl.dynamic("M")' in str(e.value) and _pypto_frames(e.tb) <= 1
    M = pl.dynamic("M")

    @pl.jit
    def rows(a: pl.Tensor[[M, 32], pl.FP32], c: pl.Out[pl.Tensor[[M, 32], pl.FP32]]):
        for i in pl.parallel(0, M, 8):
            with pl.at(level=pl.Level.CORE_GROUP):
                c[i:i + 8, :] = pl.add(a[i:i + 8, :], 1.0)
        return c

    c = torch.zeros(0, 32)
    assert rows(torch.zeros(0, 32), c) is c


def test_a_wrong_dtype_leaves_without_pypto_frames() -> None:
    a = torch.randn(16, 32)
    compiled = shift.compile(a, torch.zeros(16, 32))
    with pytest.raises(TypeError, match=r"argument 'a' of 'shift' has dtype torch.float64") as e:
        compiled(a.double(), torch.zeros(16, 32))
    assert _pypto_frames(e.tb) <= 1


def test_a_jit_call_applies_compile_time_fields_without_warning() -> None:
    a, c = torch.randn(8, 32), torch.zeros(8, 32)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        shift(a, c, config=RunConfig(dump_passes=True))
    assert not [x for x in w if "has no effect" in str(x.message)]
    compiled = shift.compile(a, c, config=RunConfig(dump_passes=True))
    assert os.path.isdir(os.path.join(compiled.output_dir, "passes_dump"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        compiled(a, c, config=RunConfig(dump_passes=True))      # the build exists: it cannot apply
    assert [str(x.message).split("=")[0] for x in w] == ["RunConfig.dump_passes"]
    with pytest.raises(TypeError, match="config= expects a pypto.runtime.RunConfig, got dict"):
        shift(a, c, config={"platform": "a2a3sim"})


def test_writing_fp32_into_an_fp16_output_suggests_a_cast() -> None:
    @pl.jit
    def half_out(a: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, 1.0)
        return c

    with pytest.raises(ParserTypeError) as e:
        half_out(torch.randn(16, 32), torch.zeros(16, 32, dtype=torch.float16))
    assert e.value.message == ("tensor.assemble: cannot write a value of dtype FP32 into 'c', whose dtype is "
                               "FP16; cast it first, e.g. pl.cast(value, pl.FP16)")
