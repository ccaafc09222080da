"""Calling a compiled program like a Python function (SPEC §7): arguments by parameter name, CPU-only
tensors, and argument errors whose traceback ends at the caller's line instead of in PyPTO."""

import os

import pytest
import torch
from rt_ir import add_program

import pypto
from pypto.core.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    DeviceStateError,
    InternalError,
    PyPTOError,
)
from pypto.runtime import ChipWorker, CompiledProgram

PKG = os.path.dirname(os.path.abspath(pypto.__file__)) + os.sep


def _pypto_frames(tb) -> int:
    n = 0
    while tb is not None:
        n += os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(PKG)
        tb = tb.tb_next
    return n


@pytest.fixture
def cp() -> CompiledProgram:
    return CompiledProgram(add_program(), "", None)


def _abc():
    return torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32)


def test_arguments_by_name_and_mixed(cp) -> None:
    a, b, c = _abc()
    assert cp(a=a, b=b, c=c) is c
    torch.testing.assert_close(c, a + b)
    c2 = torch.zeros(16, 32)
    assert cp(a, c=c2, b=b) is c2
    torch.testing.assert_close(c2, a + b)
    args = cp.build_orch_args(a, b=b, c=c)
    assert [x.name for x in args] == ["a", "b", "c"] and args[1].value is b


@pytest.mark.parametrize("call, message", [
    (lambda cp, a, b, c: cp(a, b, c, d=c), "'main' got an unexpected keyword argument 'd'; its parameters are a, b, c"),
    (lambda cp, a, b, c: cp(a, b, a=a), "'main' got multiple values for argument 'a'"),
    (lambda cp, a, b, c: cp(a, c=c), "'main' is missing argument(s) 'b' (it takes a, b, c)"),
    (lambda cp, a, b, c: cp(a, b, c, a, c=c), "'main' takes 3 arguments (a, b, c), got 4 positional"),
    (lambda cp, a, b, c: cp(a, b), "'main' takes 3 arguments (a, b, c), got 2"),
])
def test_binding_errors_name_the_parameter(cp, call, message) -> None:
    a, b, c = _abc()
    with pytest.raises(ArgumentTypeError) as e:
        call(cp, a, b, c)
    assert str(e.value) == message and isinstance(e.value, TypeError)
    assert torch.equal(c, torch.zeros(16, 32))


def test_a_tensor_off_the_cpu_is_refused_naming_the_parameter(cp) -> None:
    a, b, c = _abc()
    with pytest.raises(ArgumentValueError) as e:
        cp(a, b.to("meta"), c)
    msg = str(e.value)
    assert msg.startswith("argument 'b' of 'main' is a tensor on device 'meta'") and isinstance(e.value, ValueError)
    assert "simulator needs CPU tensors" in msg and "Cannot copy out of meta" not in msg
    with pytest.raises(ArgumentValueError, match="argument 'c' of 'main' is a tensor on device 'meta'"):
        cp(a, b, torch.empty(16, 32, device="meta"))
    with ChipWorker() as w:
        with pytest.raises(ValueError, match=r"alloc_tensor\(init=...\) is a tensor on device 'meta'"):
            w.alloc_tensor([16, 32], torch.float32, init=a.to("meta"))
        t = w.alloc_tensor([16, 32], torch.float32)
        with pytest.raises(ValueError, match="copy_from: the source is a tensor on device 'meta'"):
            t.copy_from(a.to("meta"))


def test_argument_errors_leave_without_pypto_frames(cp) -> None:
    a, b, c = _abc()
    with pytest.raises(TypeError, match=r"argument 'a' of 'main' has dtype torch.float64") as e:
        cp(a.double(), b, c)
    assert isinstance(e.value, PyPTOError) and _pypto_frames(e.tb) <= 1   # only the re-raise itself
    with ChipWorker() as w:
        handle = w.register(cp)
        with pytest.raises(ValueError, match="argument 'b' of 'main' has shape") as e:
            handle(a, torch.zeros(8, 32), c)
        assert _pypto_frames(e.tb) <= 1
        with pytest.raises(TypeError, match="'main' takes 3 arguments") as e:
            w.run(cp, a)
        assert _pypto_frames(e.tb) <= 1
        t = w.alloc_tensor([16, 32], torch.float32)
        w.free_tensor(t)
        with pytest.raises(DeviceStateError, match="was freed with free_tensor") as e:
            handle(a, t, c)
        assert _pypto_frames(e.tb) <= 1
        with pytest.raises(RuntimeError, match="was freed") as e:
            t.to_host()
        assert _pypto_frames(e.tb) <= 1


def test_internal_errors_keep_their_traceback(cp, monkeypatch) -> None:
    import pypto.runtime.compiled as compiled_mod

    def broken(func, args):
        raise InternalError("a bug in argument binding")

    monkeypatch.setattr(compiled_mod, "bind_host_args", broken)
    with pytest.raises(InternalError) as e:
        cp(*_abc())
    assert _pypto_frames(e.tb) >= 3


def test_an_out_tensor_that_broadcasts_one_element_is_refused_before_the_run(cp) -> None:
    """Results are copied back into Out/InOut host tensors: a broadcast view (stride 0) cannot take
    them (it was a bare torch RuntimeError after the whole run); an In tensor may be one."""
    a, b, _ = _abc()
    c = torch.zeros(1, 32).expand(16, 32)
    with pytest.raises(ArgumentValueError, match=r"argument 'c' of 'main' is written by the program, but its 16 "
                                                 r"elements along axis 0 share one memory location \(stride 0"):
        cp(a, b, c)
    assert torch.equal(c, torch.zeros(16, 32))
    row = torch.randn(1, 32)
    out = torch.zeros(16, 32)
    cp(row.expand(16, 32), b, out)
    torch.testing.assert_close(out, row + b)
