"""Row and column reductions (SPEC §3 "Reductions").

Reductions keep the reduced dimension as size 1: `row_*` reduce the last axis ([M, N] -> [M, 1]),
`col_*` the second-to-last ([M, N] -> [1, N]). `*_argmax` / `*_argmin` give INT32 positions (the
first one on ties). Tile reductions take a scratch tile `tmp_tile` of the input's shape (the
hardware keeps partial results there). Only the input's valid region is reduced; the result is
valid over the kept rows (row_*) or columns (col_*).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..core.dtype import INDEX, INT32, DataType
from ..ir.expr import ConstInt, Expr
from ..ir.types import Type
from .cost import vector
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import (
    NUMBER,
    expect_dtype,
    expect_same_kind,
    expect_tile,
    rank2_along,
    shape_str,
    shaped_like,
    shapes_equal,
)
from .valid import poison_outside, reduce_valid, view_for

__all__ = ["restrict_to_valid"]

_RED = frozenset({"reduction", "vector"})


def _reduce_rule(ns: str, axis: int, out_dtype: DataType | None) -> Callable[[list[Expr], dict[str, Any]], Type]:
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        t = expect_same_kind(ns, args, 0, "x")
        expect_dtype(t, "x", NUMBER)
        if ns == "tensor" and len(t.shape) < -axis:
            raise OpTypeError(f"argument 'x' needs at least {-axis} dimensions, got shape {shape_str(t.shape)}")
        if ns == "tile":
            rank2_along(t, axis, "x")
            tmp = expect_tile(args, 1, "tmp_tile")
            if not shapes_equal(tmp.shape, t.shape):
                raise OpTypeError(f"argument 'tmp_tile' must have the input's shape {shape_str(t.shape)}, "
                                  f"got {shape_str(tmp.shape)}")
        shape = list(t.shape)
        shape[axis] = ConstInt(1, INDEX)
        dt = out_dtype or t.dtype
        return shaped_like(ns, tuple(shape), dt, t, view_for(ns, tuple(shape), reduce_valid(t, axis)))
    return rule


def restrict_to_valid(fn: Callable[[Any], Any], x: Any, valid: tuple[int, ...] | None,
                      out_shape: tuple[int, ...]) -> Any:
    """`fn` applied to the valid part of `x`, placed at the origin of a tensor of `out_shape` whose
    remaining entries are poison (see `pypto.ops.valid.poison_outside`)."""
    if valid is None:
        return fn(x)
    r = fn(x[tuple(slice(0, n) for n in valid)])
    out = torch.empty(out_shape, dtype=r.dtype)
    out[tuple(slice(0, n) for n in r.shape)] = r
    return poison_outside(out, tuple(r.shape))


def _red(fn: Callable[[Any, int], Any], axis: int) -> Callable[..., Any]:
    def compute(x: Any, *scratch: Any, valid: tuple | None = None) -> Any:
        out_shape = list(x.shape)
        out_shape[axis] = 1
        return restrict_to_valid(lambda v: fn(v, axis), x, valid[0] if valid else None, tuple(out_shape))
    return compute


def _sum(x: Any, a: int) -> Any:
    return torch.sum(x, dim=a, keepdim=True, dtype=x.dtype)


def _prod(x: Any, a: int) -> Any:
    return torch.prod(x, dim=a, keepdim=True, dtype=x.dtype)


#  name      torch reduction over an axis (keepdim)                          result dtype  work
_REDUCTIONS = [
    ("sum", _sum, None, 1.0),
    ("max", lambda x, a: torch.amax(x, dim=a, keepdim=True), None, 1.0),
    ("min", lambda x, a: torch.amin(x, dim=a, keepdim=True), None, 1.0),
    ("prod", _prod, None, 1.0),
    ("argmax", lambda x, a: torch.argmax(x, dim=a, keepdim=True).to(torch.int32), INT32, 1.5),
    ("argmin", lambda x, a: torch.argmin(x, dim=a, keepdim=True).to(torch.int32), INT32, 1.5),
]

for _side, _axis in (("row", -1), ("col", -2)):
    _along = "each row (last axis) into [M, 1]" if _side == "row" else "each column (axis -2) into [1, N]"
    for _name, _fn, _odt, _f in _REDUCTIONS:
        _n = f"{_side}_{_name}"
        _what = f"{_name} of {_along}" + ("; the result holds INT32 positions" if _odt is INT32 else "")
        _common = dict(reads=(0,), traits=_RED, valid_args=(0,), cost=vector(_f, "in_elems"),
                       family="reduction", dtypes=NUMBER.text)
        register(OpSpec(f"tensor.{_n}", ("x",), _reduce_rule("tensor", _axis, _odt), _red(_fn, _axis),
                        tile_op=f"tile.{_n}", **_common, doc=f"The {_what}."))
        register(OpSpec(f"tile.{_n}", ("x", "tmp_tile"), _reduce_rule("tile", _axis, _odt), _red(_fn, _axis),
                        writes=(1,), scratch=(1,), pto=f"pto.t{_side}{_name}", **_common,
                        doc=f"The {_what}, for a 2-D tile; `tmp_tile` is scratch of the input's shape."))
        for _ns in ("tensor", "tile"):
            register_unified(_n, _ns, None, f"{_ns}.{_n}")
