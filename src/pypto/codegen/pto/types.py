"""PTO MLIR type spellings (SPEC §5 "PTO MLIR facts"): pointers, tensor views, tile buffers.

A tile buffer type spells its memory space (`loc=vec|mat|left|right|acc|bias`), element type,
physical rows × cols (a 1-D tile is one row; an N-D tile folds its leading dimensions into rows),
a dynamic valid region (`v_row=?, v_col=?`, given by `valid_row`/`valid_col` operands of
`pto.alloc_tile`) and the box layout of its memory space (table `_LAYOUT`).
"""

from __future__ import annotations

from ...core.dtype import INDEX, DataType
from ...core.enums import MemorySpace, PadValue, TensorLayout
from ...ir.expr import BinaryExpr, ConstInt, Expr
from ...ir.types import ScalarType, TensorType, TileType, Type
from ..common import CodegenError

__all__ = ["elem", "ptr_type", "tensor_view_type", "partition_type", "tile_buf_type", "tile_rows_cols",
           "scalar_type", "tile_space"]

#  memory space      blayout      slayout     fractal bytes (SPEC §6: 512 in Mat/Left/Right, 1024 in Acc)
_LAYOUT: dict[MemorySpace, tuple[str, str, int]] = {
    MemorySpace.Vec: ("row_major", "none_box", 512),
    MemorySpace.Mat: ("col_major", "row_major", 512),
    MemorySpace.Left: ("row_major", "row_major", 512),
    MemorySpace.Right: ("row_major", "col_major", 512),
    MemorySpace.Acc: ("col_major", "row_major", 1024),
    MemorySpace.Bias: ("row_major", "none_box", 512),
}
#  tile layout           box layout it forces
_VIEW_LAYOUT: dict[TensorLayout, tuple[str, str]] = {
    TensorLayout.NZ: ("col_major", "row_major"),
    TensorLayout.DN: ("col_major", "none_box"),
}
_PAD = {PadValue.null: 0, PadValue.zero: 1, PadValue.max: 2, PadValue.min: 3}


def elem(dtype: DataType) -> str:
    """MLIR element type of a dtype (`f32`, `f16`, `bf16`, `i32`, `ui8`, `index`, ...)."""
    return dtype.pto_name


def pto_dims(dtype: DataType, dims: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """Dimensions (or offsets) in PTO elements: the language counts logical elements, but the
    PTOAS element of FP4 is a pair (`f4E2M1x2`, Language Guide "Data Types"), so the innermost
    one is halved for it (docs/language.md "Sub-byte and boolean data types").

    Raises:
        CodegenError: an odd constant innermost dimension or offset of such a type.
    """
    if not dims or not dtype.pto_name.endswith("x2"):
        return tuple(dims)
    last = dims[-1]
    if isinstance(last, ConstInt):
        if last.value % 2:
            raise CodegenError(f"a {dtype.name} innermost dimension or offset must be even (two values "
                               f"per {dtype.pto_name} element), got {last.value}")
        half: Expr = ConstInt(last.value // 2, last.dtype)
    else:
        half = BinaryExpr("floordiv", last, ConstInt(2, INDEX), INDEX, span=last.span)
    return tuple(dims[:-1]) + (half,)


def scalar_type(t: Type) -> str:
    if not isinstance(t, ScalarType):
        raise CodegenError(f"expected a scalar type, got {type(t).__name__}")
    return elem(t.dtype)


def ptr_type(t: TensorType) -> str:
    return f"!pto.ptr<{elem(t.dtype)}>"


def tensor_view_type(t: TensorType) -> str:
    return f"!pto.tensor_view<{'?x' * len(t.shape)}{elem(t.dtype)}>"


def _dim(d: Expr) -> str:
    return str(d.value) if isinstance(d, ConstInt) else "?"


def partition_type(sizes: tuple[Expr, ...], dtype: DataType) -> str:
    """The partition view type of logical `sizes` (in PTO elements, see `pto_dims`)."""
    sizes = pto_dims(dtype, sizes)
    return f"!pto.partition_tensor_view<{'x'.join(_dim(d) for d in sizes)}x{elem(dtype)}>"


def tile_space(t: TileType) -> MemorySpace:
    if t.memref is not None:
        return t.memref.memory_space
    return t.memory_space or MemorySpace.Vec


def tile_rows_cols(shape: tuple[Expr, ...]) -> tuple[int, int]:
    """Physical (rows, cols) of a static tile shape. Raises CodegenError for a dynamic shape."""
    dims = []
    for d in shape:
        if not isinstance(d, ConstInt):
            raise CodegenError(f"tile dimension {d!r} is not static; tiles need compile-time shapes")
        dims.append(d.value)
    if not dims:
        return 1, 1
    rows = 1
    for d in dims[:-1]:
        rows *= d
    return rows, dims[-1]


def tile_buf_type(t: TileType) -> str:
    """`!pto.tile_buf<loc=vec, dtype=f32, rows=32, cols=32, v_row=?, v_col=?, ...>` for `t`."""
    space = tile_space(t)
    if space is MemorySpace.DDR:
        raise CodegenError("a tile cannot live in DDR")
    rows, cols = tile_rows_cols(pto_dims(t.dtype, t.shape))
    blayout, slayout, fractal = _LAYOUT[space]
    pad = 0
    if t.view is not None:
        blayout, slayout = _VIEW_LAYOUT.get(t.view.layout, (blayout, slayout))
        pad = _PAD[t.view.pad]
    return (f"!pto.tile_buf<loc={space.value}, dtype={elem(t.dtype)}, rows={rows}, cols={cols}, "
            f"v_row=?, v_col=?, blayout={blayout}, slayout={slayout}, fractal={fractal}, pad={pad}>")
