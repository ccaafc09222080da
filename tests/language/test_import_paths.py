"""Upstream's public import paths (SPEC §13) are thin modules over ours: same classes, same ops."""

from __future__ import annotations

import pytest

import pypto
import pypto.language as pl
from pypto import ir
from pypto.core import errors as core_errors


def test_top_level_names():
    assert pypto.DataType is pl.FP32.__class__
    assert pypto.FP32 is pl.FP32 and pypto.INDEX is pl.INDEX
    assert pypto.InternalError is core_errors.InternalError
    assert issubclass(pypto.PyPTOError, Exception)


def test_diagnostics_classes_are_ours_and_catch_parser_errors():
    from pypto.language.parser import diagnostics
    from pypto.language.parser.diagnostics import exceptions

    for name in ["ParserError", "ParserSyntaxError", "ParserTypeError", "UndefinedVariableError",
                 "SSAViolationError", "InvalidOperationError"]:
        assert getattr(diagnostics, name) is getattr(core_errors, name)
        assert getattr(exceptions, name) is getattr(core_errors, name)
    assert issubclass(diagnostics.UnsupportedFeatureError, diagnostics.ParserSyntaxError)

    with pytest.raises(diagnostics.UndefinedVariableError) as info:
        @pl.function
        def f(x: pl.Tensor[[16], pl.FP32]) -> pl.Tensor[[16], pl.FP32]:
            return pl.add(x, not_defined_anywhere)  # noqa: F821

    err = info.value
    assert err.span is not None and str(err.span).startswith(__file__ + ":")
    line = int(str(err.span).split(":")[-2])
    with open(__file__) as fh:
        assert "not_defined_anywhere" in fh.read().splitlines()[line - 1]


def test_error_renderer():
    from pypto.language.parser.diagnostics import ErrorRenderer, ParserTypeError
    from pypto.language.parser.diagnostics.renderer import ErrorRenderer as R2

    assert R2 is ErrorRenderer
    with pytest.raises(ParserTypeError) as info:
        pl.parse("import pypto.language as pl\n\n@pl.function\n"
                 "def f(x: pl.Tensor[[16], pl.FP32]) -> pl.Tensor[[16], pl.FP32]:\n"
                 "    y: pl.Tensor[[16], pl.FP32] = pl.add(x, x, x)\n    return y\n", filename="k.py")
    text = ErrorRenderer().render(info.value)
    assert text.startswith("k.py:5:") and ": error: " in text
    assert "pl.add(x, x, x)" in text and "^" in text
    assert ErrorRenderer(kind="warning").render(info.value).split(": ")[1] == "warning"
    assert ErrorRenderer().render(ValueError("plain")) == "ValueError: plain"


_TEXT = '''import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 16], pl.FP32], c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t: pl.Tile[[16, 16], pl.FP32] = pl.tile.load(a, [0, 0], [16, 16])
        c: pl.Tensor[[16, 16], pl.FP32] = pl.tile.store(t, [0, 0], c)
        return c
'''


def test_text_parser():
    from pypto.language.parser.diagnostics import ParserSyntaxError
    from pypto.language.parser.text_parser import parse, parse_program

    prog = parse_program(_TEXT)
    assert isinstance(prog, ir.Program)
    ir.assert_structural_equal(prog, parse(prog.as_python()))
    with pytest.raises(ParserSyntaxError, match="parse_program expects the text of an @pl.program"):
        parse_program(prog.functions[0].as_python())


def test_op_modules_are_the_pl_namespaces_inside_kernels():
    from pypto.language.op import tensor_ops, tile_ops, unified_ops
    from pypto.language.op.system_ops import bar_all

    assert tile_ops.load is pl.tile.load and tensor_ops.add is pl.tensor.add
    assert unified_ops.add is pl.add and bar_all is pl.system.bar_all
    assert "and_" in tile_ops.__all__

    @pl.program
    class Up:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32],
              c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = tile_ops.load(a, [0, 0], [16, 16])
            u = unified_ops.add(t, t)
            c = tile_ops.store(u, [0, 0], c)
            return c

    @pl.program
    class Ours:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32],
              c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.tile.load(a, [0, 0], [16, 16])
            u = pl.add(t, t)
            c = pl.tile.store(u, [0, 0], c)
            return c

    ir.assert_structural_equal(Up, Ours)


def test_ir_op_builders_match_the_parser():
    import pypto.ir.op as irop

    a = ir.Var("a", ir.TensorType((ir.ConstInt(16), ir.ConstInt(16)), pl.FP32))
    load = irop.tile.load(a, [0, 0], [16, 16])
    assert load.op == "tile.load" and dict(load.kwargs)["target_memory"] == pl.Mem.Vec
    assert isinstance(load.result_type, ir.TileType) and load.result_type.dtype == pl.FP32
    mat = irop.tile.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
    assert mat.result_type.memory_space == pl.Mem.Mat
    t = ir.Var("t", load.result_type)
    assert ir.structural_equal(irop.tile.adds(t, 1.0).result_type, load.result_type)
    with pytest.raises(core_errors.CompileError, match="tile.add"):
        irop.tile.add(t, ir.Var("s", ir.ScalarType(pl.FP32)))
    with pytest.raises(AttributeError, match="no op 'nope'"):
        irop.tile.nope  # noqa: B018
    assert "load" in dir(irop.tile)


def test_language_typing_path():
    from pypto.language.typing import InOut, Out, Scalar, Tensor, Tile

    assert (Tensor, Tile, Scalar, Out, InOut) == (pl.Tensor, pl.Tile, pl.Scalar, pl.Out, pl.InOut)
