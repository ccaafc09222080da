"""Small on-core integer arrays `pl.Array[extent, dtype]` and `pl.array.*` (SPEC §13 "Directives
and helpers").

An array is `extent` integers (1..`MAX_EXTENT`) of an integer dtype, held in the scalar unit's
registers / stack — not a tile: it has no memory space and no MemRef, and memory planning ignores
it. It is a value (IR `ArrayType`): `update_element` returns a new array, so an array carried by a
loop is an `init_values` / `pl.yield_` value like a scalar.

- `array.create(extent, dtype)`: a new array of zeros;
- `array.get_element(array, index)`: element `index` as a Scalar of the array's dtype;
- `array.update_element(array, index, value)`: the array with element `index` set to `value`
  (converted to the dtype; a value it cannot hold is an error).

A constant index out of [0, extent) is a type error; in the simulator any out-of-range index raises
at the op's line. Semantics on torch: an array is a 1-D integer tensor; `update_element` copies it
(the chip writes the register in place, which is the same when the old value is not used again).
All three run on the scalar unit (cost `scalar`).
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.dtype import DataType
from ..ir.expr import ConstInt, Expr
from ..ir.types import ArrayType, ScalarType, Type
from .cost import scalar
from .registry import OpSpec, OpTypeError, register
from .typing_rules import attr_dtype, kind_of

__all__ = ["MAX_EXTENT", "check_array", "type_name"]

MAX_EXTENT = 256   # elements: a handful of scalar registers / stack words, not a buffer


def check_array(extent: Any, dtype: DataType) -> None:
    """Raise ValueError unless `extent` is an int in 1..MAX_EXTENT and `dtype` an integer type."""
    if not isinstance(extent, int) or isinstance(extent, bool) or not 1 <= extent <= MAX_EXTENT:
        raise ValueError(f"an array's extent must be an int in 1..{MAX_EXTENT}, got {extent!r}")
    if not isinstance(dtype, DataType) or not dtype.is_int():
        raise ValueError(f"an array holds integers (INT8..INT64, UINT8..UINT64, INDEX), got {dtype!r}")


def type_name(t: Type) -> str:
    """`Scalar[FP32]` for a scalar (so a wrong dtype shows), else the kind."""
    return f"Scalar[{t.dtype.name}]" if isinstance(t, ScalarType) else kind_of(t)


def _array(args: list[Expr], i: int) -> ArrayType:
    t = args[i].type
    if not isinstance(t, ArrayType):
        raise OpTypeError(f"argument 'array' must be a pl.Array, got {kind_of(t)}")
    return t


def _index(args: list[Expr], arr: ArrayType) -> None:
    t = args[1].type
    if not isinstance(t, ScalarType) or not t.dtype.is_int():
        raise OpTypeError(f"argument 'index' must be an integer scalar, got {type_name(t)}")
    if isinstance(args[1], ConstInt) and not 0 <= args[1].value < arr.extent:
        raise OpTypeError(f"index {args[1].value} is out of range for an array of {arr.extent} elements")


def _create_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    dtype = attr_dtype(attrs, "dtype")
    try:
        check_array(attrs.get("extent"), dtype)
    except ValueError as e:
        raise OpTypeError(str(e)) from None
    return ArrayType(attrs["extent"], dtype)


def _get_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    arr = _array(args, 0)
    _index(args, arr)
    return ScalarType(arr.dtype)


def _update_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    arr = _array(args, 0)
    _index(args, arr)
    t = args[2].type
    if not isinstance(t, ScalarType) or not (t.dtype.is_int() or t.dtype.is_bool()):
        raise OpTypeError(f"argument 'value' must be an integer scalar, got {type_name(t)}")
    return arr


def _at(arr: torch.Tensor, index: int) -> int:
    if not 0 <= index < arr.numel():
        raise RuntimeError(f"array index {index} is out of range for an array of {arr.numel()} elements")
    return int(index)


def _create(extent: int, dtype: DataType) -> torch.Tensor:
    return torch.zeros(extent, dtype=dtype.to_torch(strict=False))


def _get(arr: torch.Tensor, index: int) -> int:
    return int(arr[_at(arr, index)])


def _update(arr: torch.Tensor, index: int, value: int) -> torch.Tensor:
    out = arr.clone()
    info = torch.iinfo(out.dtype)
    if not info.min <= int(value) <= info.max:
        raise RuntimeError(f"array element value {int(value)} does not fit {out.dtype}")
    out[_at(arr, index)] = int(value)
    return out


_ARR = frozenset({"array"})
for _name, _params, _rule, _fn, _attrs, _reads, _writes, _doc in (
        ("create", (), _create_rule, _create, {"extent": None, "dtype": None}, (), (),
         "A new on-core array of `extent` integers of `dtype`, all zero."),
        ("get_element", ("array", "index"), _get_rule, _get, {}, (0, 1), (),
         "Element `index` of `array`, as a Scalar of its dtype."),
        ("update_element", ("array", "index", "value"), _update_rule, _update, {}, (0, 1, 2), (0,),
         "`array` with element `index` set to `value` (a new array value: SSA)."),
):
    register(OpSpec(f"array.{_name}", _params, _rule, _fn, attrs=_attrs, reads=_reads, writes=_writes,
                    traits=_ARR, pto=f"pto.array_{_name}", cost=scalar(), family="array",
                    dtypes="integer arrays (INT8..INT64, UINT8..UINT64, INDEX)", doc=_doc))
