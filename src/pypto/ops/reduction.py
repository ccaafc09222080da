"""Row/column reductions and row/column broadcasts (SPEC §3).

Reductions keep the reduced dimension as size 1. Tile reductions take a scratch tile `tmp_tile` of
the input's shape (the hardware uses it for partial results). `row_expand_<op>(x, r)` applies
`<op>` between `x` [M, N] and a column `r` [M, 1] broadcast across N; `col_expand_<op>` uses a row
[1, N] broadcast across M.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.dtype import INDEX
from ..ir.expr import ConstInt, Expr
from ..ir.types import TensorType, TileType, Type
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import dims_equal, expect_tensor, expect_tile, same_dtype, shape_str

_RED = frozenset({"reduction", "vector"})
_ONE = ConstInt(1, INDEX)


def _reduced(shape: tuple[Expr, ...], axis: int) -> tuple[Expr, ...]:
    s = list(shape)
    s[axis] = _ONE
    return tuple(s)


def _reduce_rule(ns: str, axis: int):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        if ns == "tensor":
            t = expect_tensor(args, 0, "x")
            return TensorType(_reduced(t.shape, axis), t.dtype)
        t = expect_tile(args, 0, "x")
        if len(t.shape) != 2:
            raise OpTypeError(f"argument 'x' must be a 2-D tile, got shape {shape_str(t.shape)}")
        tmp = expect_tile(args, 1, "tmp_tile")
        if len(tmp.shape) != 2 or not all(dims_equal(a, b) for a, b in zip(tmp.shape, t.shape)):
            raise OpTypeError(f"argument 'tmp_tile' must have the input's shape {shape_str(t.shape)}, "
                              f"got {shape_str(tmp.shape)}")
        return TileType(_reduced(t.shape, axis), t.dtype, t.memory_space)
    return rule


def _expand_rule(ns: str, axis: int):
    """x [M, N] with a vector reduced along `axis` (size 1 there) → [M, N]."""

    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        get = expect_tensor if ns == "tensor" else expect_tile
        x, v = get(args, 0, "x"), get(args, 1, "vec")
        want = _reduced(x.shape, axis)
        if len(v.shape) != len(x.shape) or not all(dims_equal(a, b) for a, b in zip(v.shape, want)):
            raise OpTypeError(f"argument 'vec' must have shape {shape_str(want)} to broadcast over "
                              f"{shape_str(x.shape)}, got {shape_str(v.shape)}")
        dt = same_dtype([x.dtype, v.dtype], "'x' and 'vec'")
        if ns == "tensor":
            return TensorType(x.shape, dt)
        return TileType(x.shape, dt, x.memory_space)
    return rule


def _red(fn: Any, axis: int):
    return lambda x, *_scratch: fn(x, axis)


#  name       torch reduction over an axis (keepdim)                       pto row / col
_REDUCTIONS = [
    ("sum", lambda x, a: torch.sum(x, dim=a, keepdim=True, dtype=x.dtype), "sum"),
    ("max", lambda x, a: torch.amax(x, dim=a, keepdim=True), "max"),
    ("min", lambda x, a: torch.amin(x, dim=a, keepdim=True), "min"),
]

#  name     torch semantics of (x, broadcast vector)
_EXPANDS = [
    ("add", torch.add),
    ("sub", torch.sub),
    ("mul", torch.mul),
    ("div", torch.div),
    ("max", torch.maximum),
    ("min", torch.minimum),
    ("expdif", lambda x, v: torch.exp(x - v)),
]

for _side, _axis in (("row", -1), ("col", -2)):
    for _name, _fn, _pto in _REDUCTIONS:
        _n = f"{_side}_{_name}"
        register(OpSpec(f"tensor.{_n}", ("x",), _reduce_rule("tensor", _axis), _red(_fn, _axis),
                        reads=(0,), traits=_RED, tile_op=f"tile.{_n}",
                        doc=f"{_name} over the {'last' if _side == 'row' else 'second-to-last'} axis, "
                            f"keeping it as size 1."))
        register(OpSpec(f"tile.{_n}", ("x", "tmp_tile"), _reduce_rule("tile", _axis), _red(_fn, _axis),
                        reads=(0,), writes=(1,), traits=_RED, scratch=(1,), pto=f"pto.t{_side}{_pto}",
                        doc=f"{_name} of each {'row' if _side == 'row' else 'column'} of a 2-D tile "
                            f"into a [M, 1] / [1, N] tile; `tmp_tile` is scratch of the input's shape."))
        for _ns in ("tensor", "tile"):
            register_unified(_n, _ns, False, f"{_ns}.{_n}")
    for _name, _fn in _EXPANDS:
        _n = f"{_side}_expand_{_name}"
        for _ns in ("tensor", "tile"):
            register(OpSpec(f"{_ns}.{_n}", ("x", "vec"), _expand_rule(_ns, _axis), _fn, reads=(0, 1),
                            traits=frozenset({"elementwise", "vector"}),
                            tile_op=f"tile.{_n}" if _ns == "tensor" else None,
                            pto=f"pto.t{_side}expand{_name}" if _ns == "tile" else None,
                            doc=f"{_name} between x [M, N] and a {'column [M, 1]' if _side == 'row' else 'row [1, N]'} "
                                f"broadcast across it."))
            register_unified(_n, _ns, False, f"{_ns}.{_n}")
