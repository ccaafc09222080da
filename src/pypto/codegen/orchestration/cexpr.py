"""C++ spellings for host orchestration code: scalar types, literals and scalar expressions."""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from typing import Any

from ...core.dtype import DataType, DTypeKind
from ...ir.expr import BinaryExpr, ConstBool, ConstFloat, ConstInt, Expr, UnaryExpr
from ...ir.types import ScalarType, TensorType, TupleType, Type
from ..common import CodegenError

__all__ = ["c_type", "c_scalar_type", "c_literal", "c_expr", "CPP_KEYWORDS", "HELPERS"]

CPP_KEYWORDS = frozenset("""alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char16_t char32_t class compl const constexpr const_cast continue decltype default delete do double
dynamic_cast else enum explicit export extern false float for friend goto if inline int long mutable
namespace new noexcept not not_eq nullptr operator or or_eq private protected public register
reinterpret_cast return short signed sizeof static static_assert static_cast struct switch template
this thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
wchar_t while xor xor_eq std rt args arg_count main""".split())

_INT_TYPES = {8: "int8_t", 16: "int16_t", 32: "int32_t", 64: "int64_t"}


def c_scalar_type(dt: DataType) -> str:
    """Host C++ type of a scalar dtype (float types narrower than 32 bits travel as float)."""
    if dt.kind is DTypeKind.BOOL:
        return "bool"
    if dt.is_float():
        return "double" if dt.get_bit() > 32 else "float"
    bits = max(8, dt.get_bit())
    base = _INT_TYPES.get(bits, "int64_t")
    return "u" + base if dt.kind is DTypeKind.UINT else base


def c_type(t: Type) -> str:
    if isinstance(t, TensorType):
        return "Tensor"
    if isinstance(t, ScalarType):
        return "TaskId" if t.dtype.name == "TASK_ID" else c_scalar_type(t.dtype)
    if isinstance(t, TupleType):
        return "std::tuple<" + ", ".join(c_type(x) for x in t.types) + ">"
    raise CodegenError(f"a {type(t).__name__} cannot live in host code")


def c_literal(v: Any) -> str:
    """A C++ literal for an attribute or constant value."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return f"{v}LL" if abs(v) >= 2**31 else str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "NAN"
        if math.isinf(v):
            return "INFINITY" if v > 0 else "-INFINITY"
        return repr(v)
    if isinstance(v, DataType):
        return f"DataType::{v.name}"
    if isinstance(v, enum.Enum):
        return f"{type(v).__name__}::{v.name}"
    if isinstance(v, (tuple, list)):
        return "{" + ", ".join(c_literal(x) for x in v) + "}"
    if v is None:
        return "nullptr"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


#  IR operator   C++ template ({a}, {b}, {t} = result type)
_BINARY: dict[str, str] = {
    "add": "({a} + {b})", "sub": "({a} - {b})", "mul": "({a} * {b})",
    "floordiv": "pto_floordiv({a}, {b})", "floormod": "pto_floormod({a}, {b})",
    "truediv": "(static_cast<{t}>({a}) / static_cast<{t}>({b}))", "pow": "static_cast<{t}>(std::pow({a}, {b}))",
    "min": "std::min<{t}>({a}, {b})", "max": "std::max<{t}>({a}, {b})",
    "eq": "({a} == {b})", "ne": "({a} != {b})", "lt": "({a} < {b})", "le": "({a} <= {b})",
    "gt": "({a} > {b})", "ge": "({a} >= {b})", "and": "({a} && {b})", "or": "({a} || {b})",
    "bit_and": "({a} & {b})", "bit_or": "({a} | {b})", "bit_xor": "({a} ^ {b})",
    "shl": "({a} << {b})", "shr": "({a} >> {b})",
}
_UNARY: dict[str, str] = {"neg": "(-{a})", "not": "(!{a})", "bit_not": "(~{a})", "abs": "std::abs({a})",
                          "cast": "static_cast<{t}>({a})"}

# Python floor division / modulo for integers (C++ `/` and `%` truncate toward zero).
HELPERS = """static inline int64_t pto_floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t pto_floormod(int64_t a, int64_t b) { return a - pto_floordiv(a, b) * b; }"""


def c_expr(e: Expr, name_of: Callable[[Expr], str]) -> str:
    """C++ text of a scalar expression; `name_of` renders Vars (and anything else it knows)."""
    if isinstance(e, (ConstInt, ConstFloat, ConstBool)):
        return c_literal(e.value)
    if isinstance(e, BinaryExpr):
        tmpl = _BINARY.get(e.op)
        if tmpl is None:
            raise CodegenError(f"scalar operator '{e.op}' has no C++ form", e.span)
        return tmpl.format(a=c_expr(e.lhs, name_of), b=c_expr(e.rhs, name_of), t=c_scalar_type(e.dtype))
    if isinstance(e, UnaryExpr):
        tmpl = _UNARY.get(e.op)
        if tmpl is None:
            raise CodegenError(f"scalar operator '{e.op}' has no C++ form", e.span)
        return tmpl.format(a=c_expr(e.operand, name_of), t=c_scalar_type(e.dtype))
    return name_of(e)
