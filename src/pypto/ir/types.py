"""IR types (SPEC §4): ScalarType, TensorType, TileType, TupleType, ArrayType, and the memory descriptors.

Types are immutable. Shapes are tuples of IR expressions: `ConstInt` for static dimensions, a `Var`
of INDEX type for a `pl.dynamic` dimension. Compare types with `pypto.ir.structural_equal`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from ..core.dtype import INT64, DataType
from ..core.enums import MemorySpace, PadValue, TensorLayout
from ..core.errors import InternalError

if TYPE_CHECKING:
    from .expr import Expr

__all__ = [
    "Type", "ScalarType", "TensorType", "TileType", "TupleType", "ArrayType", "MemRef", "TensorView", "TileView",
    "static_shape", "num_elements", "DistributedTensorType", "CommCtxType",
]


@dataclass(frozen=True, slots=True, eq=False)
class Type:
    """Base of all IR types."""


@dataclass(frozen=True, slots=True, eq=False)
class ScalarType(Type):
    """A single value of `dtype` (loop indices are INDEX)."""

    dtype: DataType


@dataclass(frozen=True, slots=True, eq=False)
class TensorView:
    """Explicit strides/layout of a DDR tensor (`pl.TensorView`); `None` fields mean the default."""

    stride: tuple[Expr, ...] | None = None
    layout: TensorLayout = TensorLayout.ND
    valid_shape: tuple[Expr, ...] | None = None
    pad: PadValue = PadValue.null


@dataclass(frozen=True, slots=True, eq=False)
class TensorType(Type):
    """A DDR tensor: `shape` (row-major logical shape), element `dtype`, optional `view`."""

    shape: tuple[Expr, ...]
    dtype: DataType
    view: TensorView | None = None


@dataclass(frozen=True, slots=True, eq=False)
class MemRef:
    """An on-chip buffer chosen by memory planning.

    `id` names the buffer (tiles sharing an id share storage), `size` is in bytes, `addr` is the
    byte offset inside the memory space of the core (-1 until AllocateMemoryAddr runs).
    """

    memory_space: MemorySpace
    id: int
    size: int
    addr: int = -1


@dataclass(frozen=True, slots=True, eq=False)
class TileView:
    """Valid region and layout of a tile (`pl.TileView`); `valid_shape=None` means the whole tile."""

    valid_shape: tuple[Expr, ...] | None = None
    layout: TensorLayout = TensorLayout.ND
    pad: PadValue = PadValue.null


@dataclass(frozen=True, slots=True, eq=False)
class TileType(Type):
    """An on-chip buffer value: `shape`, `dtype`, memory space (None until inferred), MemRef."""

    shape: tuple[Expr, ...]
    dtype: DataType
    memory_space: MemorySpace | None = None
    memref: MemRef | None = None
    view: TileView | None = None

    def with_memory(self, space: MemorySpace | None = None, memref: MemRef | None = None) -> TileType:
        return replace(self, memory_space=space if space is not None else self.memory_space,
                       memref=memref)


@dataclass(frozen=True, slots=True, eq=False)
class TupleType(Type):
    """The type of a multi-value result (a call returning several tensors)."""

    types: tuple[Type, ...] = field(default_factory=tuple)


@dataclass(frozen=True, slots=True, eq=False)
class ArrayType(Type):
    """`pl.Array[extent, dtype]` (SPEC §13): a small on-core array of `extent` integers of `dtype`,
    held in scalar registers (not a tile: no memory space, no MemRef). A value: `array.update_element`
    returns a new array (`pypto.ops.array`)."""

    extent: int
    dtype: DataType


@dataclass(frozen=True, slots=True, eq=False)
class WindowBufferType(Type):
    """The handle of a host window buffer, `pld.alloc_window_buffer(...)` (SPEC §8): a zero-
    initialised, 32-byte aligned slot of every rank's window, living for one host call. Only a HOST
    orchestrator holds one; `pld.window(buf, shape, dtype=)` views it as a `DistributedTensorType`.
    Prints as `pld.WindowBuffer`."""


__all__ += ["WindowBufferType"]


def static_shape(ty: Type) -> tuple[int, ...]:
    """The shape of a tensor/tile type as Python ints.

    Raises:
        InternalError: if a dimension is not a constant (call after dynamic dims are specialised).
    """
    const_int = _const_int()
    dims = []
    for d in ty.shape:  # type: ignore[attr-defined]
        if not isinstance(d, const_int):
            raise InternalError(f"shape dimension {d!r} is not static")
        dims.append(d.value)
    return tuple(dims)


def _const_int() -> type:
    """`expr.ConstInt` (expr imports this module), looked up once."""
    global _CONST_INT
    if _CONST_INT is None:
        from .expr import ConstInt

        _CONST_INT = ConstInt
    return _CONST_INT


_CONST_INT: type | None = None


def num_elements(ty: Type) -> int:
    n = 1
    for d in static_shape(ty):
        n *= d
    return n


# ---- distributed programming (SPEC §8; pypto.ops.distributed) ----------------------------------

@dataclass(frozen=True, slots=True, eq=False)
class DistributedTensorType(TensorType):
    """`pld.DistributedTensor[[shape], dtype]`: a DDR tensor bound to a window — the same slice of
    every rank's symmetric window (SPEC §8). A TensorType, so every tensor op accepts it; the
    remote ops (`pld.*`) require it for their target. Structural equality tells it from a plain
    TensorType (the class is compared)."""


@dataclass(frozen=True, slots=True, eq=False)
class CommCtxType(ScalarType):
    """`pld.CommCtx`: the communication context of a window-bound tensor (`pld.get_comm_ctx`), an
    opaque scalar-like handle (held as an INT64) that `pld.rank` / `pld.nranks` query."""

    dtype: DataType = INT64
