"""Compare and select (SPEC §3 "Compare/select").

- `cmp(lhs, rhs, cmp_type)` / `cmps(lhs, scalar, cmp_type)`: a mask of the operands' shape with
  dtype UINT8, 1 where `lhs <cmp_type> rhs` holds and 0 elsewhere; `cmp_type` is one of
  "eq", "ne", "lt", "le", "gt", "ge". (The hardware packs the predicate bits; the mask here keeps
  one byte per element so it can be stored, cast and inspected like any tile.)
- `sel(mask, lhs, rhs)`: `lhs` where the mask is non-zero, else `rhs` (elementwise).
- `sels(lhs, rhs, select_mode)`: the whole of `lhs` when the scalar `select_mode` is non-zero,
  else the whole of `rhs`.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from ..core.dtype import BOOL, UINT8, promote
from ..ir.expr import Expr
from ..ir.types import Type
from .cost import vector
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import (
    ANY,
    NUMBER,
    attr_choice,
    broadcast_shapes,
    expect_dtype,
    expect_same_kind,
    expect_same_shape,
    expect_scalar,
    same_dtype,
    shaped_like,
)
from .valid import merge_valid, view_for

__all__ = ["CMP_TYPES", "MASK_DTYPE"]

CMP_TYPES = ("eq", "ne", "lt", "le", "gt", "ge")
MASK_DTYPE = UINT8
_CMP_FNS = {"eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
            "ge": operator.ge}


def _cmp_rule(ns: str, scalar: bool):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        attr_choice(attrs, "cmp_type", CMP_TYPES)
        a = expect_same_kind(ns, args, 0, "lhs")
        expect_dtype(a, "lhs", NUMBER)
        if scalar:
            expect_scalar(args, 1, "rhs")
            shape, types = a.shape, [a]
        else:
            b = expect_same_kind(ns, args, 1, "rhs")
            expect_dtype(b, "rhs", NUMBER)
            if ns == "tensor":
                shape = broadcast_shapes(a.shape, b.shape)
                promote(a.dtype, b.dtype)
            else:
                expect_same_shape(a, b, "lhs", "rhs")
                same_dtype([a.dtype, b.dtype], "'lhs' and 'rhs'")
                shape = a.shape
            types = [a, b]
        valid = merge_valid(types, ["lhs", "rhs"], shape)
        return shaped_like(ns, shape, MASK_DTYPE, a, view_for(ns, shape, valid, a.view))
    return rule


def _cmp(lhs: Any, rhs: Any, cmp_type: str = "eq") -> Any:
    return _CMP_FNS[cmp_type](lhs, rhs).to(torch.uint8)


def _sel_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        m = expect_same_kind(ns, args, 0, "mask")
        if m.dtype not in (MASK_DTYPE, BOOL):
            raise OpTypeError(f"argument 'mask' must have dtype UINT8 (a cmp result) or BOOL, "
                              f"got {m.dtype.name}")
        a = expect_same_kind(ns, args, 1, "lhs")
        b = expect_same_kind(ns, args, 2, "rhs")
        expect_dtype(a, "lhs", ANY)
        dt = same_dtype([a.dtype, b.dtype], "'lhs' and 'rhs'")
        if ns == "tensor":
            shape = broadcast_shapes(broadcast_shapes(m.shape, a.shape), b.shape)
        else:
            expect_same_shape(m, a, "mask", "lhs")
            expect_same_shape(a, b, "lhs", "rhs")
            shape = a.shape
        valid = merge_valid([m, a, b], ["mask", "lhs", "rhs"], shape)
        return shaped_like(ns, shape, dt, a, view_for(ns, shape, valid, a.view))
    return rule


def _sel(mask: Any, lhs: Any, rhs: Any) -> Any:
    return torch.where(mask != 0, lhs, rhs)


def _sels_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        a = expect_same_kind(ns, args, 0, "lhs")
        b = expect_same_kind(ns, args, 1, "rhs")
        s = expect_scalar(args, 2, "select_mode")
        if not (s.dtype.is_int() or s.dtype is BOOL):
            raise OpTypeError(f"argument 'select_mode' must be an integer or bool scalar, got {s.dtype.name}")
        expect_same_shape(a, b, "lhs", "rhs")
        dt = same_dtype([a.dtype, b.dtype], "'lhs' and 'rhs'")
        valid = merge_valid([a, b], ["lhs", "rhs"], a.shape)
        return shaped_like(ns, a.shape, dt, a, view_for(ns, a.shape, valid, a.view))
    return rule


def _sels(lhs: Any, rhs: Any, select_mode: Any) -> Any:
    return (lhs if select_mode else rhs).clone()


for _ns in ("tensor", "tile"):
    _t = _ns == "tile"
    # not "elementwise": the operands keep their dtypes (ConvertTensorToTileOps casts the operands
    # of elementwise ops to the result dtype, which is the mask type here)
    _common = dict(traits=frozenset({"vector", "positionwise"}), cost=vector(1.0), family="compare")
    register(OpSpec(f"{_ns}.cmp", ("lhs", "rhs"), _cmp_rule(_ns, False), _cmp, attrs={"cmp_type": "eq"},
                    reads=(0, 1), tile_op=None if _t else "tile.cmp", pto="pto.tcmp" if _t else None,
                    dtypes=NUMBER.text, **_common,
                    doc="Compare elementwise; a UINT8 mask, 1 where `lhs <cmp_type> rhs` "
                        "(cmp_type: eq, ne, lt, le, gt, ge)."))
    register(OpSpec(f"{_ns}.cmps", ("lhs", "rhs"), _cmp_rule(_ns, True), _cmp, attrs={"cmp_type": "eq"},
                    reads=(0, 1), tile_op=None if _t else "tile.cmps", pto="pto.tcmps" if _t else None,
                    dtypes=NUMBER.text, **_common,
                    doc="Compare each element with the scalar `rhs`; a UINT8 mask as for cmp."))
    register(OpSpec(f"{_ns}.sel", ("mask", "lhs", "rhs"), _sel_rule(_ns), _sel, reads=(0, 1, 2),
                    tile_op=None if _t else "tile.sel", pto="pto.tsel" if _t else None, dtypes=ANY.text,
                    **_common, doc="Elementwise select: `lhs` where `mask` is non-zero, else `rhs`."))
    register(OpSpec(f"{_ns}.sels", ("lhs", "rhs", "select_mode"), _sels_rule(_ns), _sels, reads=(0, 1, 2),
                    tile_op=None if _t else "tile.sels", pto="pto.tsels" if _t else None, dtypes=ANY.text,
                    **_common, doc="Whole-operand select: `lhs` if the scalar `select_mode` is non-zero, "
                                   "else `rhs`."))
    register_unified("cmp", _ns, False, f"{_ns}.cmp")
    register_unified("cmp", _ns, True, f"{_ns}.cmps")
    register_unified("cmps", _ns, None, f"{_ns}.cmps")
    register_unified("sel", _ns, None, f"{_ns}.sel")
    register_unified("sels", _ns, None, f"{_ns}.sels")
