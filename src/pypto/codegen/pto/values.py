"""Values of the PTO kernel emitter: tile buffers, tensor views, and source locations."""

from __future__ import annotations

from typing import Any, NamedTuple

from ...core.span import Span
from ...ir.types import ArrayType, TensorType, TileType
from .types import tile_space

__all__ = ["TileVal", "TensorVal", "ArrayVal", "array_type_str", "Value", "mlir_loc", "buffer_key"]


class TileVal(NamedTuple):
    """A tile buffer SSA value: name (with `%`), IR type and its `!pto.tile_buf` spelling."""

    name: str
    type: TileType
    tstr: str


class TensorVal(NamedTuple):
    """A DDR tensor: the SSA name of its `pto.make_tensor_view` and its IR type."""

    view: str
    type: TensorType


class ArrayVal(NamedTuple):
    """A small on-core integer array (`pl.Array`): SSA name, IR type and `!pto.array<N x T>` spelling."""

    name: str
    type: ArrayType
    tstr: str


def array_type_str(t: ArrayType) -> str:
    """`!pto.array<8xi32>`: the MLIR type of a `pl.Array[8, pl.INT32]`."""
    return f"!pto.array<{t.extent}x{t.dtype.pto_name}>"


Value = Any  # TileVal | TensorVal | ArrayVal | Scalar


def mlir_loc(span: Span) -> str:
    """`loc("file.py":12:5)`, or `loc(unknown)` for compiler-made code."""
    if not span.is_known():
        return "loc(unknown)"
    f = span.filename.replace("\\", "\\\\").replace('"', '\\"')
    return f'loc("{f}":{span.begin_line}:{span.begin_col})'


def buffer_key(t: TileType) -> tuple:
    m = t.memref
    return (tile_space(t), m.addr if m is not None else -1)
