"""Type conversion: `cast(x, target_type, mode="round")` (SPEC §3 "Cast").

Modes: round (to nearest, ties to even), floor, ceil, trunc. They matter when converting a float
to an integer type; float-to-float conversion always rounds to nearest-even (torch semantics).
The valid region is carried to the result unchanged. Whether a dtype pair is one hardware
instruction is the backend's business (LegalizeTileCast), not the op's.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core import packed
from ..ir.expr import Expr
from ..ir.types import TensorType, TileType, Type
from .cost import vector
from .registry import OpSpec, OpTypeError, register, register_unified
from .site import KernelSite, static_dims, torch_dtype
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
        if not ANY.accepts(dt):
            raise OpTypeError(f"attribute 'target_type' must be {ANY.text}, got {dt.name}")
        if isinstance(t, TensorType):
            return TensorType(t.shape, dt, view_for(ns, t.shape, valid_of(t)))
        assert isinstance(t, TileType)
        return TileType(t.shape, dt, t.memory_space, view=t.view)
    return rule


def saturate_to_int(r: Any, tdt: Any, bounds: tuple[int, int] | None = None) -> Any:
    """Rounded floats `r` as integer dtype `tdt`, saturating: values beyond the type's range
    (`bounds`, default the range of `tdt`) become its minimum / maximum, NaN becomes 0 (a defined
    result where a plain conversion is undefined)."""
    if bounds is None:
        info = torch.iinfo(tdt)
        bounds = (info.min, info.max)
    lo_v, hi_v = bounds
    r = r.nan_to_num(nan=0.0, posinf=float("inf"), neginf=float("-inf"))
    hi, lo = r >= float(hi_v), r <= float(lo_v)
    out = torch.where(hi | lo, torch.zeros_like(r), r).to(tdt)
    return torch.where(hi, hi_v, torch.where(lo, lo_v, out)).to(tdt)


def cast_compute(x: Any, target_type: Any = None, mode: str = "round") -> Any:
    """Reference semantics of cast on a torch tensor of values (`DataType.value_torch()`); float ->
    integer rounds with `mode` and saturates (see `saturate_to_int`); the result holds the target's
    values in `target_type.value_torch()` — a packed 4-bit target rounds to its value set
    (`pypto.core.packed`: FP4 to nearest-even, saturating). BOOL targets are 0 -> False, else True.

    Raises:
        TypeError: a target the simulator cannot hold (HF4, HF8, TASK_ID; SPEC §2.1).
    """
    tdt = target_type.value_torch()
    if tdt is None:
        target_type.to_torch()   # TypeError naming the type
    if x.is_floating_point() and not tdt.is_floating_point and tdt != torch.bool:
        return saturate_to_int(_ROUNDERS[mode](x), tdt, target_type.int_range())
    if target_type.is_packed() and tdt.is_floating_point:
        return packed.quantize(x, target_type)
    if target_type.is_packed():   # integer -> INT4 / UINT4 keeps the low 4 bits, as narrowing does
        return packed.quantize(x.to(torch.int64), target_type)
    return x.to(tdt)


def _cast_site(site: KernelSite) -> Any:
    """`tile.cast` into a tile apart from its operand, of a conversion that is `x.to(target)` in
    `cast_compute` (float -> float, integer -> integer or float; not to BOOL or a packed type):
    one converting `copy_` into the result tile, the same conversion kernel."""
    src, dst = torch_dtype(site.types[0]), torch_dtype(site.dst)
    if src is None or dst is None or not site.apart[0] or dst is torch.bool or src is torch.bool \
            or (src.is_floating_point and not dst.is_floating_point) \
            or static_dims(site.types[0]) != static_dims(site.dst) \
            or site.attrs.get("target_type") is None or site.attrs["target_type"].value_torch() is not dst:
        return None

    def cast(out: Any, x: Any) -> None:
        out.copy_(x)
    return cast


for _ns in ("tensor", "tile"):
    register(OpSpec(f"{_ns}.cast", ("x",), _rule(_ns), cast_compute,
                    specialize=_cast_site if _ns == "tile" else None, batch=_cast_site if _ns == "tile" else None,
                    attrs={"target_type": None, "mode": "round"}, reads=(0,),
                    traits=frozenset({"vector", "positionwise"}),  # not "elementwise": the operand keeps its dtype
                    tile_op="tile.cast" if _ns == "tensor" else None,
                    pto="pto.tcvt" if _ns == "tile" else None, cost=vector(1.0), family="cast",
                    dtypes=ANY.text,
                    doc="Convert every element to `target_type`; float -> integer uses rounding `mode` "
                        "(round = nearest-even, floor, ceil, trunc) and saturates: values beyond the integer "
                        "range become its minimum / maximum, NaN becomes 0."))
    register_unified("cast", _ns, None, f"{_ns}.cast")
