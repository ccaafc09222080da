"""Elementwise families: binary ops, their scalar forms, and unary ops (SPEC §3).

Each row of `_BINARY` / `_UNARY` registers the tensor and tile ops of one operator, plus the
unified `pl.X` dispatch entries. Tensor ops broadcast NumPy-style and promote dtypes; tile ops need
equal shapes and dtypes; a scalar form keeps the tensor/tile dtype.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.dtype import FP32, promote
from ..ir.expr import Expr
from ..ir.types import TensorType, TileType, Type
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import (
    broadcast_shapes,
    dims_equal,
    expect_scalar,
    expect_shaped,
    expect_tensor,
    expect_tile,
    same_dtype,
    shape_str,
)

_VEC = frozenset({"elementwise", "vector"})


def _tensor_binary(args: list[Expr], attrs: dict[str, Any]) -> Type:
    a, b = expect_tensor(args, 0, "lhs"), expect_tensor(args, 1, "rhs")
    return TensorType(broadcast_shapes(a.shape, b.shape), promote(a.dtype, b.dtype))


def _tile_binary(args: list[Expr], attrs: dict[str, Any]) -> Type:
    a, b = expect_tile(args, 0, "lhs"), expect_tile(args, 1, "rhs")
    if len(a.shape) != len(b.shape) or not all(dims_equal(x, y) for x, y in zip(a.shape, b.shape)):
        raise OpTypeError(f"tile shapes must match, got {shape_str(a.shape)} and {shape_str(b.shape)}")
    dt = same_dtype([a.dtype, b.dtype], "both tiles")
    return TileType(a.shape, dt, a.memory_space, view=a.view)


def _scalar_form(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = expect_shaped(args, 0, "lhs")
    s = expect_scalar(args, 1, "rhs")
    if isinstance(t, TensorType):
        dt = FP32 if (s.dtype.is_float() and not t.dtype.is_float()) else t.dtype
        return TensorType(t.shape, dt)
    return TileType(t.shape, t.dtype, t.memory_space, view=t.view)


def _tensor_scalar(args: list[Expr], attrs: dict[str, Any]) -> Type:
    expect_tensor(args, 0, "lhs")
    return _scalar_form(args, attrs)


def _tile_scalar(args: list[Expr], attrs: dict[str, Any]) -> Type:
    expect_tile(args, 0, "lhs")
    return _scalar_form(args, attrs)


def _unary(kind: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        if kind == "tensor":
            t = expect_tensor(args, 0, "x")
            return TensorType(t.shape, t.dtype)
        t = expect_tile(args, 0, "x")
        return TileType(t.shape, t.dtype, t.memory_space, view=t.view)
    return rule


def _div(a: Any, b: Any) -> Any:
    return torch.div(a, b)


#  name       scalar name   torch semantics                      pto (tile)   pto scalar
_BINARY = [
    ("add", "adds", torch.add, "tadd", "tadds"),
    ("sub", "subs", torch.sub, "tsub", "tsubs"),
    ("mul", "muls", torch.mul, "tmul", "tmuls"),
    ("div", "divs", _div, "tdiv", "tdivs"),
    ("maximum", "maximums", lambda a, b: torch.maximum(a, torch.as_tensor(b, dtype=a.dtype)),
     "tmax", "tmaxs"),
    ("minimum", "minimums", lambda a, b: torch.minimum(a, torch.as_tensor(b, dtype=a.dtype)),
     "tmin", "tmins"),
]

#  name     torch semantics                         pto
_UNARY = [
    ("exp", torch.exp, "texp"),
    ("log", torch.log, "tlog"),
    ("sqrt", torch.sqrt, "tsqrt"),
    ("rsqrt", torch.rsqrt, "trsqrt"),
    ("recip", torch.reciprocal, "trecip"),
    ("neg", torch.neg, "tneg"),
    ("abs", torch.abs, "tabs"),
    ("relu", torch.relu, "trelu"),
]


def _register_binary(name: str, sname: str, fn: Any, pto: str, spto: str) -> None:
    register(OpSpec(f"tensor.{name}", ("lhs", "rhs"), _tensor_binary, fn, reads=(0, 1),
                    traits=_VEC, tile_op=f"tile.{name}",
                    doc=f"Elementwise {name} of two tensors, broadcasting NumPy-style; "
                        f"dtypes promote (float > int, wider > narrower)."))
    register(OpSpec(f"tile.{name}", ("lhs", "rhs"), _tile_binary, fn, reads=(0, 1), traits=_VEC,
                    pto=f"pto.{pto}",
                    doc=f"Elementwise {name} of two tiles of equal shape and dtype."))
    register(OpSpec(f"tensor.{sname}", ("lhs", "rhs"), _tensor_scalar, fn, reads=(0, 1),
                    traits=_VEC, tile_op=f"tile.{sname}",
                    doc=f"Elementwise {name} of a tensor and a scalar."))
    register(OpSpec(f"tile.{sname}", ("lhs", "rhs"), _tile_scalar, fn, reads=(0, 1), traits=_VEC,
                    pto=f"pto.{spto}",
                    doc=f"Elementwise {name} of a tile and a scalar; the result keeps the tile dtype."))
    for ns in ("tensor", "tile"):
        register_unified(name, ns, False, f"{ns}.{name}")
        register_unified(name, ns, True, f"{ns}.{sname}")
        register_unified(sname, ns, True, f"{ns}.{sname}")


def _register_unary(name: str, fn: Any, pto: str) -> None:
    register(OpSpec(f"tensor.{name}", ("x",), _unary("tensor"), fn, reads=(0,), traits=_VEC,
                    tile_op=f"tile.{name}", doc=f"Elementwise {name} of a tensor."))
    register(OpSpec(f"tile.{name}", ("x",), _unary("tile"), fn, reads=(0,), traits=_VEC,
                    pto=f"pto.{pto}", doc=f"Elementwise {name} of a tile."))
    for ns in ("tensor", "tile"):
        register_unified(name, ns, False, f"{ns}.{name}")


for _row in _BINARY:
    _register_binary(*_row)
for _row in _UNARY:
    _register_unary(*_row)
