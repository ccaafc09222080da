"""Shared helpers for op type rules: argument checks, dtype classes, shape arithmetic and
broadcasting (SPEC §3). Every check raises `OpTypeError` with a message naming the argument and
what was expected; the parser prefixes the op name and adds the user's source location.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core.dtype import BF16, FP16, FP32, INDEX, INT32, DataType, DTypeKind
from ..core.enums import MemorySpace
from ..ir.expr import ConstInt, Expr, MakeTuple, Var
from ..ir.types import ScalarType, TensorType, TileType, TupleType, Type
from .registry import OpTypeError

__all__ = [
    "unit_rule", "index_rule", "no_data",
    "expect_tensor", "expect_tile", "expect_scalar", "expect_shaped", "expect_same_kind", "int_list",
    "static_ints", "dims_equal", "shapes_equal", "expect_same_shape", "broadcast_shapes", "const_dims",
    "shape_str", "same_dtype", "attr_dtype", "attr_int", "attr_choice", "DTypeClass", "FLOAT", "INT",
    "NUMBER", "SIGNED", "ANY", "INDEX_DTYPES", "expect_dtype", "kind_of", "shaped_like", "rank2", "rank2_along",
    "ON_CHIP", "attr_space",
]


def kind_of(t: Type) -> str:
    """"Tensor", "Tile", "Scalar" or the class name: how messages name an argument's kind."""
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
        raise OpTypeError(f"argument '{name}' must be a Tensor, got {kind_of(t)}",
                          "use the pl.tile.* form" if isinstance(t, TileType) else "")
    return t


def expect_tile(args: list[Expr], i: int, name: str,
                spaces: tuple[MemorySpace, ...] | None = None) -> TileType:
    t = args[i].type
    if not isinstance(t, TileType):
        raise OpTypeError(f"argument '{name}' must be a Tile, got {kind_of(t)}",
                          "use the pl.tensor.* form or load it first" if isinstance(t, TensorType) else "")
    if spaces and t.memory_space is not None and t.memory_space not in spaces:
        want = " or ".join(s.name for s in spaces)
        raise OpTypeError(f"argument '{name}' must be in memory space {want}, "
                          f"but it is in {t.memory_space.name}")
    return t


def expect_shaped(args: list[Expr], i: int, name: str) -> TensorType | TileType:
    t = args[i].type
    if not isinstance(t, (TensorType, TileType)):
        raise OpTypeError(f"argument '{name}' must be a Tensor or Tile, got {kind_of(t)}")
    return t


def expect_same_kind(ns: str, args: list[Expr], i: int, name: str,
                     spaces: tuple[MemorySpace, ...] | None = None) -> TensorType | TileType:
    """Argument `i` as a Tensor (ns == "tensor") or a Tile (ns == "tile")."""
    return expect_tensor(args, i, name) if ns == "tensor" else expect_tile(args, i, name, spaces)


def expect_scalar(args: list[Expr], i: int, name: str) -> ScalarType:
    t = args[i].type
    if not isinstance(t, ScalarType):
        raise OpTypeError(f"argument '{name}' must be a scalar, got {kind_of(t)}")
    return t


def int_list(args: list[Expr], i: int, name: str) -> tuple[Expr, ...]:
    """A list argument (offsets, shape) as a tuple of index expressions."""
    a = args[i]
    if not isinstance(a, MakeTuple):
        raise OpTypeError(f"argument '{name}' must be a list of integers, got {kind_of(a.type)}")
    for e in a.elements:
        t = e.type
        if not (isinstance(t, ScalarType) and t.dtype.is_int()):
            raise OpTypeError(f"argument '{name}' must contain integers, got {e!r}")
    return a.elements


def static_ints(args: list[Expr], i: int, name: str, positive: bool = True) -> tuple[Expr, ...]:
    """A list argument whose entries must be compile-time constants (a tile shape)."""
    dims = int_list(args, i, name)
    for d in dims:
        if not isinstance(d, ConstInt):
            raise OpTypeError(f"argument '{name}' must be static (tiles have compile-time shapes)")
        if positive and d.value <= 0:
            raise OpTypeError(f"argument '{name}' must contain positive sizes, got {d.value}")
    return dims


def const_dims(dims: tuple[Expr, ...]) -> tuple[int | None, ...]:
    return tuple(d.value if isinstance(d, ConstInt) else None for d in dims)


def dims_equal(a: Expr, b: Expr) -> bool:
    if isinstance(a, ConstInt) and isinstance(b, ConstInt):
        return a.value == b.value
    return a is b or (isinstance(a, Var) and isinstance(b, Var) and a.name == b.name)


def shapes_equal(a: tuple[Expr, ...], b: tuple[Expr, ...]) -> bool:
    return len(a) == len(b) and all(dims_equal(x, y) for x, y in zip(a, b))


def shape_str(shape: tuple[Expr, ...]) -> str:
    return "[" + ", ".join(str(d.value) if isinstance(d, ConstInt) else getattr(d, "name", "?")
                           for d in shape) + "]"


def expect_same_shape(a: TensorType | TileType, b: TensorType | TileType, na: str, nb: str) -> None:
    if not shapes_equal(a.shape, b.shape):
        raise OpTypeError(f"arguments '{na}' and '{nb}' must have the same shape, got "
                          f"{shape_str(a.shape)} and {shape_str(b.shape)}")


def rank2(t: TensorType | TileType, name: str) -> None:
    if len(t.shape) != 2:
        raise OpTypeError(f"argument '{name}' must be 2-D, got shape {shape_str(t.shape)}")


