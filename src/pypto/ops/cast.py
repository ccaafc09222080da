"""Type conversion: `cast(x, target_type, mode="round")` (SPEC §3 "Cast").

Modes: round (to nearest, ties to even), floor, ceil, trunc. They matter when converting a float
to an integer type; float-to-float conversion always rounds to nearest-even (torch semantics).
The valid region is carried to the result unchanged. Whether a dtype pair is one hardware
instruction is the backend's business (LegalizeTileCast), not the op's.
"""

from __future__ import annotations

from typing import Any

import torch

from ..ir.expr import Expr
from ..ir.types import TensorType, TileType, Type
from .cost import vector
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import ANY, attr_dtype, expect_dtype, expect_same_kind
from .valid import valid_of, view_for

__all__ = ["CAST_MODES", "cast_compute"]

CAST_MODES = ("round", "floor", "ceil", "trunc")
_ROUNDERS = {"round": torch.round, "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc}


def _rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        dt = attr_dtype(attrs, "target_type")
        mode = attrs.get("mode", "round")
        if mode not in CAST_MODES:
            raise OpTypeError(f"attribute 'mode' must be one of {', '.join(CAST_MODES)}, got {mode!r}")
        t = expect_same_kind(ns, args, 0, "x")
        expect_dtype(t, "x", ANY)
        if not dt.has_torch_dtype:
            raise OpTypeError(f"attribute 'target_type' {dt.name} has no simulated equivalent")
        if isinstance(t, TensorType):
            return TensorType(t.shape, dt, view_for(ns, t.shape, valid_of(t)))
        assert isinstance(t, TileType)
        return TileType(t.shape, dt, t.memory_space, view=t.view)
    return rule


def saturate_to_int(r: Any, tdt: Any) -> Any:
    """Rounded floats `r` as integer dtype `tdt`, saturating: values beyond the type's range become
    its minimum / maximum, NaN becomes 0 (a defined result where a plain conversion is undefined)."""
    info = torch.iinfo(tdt)
    r = r.nan_to_num(nan=0.0, posinf=float("inf"), neginf=float("-inf"))
    hi, lo = r >= float(info.max), r <= float(info.min)
    out = torch.where(hi | lo, torch.zeros_like(r), r).to(tdt)
    return torch.where(hi, info.max, torch.where(lo, info.min, out)).to(tdt)


def cast_compute(x: Any, target_type: Any = None, mode: str = "round") -> Any:
    """Reference semantics of cast on a torch tensor; float -> integer rounds with `mode` and
    saturates (see `saturate_to_int`)."""
    tdt = target_type.to_torch()
    if x.is_floating_point() and not tdt.is_floating_point and tdt != torch.bool:
        return saturate_to_int(_ROUNDERS[mode](x), tdt)
    return x.to(tdt)


for _ns in ("tensor", "tile"):
    register(OpSpec(f"{_ns}.cast", ("x",), _rule(_ns), cast_compute,
                    attrs={"target_type": None, "mode": "round"}, reads=(0,),
                    traits=frozenset({"vector", "positionwise"}),  # not "elementwise": the operand keeps its dtype
                    tile_op="tile.cast" if _ns == "tensor" else None,
                    pto="pto.tcvt" if _ns == "tile" else None, cost=vector(1.0), family="cast",
                    dtypes=ANY.text,
                    doc="Convert every element to `target_type`; float -> integer uses rounding `mode` "
                        "(round = nearest-even, floor, ceil, trunc) and saturates: values beyond the integer "
                        "range become its minimum / maximum, NaN becomes 0."))
    register_unified("cast", _ns, None, f"{_ns}.cast")
