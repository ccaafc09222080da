"""@pl.jit: specialisation from torch arguments, caching, sub-function discovery, in-place Out."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import CompiledProgram, RunConfig


@pl.jit.incore
def scale_rows(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    t = pl.load(x, [0, 0], [32, 64])
    t2 = pl.mul(t, 3.0)
    y = pl.store(t2, [0, 0], y)
    return y


@pl.jit
def entry(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    y = scale_rows(x, y)
    return y


def test_incore_subfunction_is_discovered_and_runs():
    x = torch.randn(32, 64)
    y = torch.zeros(32, 64)
    entry(x, y)
    torch.testing.assert_close(y, x * 3.0)
    prog = entry.specialize(x, y)
    assert prog.function_names == ("entry", "scale_rows")
    assert prog.get_function("scale_rows").func_type is pl.FunctionType.InCore
    assert [d.name for d in prog.get_function("scale_rows").param_directions] == ["In", "Out"]


def test_compile_returns_cached_compiled_program():
    x, y = torch.randn(32, 64), torch.zeros(32, 64)
    c1 = entry.compile(x, y)
    c2 = entry.compile(torch.randn(32, 64), torch.zeros(32, 64))
    assert isinstance(c1, CompiledProgram) and c1 is c2
    assert str(c1) == c1.output_dir
    c1(x, y)
    torch.testing.assert_close(y, x * 3.0)


def test_new_shape_compiles_a_new_specialisation():
    @pl.jit
    def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, b)
        return c

    for shape in [(16, 32), (32, 64)]:
        a, b, c = torch.randn(*shape), torch.randn(*shape), torch.empty(*shape)
        add(a, b, c, config=RunConfig(platform="a2a3sim"))
        torch.testing.assert_close(c, a + b)
    assert len(add._cache) == 2


def test_value_computed_in_scope_and_returned_gets_an_out_buffer():
    @pl.jit
    def double(x: pl.Tensor):
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.add(x, x)
        return y

    x = torch.randn(16, 32)
    out = double(x)
    torch.testing.assert_close(out, x + x)
    prog = double.specialize(x)
    assert ir.structural_equal(prog, pl.parse(prog.as_python()))


def test_input_tensors_are_not_modified_and_shape_errors_name_the_parameter():
    x, y = torch.randn(32, 64), torch.zeros(32, 64)
    x0 = x.clone()
    entry(x, y)
    assert torch.equal(x, x0)
    compiled = entry.compile(x, y)
    with pytest.raises(ValueError, match="'x'"):
        compiled(torch.randn(16, 64), y)


def test_real_npu_platform_reports_missing_toolkit():
    x, y = torch.randn(32, 64), torch.zeros(32, 64)
    with pytest.raises(RuntimeError, match="CANN|ASCEND_HOME_PATH"):
        entry(x, y, config=RunConfig(platform="a2a3"))


def test_auto_scope_rejected_on_incore():
    with pytest.raises(TypeError, match="auto_scope"):
        @pl.jit.incore(auto_scope=False)
        def k(x: pl.Tensor):
            return x
