"""Shared helpers for op type rules: argument checks, shape arithmetic, broadcasting (SPEC §3)."""

from __future__ import annotations

from typing import Any

from ..core.dtype import INDEX, DataType
from ..core.enums import MemorySpace
from ..ir.expr import ConstInt, Expr, MakeTuple, Var
from ..ir.types import ScalarType, TensorType, TileType, Type
from .registry import OpTypeError

__all__ = [
    "expect_tensor", "expect_tile", "expect_scalar", "expect_shaped", "int_list", "dims_equal",
    "broadcast_shapes", "const_dims", "shape_str",
]


def _kind(t: Type) -> str:
    if isinstance(t, TensorType):
        return "Tensor"
    if isinstance(t, TileType):
        return "Tile"
    if isinstance(t, ScalarType):
        return "Scalar"
    return type(t).__name__


def expect_tensor(args: list[Expr], i: int, name: str) -> TensorType:
    t = args[i].type
    if not isinstance(t, TensorType):
        raise OpTypeError(f"argument '{name}' must be a Tensor, got {_kind(t)}")
    return t


def expect_tile(args: list[Expr], i: int, name: str,
                spaces: tuple[MemorySpace, ...] | None = None) -> TileType:
    t = args[i].type
    if not isinstance(t, TileType):
        raise OpTypeError(f"argument '{name}' must be a Tile, got {_kind(t)}"
                          + (" (use the pl.tensor.* form or load it first)" if isinstance(t, TensorType)
                             else ""))
    if spaces and t.memory_space is not None and t.memory_space not in spaces:
        want = " or ".join(s.name for s in spaces)
        raise OpTypeError(f"argument '{name}' must be in memory space {want}, "
                          f"but it is in {t.memory_space.name}")
    return t


def expect_shaped(args: list[Expr], i: int, name: str) -> TensorType | TileType:
    t = args[i].type
    if not isinstance(t, (TensorType, TileType)):
        raise OpTypeError(f"argument '{name}' must be a Tensor or Tile, got {_kind(t)}")
    return t


def expect_scalar(args: list[Expr], i: int, name: str) -> ScalarType:
    t = args[i].type
    if not isinstance(t, ScalarType):
        raise OpTypeError(f"argument '{name}' must be a scalar, got {_kind(t)}")
    return t


def int_list(args: list[Expr], i: int, name: str) -> tuple[Expr, ...]:
    """A list argument (offsets, shape) as a tuple of index expressions."""
    a = args[i]
    if not isinstance(a, MakeTuple):
        raise OpTypeError(f"argument '{name}' must be a list of integers")
    for e in a.elements:
        t = e.type
        if not (isinstance(t, ScalarType) and (t.dtype.is_int())):
            raise OpTypeError(f"argument '{name}' must contain integers, got {e!r}")
    return a.elements


def const_dims(dims: tuple[Expr, ...]) -> tuple[int | None, ...]:
    return tuple(d.value if isinstance(d, ConstInt) else None for d in dims)


def dims_equal(a: Expr, b: Expr) -> bool:
    if isinstance(a, ConstInt) and isinstance(b, ConstInt):
        return a.value == b.value
    return a is b or (isinstance(a, Var) and isinstance(b, Var) and a.name == b.name)


def shape_str(shape: tuple[Expr, ...]) -> str:
    return "[" + ", ".join(str(d.value) if isinstance(d, ConstInt) else getattr(d, "name", "?")
                           for d in shape) + "]"


def broadcast_shapes(a: tuple[Expr, ...], b: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """NumPy-style broadcast of two shapes. Raises OpTypeError naming both shapes."""
    out: list[Expr] = []
    n = max(len(a), len(b))
    pa = (ConstInt(1, INDEX),) * (n - len(a)) + tuple(a)
    pb = (ConstInt(1, INDEX),) * (n - len(b)) + tuple(b)
    for x, y in zip(pa, pb):
        if isinstance(x, ConstInt) and x.value == 1:
            out.append(y)
        elif isinstance(y, ConstInt) and y.value == 1:
            out.append(x)
        elif dims_equal(x, y):
            out.append(x)
        else:
            raise OpTypeError(f"shapes {shape_str(a)} and {shape_str(b)} cannot be broadcast together")
    return tuple(out)


def same_dtype(dts: list[DataType], what: str) -> DataType:
    first = dts[0]
    for d in dts[1:]:
        if d is not first:
            raise OpTypeError(f"{what} must have the same dtype, got {first.name} and {d.name}")
    return first


def attr_dtype(attrs: dict[str, Any], key: str) -> DataType:
    d = attrs.get(key)
    if not isinstance(d, DataType):
        raise OpTypeError(f"attribute '{key}' must be a data type such as pl.FP32, got {d!r}")
    return d
