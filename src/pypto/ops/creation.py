"""Creation ops (SPEC §3 "Creation").

- `tensor.create(shape, dtype)` / `pl.create_tensor`: a new DDR tensor (zero-filled by the host).
- `tile.create(shape, dtype, target_memory)` / `pl.create_tile`: an on-chip buffer; contents
  undefined until written (scratch tiles, accumulators).
- `full(shape, value, dtype)`: filled with the scalar `value`.
- `ci(start, shape, dtype, descending=False)` (also `pl.arange`): every row holds the integer
  sequence `start, start+1, ...` along the last axis (`start, start-1, ...` when descending).
- `tri(shape, diagonal, dtype, upper=False)`: a 0/1 triangular mask; lower: 1 where
  `col <= row + diagonal`; upper: 1 where `col >= row + diagonal`.

Tile shapes are static; tensor shapes may be dynamic. Tile forms take `target_memory` (default Vec).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ..core.dtype import INT32, DataType
from ..core.enums import MemorySpace
from ..ir.expr import Expr
from ..ir.types import Type
from .cost import free, vector
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import (
    INT,
    NUMBER,
    ON_CHIP,
    attr_dtype,
    attr_space,
    expect_scalar,
    int_list,
    shaped_like,
    static_ints,
)

__all__: list[str] = []


def _shape_of(ns: str, args: list[Expr], attrs: dict[str, Any], i: int) -> tuple[Expr, ...]:
    return static_ints(args, i, "shape") if ns == "tile" else int_list(args, i, "shape")


def _creation_rule(ns: str, shape_arg: int, scalar: tuple[int, str] | None, dclass: Any,
                   scalar_int: bool = False) -> Callable[[list[Expr], dict[str, Any]], Type]:
    """Rule of a creation op: static tile / any tensor `shape` at `shape_arg`, an optional scalar
    operand `scalar = (index, name)`, `dtype` attribute in `dclass`, tiles in `target_memory`."""

    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        shape = _shape_of(ns, args, attrs, shape_arg)
        dt: DataType = attr_dtype(attrs, "dtype")
        if dclass is not None and not dclass.accepts(dt):
            raise OpTypeError(f"attribute 'dtype' must be one of {dclass.text}, got {dt.name}")
        if scalar is not None:
            s = expect_scalar(args, *scalar)
            if scalar_int and not s.dtype.is_int():
                raise OpTypeError(f"argument '{scalar[1]}' must be an integer scalar, got {s.dtype.name}")
        space = attr_space(attrs, ON_CHIP) if ns == "tile" else None
        return shaped_like(ns, shape, dt, space=space)
    return rule


def _tri_rule(ns: str) -> Callable[[list[Expr], dict[str, Any]], Type]:
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        shape = _shape_of(ns, args, attrs, 0)
        if len(shape) != 2:
            raise OpTypeError(f"argument 'shape' must be 2-D, got {len(shape)} entries")
        s = expect_scalar(args, 1, "diagonal")
        if not s.dtype.is_int():
            raise OpTypeError(f"argument 'diagonal' must be an integer scalar, got {s.dtype.name}")
        dt = attr_dtype(attrs, "dtype")
        if not NUMBER.accepts(dt):
            raise OpTypeError(f"attribute 'dtype' must be one of {NUMBER.text}, got {dt.name}")
        space = attr_space(attrs, ON_CHIP) if ns == "tile" else None
        return shaped_like(ns, shape, dt, space=space)
    return rule


def _zeros(shape: tuple[int, ...], dtype: DataType = None, **_: Any) -> Any:
    return torch.zeros(shape, dtype=dtype.value_torch())


def _full(shape: tuple[int, ...], value: Any, dtype: DataType = None, **_: Any) -> Any:
    return torch.full(shape, value, dtype=dtype.value_torch())


def _ci(start: Any, shape: tuple[int, ...], dtype: DataType = None, descending: bool = False,
        **_: Any) -> Any:
    step = -1 if descending else 1
    row = start + step * torch.arange(shape[-1], dtype=torch.int64)
    return row.expand(shape).to(dtype.value_torch()).clone()


def _tri(shape: tuple[int, ...], diagonal: int, dtype: DataType = None, upper: bool = False,
         **_: Any) -> Any:
    rows = torch.arange(shape[0]).unsqueeze(1)
    cols = torch.arange(shape[1]).unsqueeze(0)
    mask = cols >= rows + diagonal if upper else cols <= rows + diagonal
    return mask.to(dtype.value_torch())


_VEC_SPACE = {"target_memory": MemorySpace.Vec}
_HOST = frozenset({"creation", "orchestration"})
_DEV = frozenset({"creation", "vector"})

register(OpSpec("tensor.create", ("shape",), _creation_rule("tensor", 0, None, None), _zeros,
                attrs={"dtype": None}, traits=_HOST, tile_op="tile.create", lowering="zero_fill", cost=free(),
                family="creation",
                dtypes="any", doc="A new DDR tensor of `shape` and `dtype` (zero-filled)."))
register(OpSpec("tile.create", ("shape",), _creation_rule("tile", 0, None, None), None,
                attrs={"dtype": None, **_VEC_SPACE}, traits=frozenset({"creation"}),
                cost=free(), family="creation", dtypes="any",
                doc="An on-chip tile of static `shape` in `target_memory`; contents undefined until written."))
for _ns in ("tensor", "tile"):
    _t = _ns == "tile"
    _attrs = {"dtype": None, **(_VEC_SPACE if _t else {})}
    _traits = _DEV if _t else _HOST
    _lower = {"pto": "pto.texpands"} if _t else {"tile_op": "tile.full"}
    register(OpSpec(f"{_ns}.full", ("shape", "value"), _creation_rule(_ns, 0, (1, "value"), NUMBER), _full,
                    attrs=_attrs, reads=(1,), traits=_traits, cost=vector(1.0), family="creation",
                    dtypes=NUMBER.text, doc="A new value of `shape` and `dtype` filled with the scalar `value`.",
                    **_lower))
    register(OpSpec(f"{_ns}.ci", ("start", "shape"), _creation_rule(_ns, 1, (0, "start"), INT, scalar_int=True), _ci,
                    attrs={"dtype": INT32, "descending": False, **(_VEC_SPACE if _t else {})}, reads=(0,),
                    traits=_traits, cost=vector(1.0), family="creation", dtypes=INT.text,
                    doc="Contiguous integers along the last axis of every row: start + j "
                        "(start - j when `descending`).",
                    **({"pto": "pto.tci"} if _t else {"tile_op": "tile.ci"})))
    register(OpSpec(f"{_ns}.tri", ("shape", "diagonal"), _tri_rule(_ns), _tri,
                    attrs={"dtype": None, "upper": False, **(_VEC_SPACE if _t else {})}, reads=(1,),
                    traits=_traits, cost=vector(1.0), family="creation", dtypes=NUMBER.text,
                    doc="A 0/1 triangular mask of 2-D `shape`: lower keeps col <= row + diagonal, "
                        "upper keeps col >= row + diagonal.",
                    **({"pto": "pto.ttri"} if _t else {"tile_op": "tile.tri"})))

register_unified("create_tensor", "tensor", None, "tensor.create")
register_unified("create_tile", "tile", None, "tile.create")
for _name, _op in (("full", "tensor.full"), ("ci", "tensor.ci"), ("arange", "tensor.ci"), ("tri", "tensor.tri")):
    register_unified(_name, "tensor", None, _op)
