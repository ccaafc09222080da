"""Row/column broadcasts and scalar fills (SPEC §3 "Broadcast").

- `row_expand(x, vec)`: `vec` [M, 1] repeated across the N columns of `x`'s shape [M, N];
  `col_expand(x, vec)`: `vec` [1, N] repeated down the M rows. `x` only gives the result's shape,
  dtype and memory space; its values are not read.
- `row_expand_<op>(x, vec)`: `x <op> vec` with the column `vec` [M, 1] broadcast across N
  (`col_expand_<op>` with a row [1, N] broadcast across M), for op in add, sub, mul, div, max,
  min and expdif (`exp(x - vec)`, the softmax numerator).
- `expands(x, value)`: a tile/tensor shaped like `x` filled with the scalar `value`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..core.dtype import INDEX
from ..ir.expr import ConstInt, Expr
from ..ir.types import TensorType, Type
from .cost import vector
from .elementwise import divide
from .families import VEC
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import (
    ANY,
    FLOAT,
    NUMBER,
    DTypeClass,
    dims_equal,
    expect_dtype,
    expect_same_kind,
    expect_scalar,
    rank2_along,
    same_dtype,
    shape_str,
    shaped_like,
)
from .valid import merge_valid, view_for

__all__: list[str] = []


def _expand_rule(ns: str, axis: int, dclass: DTypeClass) -> Callable[[list[Expr], dict[str, Any]], Type]:
    """x [M, N] with a vector of x's shape except size 1 along `axis` -> [M, N]."""

    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x = expect_same_kind(ns, args, 0, "x")
        v = expect_same_kind(ns, args, 1, "vec")
        if ns == "tile":
            rank2_along(x, axis, "x")
        elif len(x.shape) < 2:
            raise OpTypeError(f"argument 'x' must have at least 2 dimensions, got {shape_str(x.shape)}")
        want = list(x.shape)
        want[axis] = ConstInt(1, INDEX)
        if len(v.shape) != len(x.shape) or not all(dims_equal(a, b) for a, b in zip(v.shape, want)):
            raise OpTypeError(f"argument 'vec' must have shape {shape_str(tuple(want))} to broadcast over "
                              f"{shape_str(x.shape)}, got {shape_str(v.shape)}")
        expect_dtype(x, "x", dclass)
        dt = same_dtype([x.dtype, v.dtype], "'x' and 'vec'")
        valid = merge_valid([x, v], ["x", "vec"], x.shape)
        return shaped_like(ns, x.shape, dt, x, view_for(ns, x.shape, valid, x.view))
    return rule


def _expands_rule(ns: str) -> Callable[[list[Expr], dict[str, Any]], Type]:
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x = expect_same_kind(ns, args, 0, "x")
        expect_scalar(args, 1, "value")
        expect_dtype(x, "x", NUMBER)
        if isinstance(x, TensorType):
            return TensorType(x.shape, x.dtype, view_for(ns, x.shape, merge_valid([x], ["x"], x.shape)))
        return shaped_like(ns, x.shape, x.dtype, x, x.view)
    return rule


def _repeat(x: Any, vec: Any) -> Any:
    return vec.expand(x.shape).clone()


def _fill(x: Any, value: Any) -> Any:
    return torch.full_like(x, value)


#  name     torch semantics of (x, broadcast vector)     dtypes  work
_EXPANDS = [
    ("add", torch.add, NUMBER, 1.0),
    ("sub", torch.sub, NUMBER, 1.0),
    ("mul", torch.mul, NUMBER, 1.0),
    ("div", divide, NUMBER, 2.0),
    ("max", torch.maximum, NUMBER, 1.0),
    ("min", torch.minimum, NUMBER, 1.0),
    ("expdif", lambda x, v: torch.exp(x - v), FLOAT, 3.0),
]

for _side, _axis, _vec in (("row", -1, "a column [M, 1]"), ("col", -2, "a row [1, N]")):
    for _ns in ("tensor", "tile"):
        _t = _ns == "tile"
        _n = f"{_side}_expand"
        register(OpSpec(f"{_ns}.{_n}", ("x", "vec"), _expand_rule(_ns, _axis, ANY), _repeat, reads=(1,),
                        traits=VEC, tile_op=None if _t else f"tile.{_n}",
                        pto=f"pto.t{_side}expand" if _t else None, cost=vector(1.0), family="broadcast",
                        dtypes=ANY.text,
                        doc=f"{_vec.capitalize()} `vec` repeated to the shape of `x` (whose values are "
                            f"not read)."))
        register_unified(_n, _ns, None, f"{_ns}.{_n}")
        for _name, _fn, _dc, _f in _EXPANDS:
            _n = f"{_side}_expand_{_name}"
            register(OpSpec(f"{_ns}.{_n}", ("x", "vec"), _expand_rule(_ns, _axis, _dc), _fn, reads=(0, 1),
                            traits=VEC, tile_op=None if _t else f"tile.{_n}",
                            pto=f"pto.t{_side}expand{_name}" if _t else None, cost=vector(_f),
                            family="broadcast", dtypes=_dc.text,
                            doc=f"{_name} between x [M, N] and {_vec} `vec` broadcast across it."))
            register_unified(_n, _ns, None, f"{_ns}.{_n}")

for _ns in ("tensor", "tile"):
    _t = _ns == "tile"
    register(OpSpec(f"{_ns}.expands", ("x", "value"), _expands_rule(_ns), _fill, reads=(1,), traits=VEC,
                    tile_op=None if _t else "tile.expands", pto="pto.texpands" if _t else None,
                    cost=vector(1.0), family="broadcast", dtypes=NUMBER.text,
                    doc="A value shaped like `x` (whose values are not read) filled with the scalar `value`."))
    register_unified("expands", _ns, None, f"{_ns}.expands")


def expand_op_for(src_shape: tuple[int | None, ...], dst_shape: tuple[int | None, ...]) -> str | None:
    """The tile op that broadcasts a tile of `src_shape` to `dst_shape` (rank >= 2, static dims).

    `[..., M, 1] → [..., M, N]` is `tile.row_expand`, `[1, N] → [M, N]` (leading dimensions 1, see
    `typing_rules.rank2_along`) is `tile.col_expand`; equal shapes
    need nothing (None). Raises ValueError for any other pair (the caller reports it).
    Used by ConvertTensorToTileOps to lower NumPy-style broadcasting of tensor ops.
    """
    if tuple(src_shape) == tuple(dst_shape):
        return None
    if len(src_shape) == len(dst_shape) >= 2:
        lead, (sm, sn), (dm, dn) = src_shape[:-2], src_shape[-2:], dst_shape[-2:]
        if lead == dst_shape[:-2] and sm == dm and sn == 1:
            return "tile.row_expand"
        if lead == dst_shape[:-2] and all(d == 1 for d in lead) and sn == dn and sm == 1:
            return "tile.col_expand"
    raise ValueError(f"no single tile broadcast from {list(src_shape)} to {list(dst_shape)}")


__all__ += ["expand_op_for"]