def rank2_along(t: TensorType | TileType, axis: int, name: str) -> None:
    """Checks a tile for a row (`axis` -1) or column (`axis` -2) op, which PTO runs on the 2-D tile
    [rows, cols]. A tile of rank > 2 is computed as [d0 * ... * dk-1, dk] (FlattenTileNdTo2D):
    that keeps every row, so a row op works on it, but a column op only when the leading
    dimensions are 1 (else it would mix the [dk-1, dk] blocks)."""
    if len(t.shape) < 2:
        raise OpTypeError(f"argument '{name}' must have at least 2 dimensions, got shape {shape_str(t.shape)}")
    lead = const_dims(tuple(t.shape[:-2]))
    if axis == -2 and any(d != 1 for d in lead):
        block = shape_str((ConstInt(1, INDEX),) * len(lead) + tuple(t.shape[-2:]))
        raise OpTypeError(f"a column op on a tile with more than 2 dimensions needs every leading dimension "
                          f"to be 1 (it works on the 2-D tile of the last two axes), got '{name}' of shape "
                          f"{shape_str(t.shape)}; process each {block} block separately (pl.slice or "
                          f"pl.load it in a pl.range loop over the leading axes)")


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
    """The one dtype of `dts`. Raises OpTypeError naming `what` and both dtypes, with the cast that
    fixes it, when they differ (tile ops need equal dtypes: docs/operators.md)."""
    first = dts[0]
    for d in dts[1:]:
        if d is not first:
            raise OpTypeError(f"{what} must have the same dtype, got {first.name} and {d.name}; cast one "
                              f"first, e.g. pl.cast(value, pl.{first.name})")
    return first


def attr_dtype(attrs: dict[str, Any], key: str) -> DataType:
    d = attrs.get(key)
    if not isinstance(d, DataType):
        raise OpTypeError(f"attribute '{key}' must be a data type such as pl.FP32, got {d!r}")
    return d


def attr_int(attrs: dict[str, Any], key: str, lo: int | None = None, hi: int | None = None) -> int:
    v = attrs.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or (lo is not None and v < lo) or \
            (hi is not None and v > hi):
        rng = f" in [{lo}, {hi}]" if lo is not None and hi is not None else ""
        raise OpTypeError(f"attribute '{key}' must be an integer{rng}, got {v!r}")
    return v


def attr_choice(attrs: dict[str, Any], key: str, choices: tuple[Any, ...]) -> Any:
    v = attrs.get(key)
    if v not in choices:
        raise OpTypeError(f"attribute '{key}' must be one of {', '.join(map(repr, choices))}, got {v!r}")
    return v


@dataclass(frozen=True)
class DTypeClass:
    """A set of element types an op accepts: `text` for messages and docs, `accepts` to check."""

    text: str
    accepts: Callable[[DataType], bool]

    def __or__(self, other: DTypeClass) -> DTypeClass:
        return DTypeClass(f"{self.text}, {other.text}", lambda d: self.accepts(d) or other.accepts(d))


FLOAT = DTypeClass("FP16, BF16, FP32", lambda d: d in (FP16, BF16, FP32))
_SINT = DTypeClass("INT8, INT16, INT32, INT64", lambda d: d.is_signed_int() and d is not INDEX
                   and d.get_bit() >= 8)
_UINT = DTypeClass("UINT8, UINT16, UINT32, UINT64", lambda d: d.is_unsigned_int() and d.get_bit() >= 8)
INT = _SINT | _UINT
SIGNED = FLOAT | _SINT
NUMBER = FLOAT | INT
#  HF4 / HF8 type-check (the hardware has them); running them is refused (SPEC §2.1, simulator)
ANY = DTypeClass("any element type except TASK_ID", lambda d: d.kind is not DTypeKind.TASK_ID)
INDEX_DTYPES = DTypeClass("INT32", lambda d: d is INT32)


def expect_dtype(t: TensorType | TileType | ScalarType, name: str, cls: DTypeClass) -> DataType:
    if not cls.accepts(t.dtype):
        raise OpTypeError(f"argument '{name}' must have dtype {cls.text}, got {t.dtype.name}")
    return t.dtype


def shaped_like(ns: str, shape: tuple[Expr, ...], dtype: DataType, src: TensorType | TileType | None = None,
                view: Any = None, space: MemorySpace | None = None) -> TensorType | TileType:
    """A fresh Tensor (ns "tensor") or Tile of `shape`/`dtype`; a tile keeps `src`'s memory space."""
    if ns == "tensor":
        return TensorType(tuple(shape), dtype, view)
    sp = space if space is not None else (src.memory_space if isinstance(src, TileType) else None)
    return TileType(tuple(shape), dtype, sp, view=view)


ON_CHIP = tuple(m for m in MemorySpace if m is not MemorySpace.DDR)


def attr_space(attrs: dict[str, Any], allowed: tuple[MemorySpace, ...], key: str = "target_memory") -> MemorySpace:
    """Attribute `key` as one of the `allowed` memory spaces."""
    sp = attrs.get(key)
    if not isinstance(sp, MemorySpace) or sp not in allowed:
        names = ", ".join(f"pl.Mem.{s.name}" for s in allowed)
        raise OpTypeError(f"attribute '{key}' must be one of {names}, got {sp!r}")
    return sp


def unit_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    """Type rule of an op that produces no value (barriers, flags, fences): the empty tuple."""
    return TupleType(())


def index_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    """Type rule of an operand-less op with an INDEX scalar result (block ids, core counts)."""
    return ScalarType(INDEX)


def no_data(*_: Any, **__: Any) -> None:
    """Torch semantics of an op with no effect on data (synchronisation only, in the simulator)."""
    return None
