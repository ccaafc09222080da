"""Every annotation mistake is a ParserTypeError at the annotation, whether Python evaluated the
annotation when `def` ran or left it a string (`from __future__ import annotations`). A user trial
found `pl.Tensor[[16, 64], "fp32"]` raising a bare AnnotationError with no file or line."""

from pathlib import Path

import pytest
import torch
from marker_lines import assert_at
from module_files import import_file

from pypto.core.errors import ParserTypeError

# (case name, annotated source line(s) of the kernel, the annotation the caret must point at,
#  the expected message)
CASES = [
    ("string_dtype", 'def k(self, x: pl.Tensor[[16, 64], "fp32"]) -> pl.Tensor[[16, 64], pl.FP32]:',
     'pl.Tensor[[16, 64], "fp32"]',
     "pl.Tensor expects a data type such as pl.FP32, got 'fp32': write pl.FP32 instead of the string 'fp32'"),
    ("missing_dtype", "def k(self, x: pl.Tensor[[16, 64]]) -> pl.Tensor[[16, 64], pl.FP32]:",
     "pl.Tensor[[16, 64]]",
     "pl.Tensor takes [shape, dtype] and an optional layout/view, got pl.Tensor[[16, 64]]"),
    ("zero_dim", "def k(self, x: pl.Tensor[[16, 0], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:",
     "pl.Tensor[[16, 0], pl.FP32]", "dimension must be positive, got 0"),
    ("float_dim", "def k(self, x: pl.Tensor[[16, 64.0], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:",
     "pl.Tensor[[16, 64.0], pl.FP32]", "invalid dimension 64.0: expected an int or pl.dynamic(...)"),
    ("nz_tensor", "def k(self, x: pl.Tensor[[16, 64], pl.FP32, pl.NZ]) -> pl.Tensor[[16, 64], pl.FP32]:",
     "pl.Tensor[[16, 64], pl.FP32, pl.NZ]",
     "pl.NZ is a tile-only layout; it cannot annotate a Tensor (use pl.Tile[..., pl.NZ])"),
    ("string_layout", 'def k(self, x: pl.Tensor[[16, 64], pl.FP32, "ND"]) -> pl.Tensor[[16, 64], pl.FP32]:',
     'pl.Tensor[[16, 64], pl.FP32, "ND"]', "unexpected tensor annotation element 'ND'"),
    ("view_keyword", "def k(self, x: pl.Tensor[[16, 64], pl.FP32, pl.TensorView(strides=[64, 1])]) "
                     "-> pl.Tensor[[16, 64], pl.FP32]:",
     "pl.Tensor[[16, 64], pl.FP32, pl.TensorView(strides=[64, 1])]",
     "pl.TensorView(...): pl.TensorView got an unexpected keyword argument 'strides'"),
    ("scalar_dtype", 'def k(self, x: pl.Tensor[[16, 64], pl.FP32], n: pl.Scalar["int32"]) '
                     "-> pl.Tensor[[16, 64], pl.FP32]:",
     'pl.Scalar["int32"]',
     "pl.Scalar expects a data type such as pl.FP32, got 'int32': write pl.INT32 instead of the string 'int32'"),
    ("out_dtype", 'def k(self, x: pl.Out[pl.Tensor[[16, 64], "bf16"]]) -> pl.Tensor[[16, 64], pl.FP32]:',
     'pl.Out[pl.Tensor[[16, 64], "bf16"]]',
     "pl.Tensor expects a data type such as pl.FP32, got 'bf16': write pl.BF16 instead of the string 'bf16'"),
    ("torch_dtype", "def k(self, x: pl.Tensor[[16, 64], torch.float32]) -> pl.Tensor[[16, 64], pl.FP32]:",
     "pl.Tensor[[16, 64], torch.float32]",
     "pl.Tensor expects a data type such as pl.FP32, got torch.float32: write pl.FP32 (a PyPTO data type) "
     "instead of torch.float32"),
    ("python_type", "def k(self, x: int) -> pl.Tensor[[16, 64], pl.FP32]:", "int",
     "unsupported type annotation <class 'int'>"),
    ("out_return", "def k(self, x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Out[pl.Tensor[[16, 64], pl.FP32]]:",
     "pl.Out[pl.Tensor[[16, 64], pl.FP32]]", "pl.Out / pl.InOut may only annotate function parameters"),
    ("tuple_return", 'def k(self, x: pl.Tensor[[16, 64], pl.FP32]) -> tuple[pl.Tensor[[16, 64], pl.FP32], '
                     'pl.Tensor[[16], "fp16"]]:',
     'tuple[pl.Tensor[[16, 64], pl.FP32], pl.Tensor[[16], "fp16"]]',
     "pl.Tensor expects a data type such as pl.FP32, got 'fp16': write pl.FP16 instead of the string 'fp16'"),
    ("body_tile_dtype", "def k(self, x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:\n"
                        '        t: pl.Tile[[16, 64], "fp32"] = pl.load(x, [0, 0], [16, 64])',
     'pl.Tile[[16, 64], "fp32"]',
     "pl.Tile expects a data type such as pl.FP32, got 'fp32': write pl.FP32 instead of the string 'fp32'"),
    ("body_tile_view", "def k(self, x: pl.Tensor[[16, 64], pl.FP32]) -> pl.Tensor[[16, 64], pl.FP32]:\n"
                       "        t: pl.Tile[[16, 64], pl.FP32, pl.TileView(valid=[16, 64])] = "
                       "pl.load(x, [0, 0], [16, 64])",
     "pl.Tile[[16, 64], pl.FP32, pl.TileView(valid=[16, 64])]",
     "pl.TileView(...): pl.TileView got an unexpected keyword argument 'valid'"),
]


