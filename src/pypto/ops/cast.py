"""Type conversion: `cast(x, target_type, mode="round")` (SPEC §3).

Modes: round (to nearest, ties to even), floor, ceil, trunc. They matter when converting to an
integer type; float-to-float conversion always rounds to nearest-even (torch semantics).
"""

from __future__ import annotations

from typing import Any

import torch

from ..ir.expr import Expr
from ..ir.types import TensorType, TileType, Type
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import attr_dtype, expect_tensor, expect_tile

CAST_MODES = ("round", "floor", "ceil", "trunc")
_ROUNDERS = {"round": torch.round, "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc}


def _rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        dt = attr_dtype(attrs, "target_type")
        mode = attrs.get("mode", "round")
        if mode not in CAST_MODES:
            raise OpTypeError(f"attribute 'mode' must be one of {', '.join(CAST_MODES)}, got {mode!r}")
        if ns == "tensor":
            return TensorType(expect_tensor(args, 0, "x").shape, dt)
        t = expect_tile(args, 0, "x")
        return TileType(t.shape, dt, t.memory_space, view=t.view)
    return rule


def cast_compute(x: Any, target_type: Any, mode: str = "round") -> Any:
    """Reference semantics of cast on a torch tensor."""
    tdt = target_type.to_torch()
    if x.is_floating_point() and not tdt.is_floating_point and tdt != torch.bool:
        x = _ROUNDERS[mode](x)
    return x.to(tdt)


for _ns in ("tensor", "tile"):
    register(OpSpec(f"{_ns}.cast", ("x",), _rule(_ns), cast_compute,
                    attrs={"target_type": None, "mode": "round"}, reads=(0,),
                    traits=frozenset({"elementwise", "vector"}),
                    tile_op="tile.cast" if _ns == "tensor" else None,
                    pto="pto.tcvt" if _ns == "tile" else None,
                    doc="Convert every element to `target_type` using rounding `mode`."))
    register_unified("cast", _ns, False, f"{_ns}.cast")
