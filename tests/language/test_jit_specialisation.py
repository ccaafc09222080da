"""What a @pl.jit kernel is specialised to (SPEC §7; docs/language.md "@pl.jit specialisation and
caching"): a `pl.dynamic` dimension is not part of the cache key, so one build runs every size;
static dimensions and bare `pl.Tensor` shapes are; `pl.Scalar` arguments are run-time values."""

import pytest
import torch

import pypto.language as pl
from pypto.core.errors import ArgumentValueError
from pypto.ir.expr import ConstInt, Var
from pypto.runtime import CompiledProgram

M = pl.dynamic("M")


@pl.jit.incore
def scale_blocks(x: pl.Tensor, n: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32], y: pl.Out[pl.Tensor]):
    for i in pl.range(0, n, 8):  # n rows, in blocks of 8
        t = pl.load(x, [i, 0], [8, 64])
        y = pl.store(pl.mul(t, s), [i, 0], y)
    return y


def test_a_dynamic_dimension_compiles_once_and_runs_every_size():
    @pl.jit
    def scale(x: pl.Tensor[[M, 64], pl.FP32], s: pl.Scalar[pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        rows = pl.dim(x, 0)
        y = scale_blocks(x, rows, s, y)
        return y

    builds = set()
    for m, s in ((8, 2.0), (24, -1.0), (40, 0.5)):
        x, y = torch.randn(m, 64), torch.zeros(m, 64)
        scale(x, s, y)
        torch.testing.assert_close(y, x * s)
        builds.add(id(scale.compile(x, s, y)))
    assert len(scale._cache) == 1 and len(builds) == 1
    compiled = scale.compile(torch.randn(8, 64), 1.0, torch.zeros(8, 64))
    assert isinstance(compiled, CompiledProgram)
    dims = compiled.program.get_function("scale").params[0].type.shape
    assert isinstance(dims[0], Var) and dims[0].name == "M" and isinstance(dims[1], ConstInt)
    x, y = torch.randn(56, 64), torch.zeros(56, 64)  # the build itself takes a size never compiled for
    compiled(x, 3.0, y)
    torch.testing.assert_close(y, x * 3.0)
    assert len(scale._cache) == 1


def test_static_dimensions_stay_specialised():
    @pl.jit
    def scale(x: pl.Tensor[[M, 64], pl.FP32], s: pl.Scalar[pl.FP32], y: pl.Out[pl.Tensor[[M, 64], pl.FP32]]):
        rows = pl.dim(x, 0)
        y = scale_blocks(x, rows, s, y)
        return y

    good = scale.compile(torch.randn(8, 64), 1.0, torch.zeros(8, 64))
    with pytest.raises(ArgumentValueError, match=r"argument 'x' of 'scale' has shape \[8, 32\], expected \[M, 64\]"):
        scale(torch.randn(8, 32), 1.0, torch.zeros(8, 32))   # the static 64 is checked, not cached over
    assert scale.compile(torch.randn(8, 32), 1.0, torch.zeros(8, 32)) is not good
    with pytest.raises(ArgumentValueError, match="dynamic dimension 'M' .* is 16, but it is 8 in argument 'x'"):
        scale(torch.randn(8, 64), 1.0, torch.zeros(16, 64))  # one M for every parameter


def test_scalar_arguments_are_run_time_values():
    @pl.jit
    def first_blocks(x: pl.Tensor, n: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32], y: pl.Out[pl.Tensor]):
        y = scale_blocks(x, n, s, y)
        return y

    x = torch.randn(32, 64)
    for n, s in ((8, 2.0), (24, -0.5), (16, 3)):
        y = torch.zeros(32, 64)
        first_blocks(x, n, s, y)
        expected = torch.zeros(32, 64)
        expected[:n] = x[:n] * s
        torch.testing.assert_close(y, expected)
    assert len(first_blocks._cache) == 1
    first_blocks(torch.randn(16, 64), 8, 1.0, torch.zeros(16, 64))  # a bare pl.Tensor: its shape is specialised
    assert len(first_blocks._cache) == 2


FACTOR = 2.0
ROWS = 8


def test_module_globals_and_sub_functions_are_part_of_the_key():
    """A kernel reads module globals (and closure variables, and the sub-functions it calls) while
    it is specialised: changing one between calls builds again instead of running the old value;
    the same values hit the cache."""
    global FACTOR, ROWS, scale_blocks

    @pl.jit
    def scaled(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        for i in pl.range(0, 32, ROWS):
            with pl.at(level=pl.Level.CORE_GROUP):
                y[i:i + ROWS, :] = pl.mul(x[i:i + ROWS, :], FACTOR)
        return y

    x, y = torch.randn(32, 64), torch.zeros(32, 64)
    saved = FACTOR, ROWS, scale_blocks
    try:
        scaled(x, y)
        torch.testing.assert_close(y, 2.0 * x)
        FACTOR = 5.0
        scaled(x, y)
        torch.testing.assert_close(y, 5.0 * x)
        assert len(scaled._cache) == 2
        ROWS = 16
        scaled(x, y)
        assert len(scaled._cache) == 3
        FACTOR, ROWS = 2.0, 8
        scaled(x, y)                                  # the first build again
        torch.testing.assert_close(y, 2.0 * x)
        assert len(scaled._cache) == 3

        @pl.jit
        def first_blocks(x: pl.Tensor, n: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32], y: pl.Out[pl.Tensor]):
            y = scale_blocks(x, n, s, y)
            return y

        first_blocks(x, 32, 3.0, y)
        torch.testing.assert_close(y, 3.0 * x)

        @pl.jit.incore
        def scale_blocks(x: pl.Tensor, n: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32], y: pl.Out[pl.Tensor]):
            for i in pl.range(0, n, 8):   # a redefined sub-function: now adds
                t = pl.load(x, [i, 0], [8, 64])
                y = pl.store(pl.add(t, s), [i, 0], y)
            return y

        first_blocks(x, 32, 3.0, y)
        torch.testing.assert_close(y, x + 3.0)
    finally:
        FACTOR, ROWS, scale_blocks = saved


step = 0   # a module global that shares its name with a kernel's loop variable


class _Cfg:
    depth = 1


CFG = _Cfg()


def test_an_attribute_of_a_global_object_is_part_of_the_key():
    """docs/language.md's compile-time `CFG.depth`: changing it between calls builds again."""
    @pl.jit
    def deep(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            if CFG.depth > 2:
                y[:] = pl.mul(x, 3.0)
            else:
                y[:] = pl.mul(x, 2.0)
        return y

    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    try:
        deep(x, y)
        torch.testing.assert_close(y, 2.0 * x)
        CFG.depth = 3
        deep(x, y)
        torch.testing.assert_close(y, 3.0 * x)
    finally:
        CFG.depth = 1
    assert len(deep._cache) == 2


def test_a_kernel_local_named_like_a_changing_global_does_not_rebuild():
    """Only free names count: a kernel whose loop variable is `step` is not rebuilt when a module
    global `step` changes between calls (a script's `for step in range(n): kernel(...)`)."""
    global step

    @pl.jit
    def rows(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        for step in pl.range(0, 32, 8):
            with pl.at(level=pl.Level.CORE_GROUP):
                y[step:step + 8, :] = pl.add(x[step:step + 8, :], 1.0)
        return y

    x, y = torch.randn(32, 64), torch.zeros(32, 64)
    try:
        for step in range(3):
            rows(x, y)
    finally:
        step = 0
    torch.testing.assert_close(y, x + 1.0)
    assert len(rows._cache) == 1 and rows.compile(x, y).last_run.replayed
