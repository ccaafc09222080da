"""Values of the PTO kernel emitter: tile buffers, tensor views, and source locations."""

from __future__ import annotations

from typing import Any, NamedTuple

from ...core.span import Span
from ...ir.types import TensorType, TileType
from .types import tile_space

__all__ = ["TileVal", "TensorVal", "Value", "mlir_loc", "buffer_key"]


class TileVal(NamedTuple):
    """A tile buffer SSA value: name (with `%`), IR type and its `!pto.tile_buf` spelling."""

    name: str
    type: TileType
    tstr: str


class TensorVal(NamedTuple):
    """A DDR tensor: the SSA name of its `pto.make_tensor_view` and its IR type."""

    view: str
    type: TensorType


Value = Any  # TileVal | TensorVal | Scalar


def mlir_loc(span: Span) -> str:
    """`loc("file.py":12:5)`, or `loc(unknown)` for compiler-made code."""
    if not span.is_known():
        return "loc(unknown)"
    f = span.filename.replace("\\", "\\\\").replace('"', '\\"')
    return f'loc("{f}":{span.begin_line}:{span.begin_col})'


def buffer_key(t: TileType) -> tuple:
    m = t.memref
    return (tile_space(t), m.addr if m is not None else -1)
