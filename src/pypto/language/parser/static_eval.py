"""Compile-time values of IR scalar expressions, for `pl.static_assert` (SPEC §2.3).

`pl.static_assert(pl.dim(x, 1) == 64)` is decidable while parsing when `x`'s dimension 1 is
static: the parser builds `tensor.dim(x) == 64`, and `static_value` evaluates it. The rules use op
data, not op names: an op that reads no data of its operands (`OpSpec.reads == ()`, writes
nothing) and takes at least one tensor or tile depends only on their types, so its reference
`compute` runs on "meta" tensors of the static shapes (no memory); a dimension query
(`OpSpec.lowering == "shape"`) is the queried dimension itself, so a static dimension of a partly
dynamic tensor is known. Constants fold with Python arithmetic; anything depending on a runtime
value (a `pl.dynamic` dimension, a scalar parameter, a loop variable) has no compile-time value.
"""

from __future__ import annotations

import operator
from typing import Any

from ... import ops as _ops
from ...ir.expr import BinaryExpr, Call, ConstBool, ConstFloat, ConstInt, Expr, MakeTuple, UnaryExpr
from ...ir.types import ScalarType, TensorType, TileType
from ...ops.memory import queried_dim

__all__ = ["static_value", "UNKNOWN"]

UNKNOWN = object()

_BINARY = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
           "floordiv": operator.floordiv, "floormod": operator.mod, "pow": operator.pow, "min": min,
           "max": max, "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
           "gt": operator.gt, "ge": operator.ge, "and": lambda a, b: bool(a and b),
           "or": lambda a, b: bool(a or b), "bit_and": operator.and_, "bit_or": operator.or_,
           "bit_xor": operator.xor, "shl": operator.lshift, "shr": operator.rshift}
_UNARY = {"neg": operator.neg, "not": operator.not_, "abs": abs, "bit_not": operator.invert}


def static_value(e: Expr) -> Any:
    """The Python value (int, float or bool) of scalar expression `e` if it is known at compile
    time, else `UNKNOWN`."""
    if isinstance(e, (ConstInt, ConstFloat, ConstBool)):
        return e.value
    if isinstance(e, BinaryExpr) and e.op in _BINARY:
        a, b = static_value(e.lhs), static_value(e.rhs)
        if a is UNKNOWN or b is UNKNOWN:
            return UNKNOWN
        try:
            return _BINARY[e.op](a, b)
        except (ArithmeticError, TypeError, ValueError):
            return UNKNOWN
    if isinstance(e, UnaryExpr) and e.op in _UNARY:
        a = static_value(e.operand)
        return UNKNOWN if a is UNKNOWN else _UNARY[e.op](a)
    if isinstance(e, Call) and isinstance(e.op, str) and isinstance(e.type, ScalarType):
        return _metadata_call(e)
    return UNKNOWN


def _operand(e: Expr) -> Any:
    t = e.type
    if isinstance(t, (TensorType, TileType)):
        if not all(isinstance(d, ConstInt) for d in t.shape):
            return UNKNOWN  # a pl.dynamic dimension: known at run time only
        import torch

        try:
            dtype = t.dtype.to_torch()
        except TypeError:
            dtype = torch.float32
        return torch.empty(tuple(d.value for d in t.shape), dtype=dtype, device="meta")
    if isinstance(e, MakeTuple):
        vals = tuple(static_value(x) for x in e.elements)
        return UNKNOWN if UNKNOWN in vals else vals
    return static_value(e)


def _metadata_call(c: Call) -> Any:
    spec = _ops.get_op(c.op)  # type: ignore[arg-type]
    shaped = [a for a in c.args if isinstance(a.type, (TensorType, TileType))]
    if spec.reads or spec.writes or spec.compute is None or not shaped:
        return UNKNOWN
    if spec.lowering == "shape":  # a dimension query: the dimension itself, static or not
        dim = queried_dim(c.args, dict(c.kwargs))
        return UNKNOWN if dim is None else static_value(dim)
    args = [_operand(a) for a in c.args]
    if any(a is UNKNOWN for a in args):
        return UNKNOWN
    try:
        value = spec.compute(*args, **dict(c.attrs))
    except Exception:
        return UNKNOWN
    return value if isinstance(value, (bool, int, float)) else UNKNOWN