def _module(tmp_path: Path, name: str, future: bool, header: str) -> Path:
    lines = ["from __future__ import annotations"] if future else []
    lines += ["import torch", "", "import pypto.language as pl", "", "", "@pl.program", "class P:",
              "    @pl.function(type=pl.FunctionType.InCore)", f"    {header}", "        return x", ""]
    path = tmp_path / f"{name}_{'future' if future else 'eval'}.py"
    path.write_text("\n".join(lines))
    return path


@pytest.mark.parametrize("future", [False, True], ids=["evaluated", "future"])
@pytest.mark.parametrize(("name", "header", "annotation", "message"), CASES, ids=[c[0] for c in CASES])
def test_an_annotation_mistake_is_located_at_the_annotation(tmp_path, future, name, header, annotation,
                                                            message):
    path = _module(tmp_path, name, future, header)
    with pytest.raises(ParserTypeError) as ei:
        import_file(path)
    err = ei.value
    assert err.message == message
    lines = path.read_text().splitlines()
    line = next(i + 1 for i, text in enumerate(lines) if annotation in text)
    assert (Path(err.span.filename), err.span.begin_line) == (path, line)
    assert err.span.begin_col == lines[line - 1].index(annotation) + 1
    assert str(err).startswith(f"{path}:{line}:{err.span.begin_col}: error: {message}\n")


def test_a_jit_parameter_with_a_string_dtype_is_located_when_the_kernel_is_specialised(tmp_path):
    path = tmp_path / "jit_string_dtype.py"
    path.write_text("import pypto.language as pl\n\n\n"
                    "@pl.jit\n"
                    'def add(a: pl.Tensor[[8, 16], "fp32"], c: pl.Out[pl.Tensor]):\n'
                    "    with pl.at(level=pl.Level.CORE_GROUP):\n"
                    "        c[:] = pl.add(a, a)\n"
                    "    return c\n")
    mod = import_file(path)  # defining the kernel succeeds; its parse reports the mistake
    c = torch.zeros(8, 16)
    with pytest.raises(ParserTypeError) as ei:
        mod.add(torch.ones(8, 16), c)
    assert ei.value.message == ("pl.Tensor expects a data type such as pl.FP32, got 'fp32': write pl.FP32 "
                                "instead of the string 'fp32'")
    assert (Path(ei.value.span.filename), ei.value.span.begin_line, ei.value.span.begin_col) == (path, 5, 12)
    assert torch.equal(c, torch.zeros(8, 16))


def test_a_dtype_spelt_the_torch_way_gets_the_pl_name():
    """`pl.float32` fails in Python itself while `def` runs (before PyPTO sees the function); its
    AttributeError names the PyPTO spelling. In a kernel body it is a located error with the same hint."""
    import pypto.language as pl
    from pypto.core.errors import UndefinedVariableError

    with pytest.raises(AttributeError) as ei:
        pl.float32  # noqa: B018
    assert str(ei.value) == ("module 'pypto.language' has no attribute 'float32'; did you mean pl.FP32? "
                             "(PyPTO data types are pl.FP32, pl.BF16, pl.INT32, ...)")
    with pytest.raises(UndefinedVariableError) as ei:
        @pl.function
        def f(x: pl.Tensor[[16], pl.FP32]) -> pl.Tensor[[16], pl.FP32]:
            y = pl.cast(x, pl.fp16)  # MARK-fp16
            return y
    assert ei.value.message == "Undefined name 'pl.fp16'; did you mean pl.FP16?"
    assert_at(ei.value, __file__, "MARK-fp16")
