"""Language Guide: Type System, Parameter Directions, Variable Assignment and SSA — every example."""

import warnings

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError, SSAViolationError

GUIDE_BITS = {"BOOL": 1, "INT4": 4, "UINT4": 4, "INT8": 8, "UINT8": 8, "INT16": 16, "UINT16": 16,
              "INT32": 32, "UINT32": 32, "INT64": 64, "UINT64": 64, "FP16": 16, "BF16": 16, "FP32": 32,
              "FP4": 4, "FP8E4M3FN": 8, "FP8E5M2": 8, "FP8E8M0": 8, "HF4": 4, "HF8": 8, "INDEX": 64}


def test_data_type_table():
    for name, bits in GUIDE_BITS.items():
        assert getattr(pl, name).get_bit() == bits, name


def test_container_type_annotations():
    @pl.function
    def f(x: pl.Tensor[[64, 128], pl.FP32], y: pl.Tensor[[256], pl.FP16],
          s: pl.Scalar[pl.FP32], idx: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64, 128], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            t: pl.Tile[[64, 64], pl.FP32] = pl.load(x, [0, 0], [64, 64])
            tn: pl.Tile[[64, 64], pl.FP32, pl.NZ] = pl.load(x, [0, 64], [64, 64])
        return x

    text = f.as_python()
    assert "x: pl.Tensor[[64, 128], pl.FP32], y: pl.Tensor[[256], pl.FP16], s: pl.Scalar[pl.FP32], " \
           "idx: pl.Scalar[pl.INDEX]" in text
    assert "pl.TileView(valid_shape=None, layout=pl.TensorLayout.NZ" in text
    ir.assert_structural_equal(pl.parse(text), f)


def test_nz_on_a_tensor_is_an_error():
    with pytest.raises(ParserTypeError, match="pl.NZ is a tile-only layout"):
        @pl.function
        def f(z: pl.Tensor[[64, 128], pl.FP16, pl.NZ]) -> pl.Tensor[[64, 128], pl.FP16]:
            return z


def test_dn_layout_is_deprecated_with_advice_at_the_user_line():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")

        @pl.function
        def f(b: pl.Tensor[[32, 16], pl.FP32, pl.DN]) -> pl.Tensor[[32, 16], pl.FP32]:  # MARK-DN
            return b

    dep = [x for x in w if issubclass(x.category, DeprecationWarning)]
    assert len(dep) == 1
    assert "b_trans=True" in str(dep[0].message) and "pl.TensorView" in str(dep[0].message)
    assert dep[0].filename == __file__
    assert "MARK-DN" in open(__file__).read().splitlines()[dep[0].lineno - 1]


def test_tensor_view_round_trips():
    @pl.function
    def f(b: pl.Tensor[[16, 32], pl.FP32, pl.TensorView(stride=[1, 16], layout=pl.TensorLayout.DN)]
          ) -> pl.Tensor[[16, 32], pl.FP32]:
        return b

    text = f.as_python()
    assert "pl.TensorView(stride=[1, 16], layout=pl.TensorLayout.DN" in text
    ir.assert_structural_equal(pl.parse(text), f)


M = pl.dynamic("M")
N = pl.dynamic("N")


@pl.program
class Dynamic:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[M, N], pl.FP32], rows: pl.Scalar[pl.INDEX],
              out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for i in pl.range(0, rows, 8):
            t = pl.load(a, [i, 0], [8, 32])
            out = pl.store(pl.mul(t, 3.0), [i, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def dynamic_kernel(self, a: pl.Tensor[[M, N], pl.FP32], rows: pl.Scalar[pl.INDEX],
                       out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.scale(a, rows, out)
        return out


def test_dynamic_dimensions_one_compile_several_shapes():
    compiled = ir.compile(Dynamic, dump_passes=False)
    for m in (8, 24, 64):
        a, out = torch.randn(m, 32), torch.zeros(m, 32)
        compiled(a, m, out)
        torch.testing.assert_close(out, a * 3.0)
    with pytest.raises(ValueError, match="'out'"):
        compiled(torch.randn(8, 32), 8, torch.zeros(16, 32))  # M must agree across parameters


def test_jit_compiles_once_per_specialisation():
    @pl.jit
    def add(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.add(a, b)
        return c

    shapes = [(8, 16), (16, 16), (8, 16), (16, 16), (8, 32)]
    for s in shapes:
        a, b, c = torch.randn(*s), torch.randn(*s), torch.empty(*s)
        add(a, b, c)
        torch.testing.assert_close(c, a + b)
    assert len(add._cache) == 3


def test_parameter_directions_example_parses():
    @pl.function
    def kernel(
        input_a: pl.Tensor[[64], pl.FP32],                    # In
        output_b: pl.Out[pl.Tensor[[64], pl.FP32]],            # Out
        accum_c: pl.InOut[pl.Tensor[[64], pl.FP32]],           # InOut
    ) -> pl.Tensor[[64], pl.FP32]:
        ...

    assert [d.name for d in kernel.param_directions] == ["In", "Out", "InOut"]
    ir.assert_structural_equal(pl.parse(kernel.as_python()), kernel)


def test_non_ssa_and_ssa_examples_give_equal_ir():
    @pl.function
    def example(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        result: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
        result: pl.Tensor[[64], pl.FP32] = pl.add(result, 1.0)  # reassignment OK
        return result

    @pl.function
    def example_ssa(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
        result_0: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
        result_1: pl.Tensor[[64], pl.FP32] = pl.add(result_0, 1.0)
        return result_1

    from pypto.ir import Program
    from pypto.passes.base import PassContext
    from pypto.passes.convert_to_ssa import ConvertToSSA

    def ssa(f):
        return ConvertToSSA().run(Program("p", (f,)), PassContext()).functions[0]

    from dataclasses import replace

    ir.assert_structural_equal(ssa(example), replace(example_ssa, name="example"))
    x = torch.randn(64)
    prog = Program("p", (example,))
    y = ir.compile(prog, dump_passes=False)(x)
    torch.testing.assert_close(y, x * 2.0 + 1.0)


def test_strict_ssa_example():
    with pytest.raises(SSAViolationError, match="'result'"):
        @pl.function(strict_ssa=True)
        def example(x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            result: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
            result: pl.Tensor[[64], pl.FP32] = pl.add(result, 1.0)  # ERROR: SSAViolationError
            return result
