"""Static facts of one op call in a lowered kernel, for ops that specialise their simulator semantics
per call site (`OpSpec.specialize`, issue 14 item 5: "resolve once per kernel everything that does
not depend on data").

The simulator's kernel compiler builds a `KernelSite` for each op call whose argument values are
either constants or run-time values whose *form* the IR fixes (tiles: arena views of a static shape
and dtype at a planned address; tensors: of a declared static shape, or not). An op's `specialize`
reads it and returns a faster function for that call alone, or None to keep the general `compute`.
The specialised function must give the same numbers, bit for bit, as the general path, and fall
back to it (or raise the same error) whenever a run-time value is not of the form it assumed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from ..ir.types import TensorType, TileType, Type

__all__ = ["KernelSite", "NOT_CONST", "static_dims", "torch_dtype", "const_args", "pieces"]


class _NotConst:
    __slots__ = ()

    def __repr__(self) -> str:
        return "NOT_CONST"


NOT_CONST: Any = _NotConst()
"""The `KernelSite.consts` entry of an argument whose value is only known at run time."""


class KernelSite(NamedTuple):
    """One op call of a kernel, as its `OpSpec.specialize` sees it.

    Attributes:
        consts: per argument, its constant value (an int, a float, a tuple of them) or `NOT_CONST`.
        types: per argument, its IR type.
        attrs: the call's attributes, with `valid=` (a tuple per `OpSpec.valid_args` entry: a shape
            of ints, or None for a fully valid tile) when the op has valid arguments: a site is only
            offered for specialisation when those shapes are constants.
        dst: the type of the result tile the value is written into, or None for a call whose value
            is bound as it is (a tensor result, `tile.store`). With a `dst` the specialised function
            is called `fn(dst_view, *argument_values)` and returns None after writing `dst_view` (or
            a value, which the caller writes into it like a `compute` result); without one, it is
            called `fn(*argument_values)` and returns the value, like `compute`.
        same: per argument, True when it is a tile occupying exactly `dst`'s bytes with `dst`'s
            shape and dtype (the result may be computed in place over it).
        apart: per argument, True when it is not a tile, or a tile sharing no byte with `dst` (for
            a call without `dst`: every argument). An argument neither `same` nor `apart` may
            partially overlap the result: a specialisation writing `dst` directly must not apply.
    """

    consts: tuple[Any, ...]
    types: tuple[Type | None, ...]
    attrs: dict[str, Any]
    dst: TileType | None
    same: tuple[bool, ...]
    apart: tuple[bool, ...]

    def disjoint_or_same(self) -> bool:
        """Every argument either is the destination exactly or shares no byte with it."""
        return all(s or a for s, a in zip(self.same, self.apart))


def static_dims(t: Type | None) -> tuple[int, ...] | None:
    """The shape of a tensor/tile type as ints, or None when a dimension is not a constant."""
    if not isinstance(t, (TensorType, TileType)):
        return None
    dims = []
    for d in t.shape:
        v = getattr(d, "value", None)
        if not isinstance(v, int):
            return None
        dims.append(v)
    return tuple(dims)


def torch_dtype(t: Type | None) -> torch.dtype | None:
    """The torch dtype values of tensor/tile type `t` have in the simulator (None: none, or packed)."""
    dt = getattr(t, "dtype", None)
    if dt is None or not isinstance(t, (TensorType, TileType)) or dt.is_packed():
        return None
    return dt.value_torch()


def const_args(site: KernelSite, *indices: int) -> tuple[Any, ...] | None:
    """The constant values of arguments `indices` (an index past the call's arguments gives None, an
    omitted optional argument); None when one of them is only known at run time."""
    out = []
    for i in indices:
        v = site.consts[i] if i < len(site.consts) else None
        if v is NOT_CONST:
            return None
        out.append(v)
    return tuple(out)


def pieces(lanes: Any) -> Any:
    """The tensors of a batch's lanes (an `OpSpec.batch` form's tensor argument: a sequence with
    lane k's tensor at k) split into runs that stack — views of one buffer with one shape, dtype
    and strides at storage offsets a constant step >= 0 apart (step 0: the same tensor): a list of
    (first lane, end lane, view [end - first, *shape]) covering every lane in order, each run as
    long as possible (a run of one lane is a view with a lane axis of 1); None when a lane is not a
    plain tensor."""
    return getattr(lanes, "pieces", None)
