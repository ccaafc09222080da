"""Scalar code of a PTO kernel: constants, `arith` operations and type conversions.

`ScalarBuilder` owns the hoisted `arith.constant` lines of one kernel (deduplicated, named
`%c32`, `%c0_i64`, `%cst`, ...) and emits scalar expressions (`BinaryExpr`, `UnaryExpr`, casts)
into the current block. Tables map IR scalar operators to `arith` / `math` ops per operand kind.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from typing import NamedTuple

from ...core.dtype import BOOL, INDEX, INT64, DataType, DTypeKind
from ...ir.expr import BinaryExpr, ConstBool, ConstFloat, ConstInt, UnaryExpr
from ..common import CodegenError, NameAllocator
from .types import elem

__all__ = ["Scalar", "ScalarBuilder", "float_literal"]


class Scalar(NamedTuple):
    """An SSA scalar: its name (with `%`) and IR dtype."""

    name: str
    dtype: DataType


#  IR op         signed/index int   unsigned int    float
_BINARY: dict[str, tuple[str, str, str]] = {
    "add": ("arith.addi", "arith.addi", "arith.addf"),
    "sub": ("arith.subi", "arith.subi", "arith.subf"),
    "mul": ("arith.muli", "arith.muli", "arith.mulf"),
    "floordiv": ("arith.floordivsi", "arith.divui", ""),
    "floormod": ("arith.remsi", "arith.remui", "arith.remf"),
    "truediv": ("arith.divsi", "arith.divui", "arith.divf"),
    "min": ("arith.minsi", "arith.minui", "arith.minimumf"),
    "max": ("arith.maxsi", "arith.maxui", "arith.maximumf"),
    "pow": ("math.ipowi", "math.ipowi", "math.powf"),
    "and": ("arith.andi", "arith.andi", ""),
    "or": ("arith.ori", "arith.ori", ""),
    "bit_and": ("arith.andi", "arith.andi", ""),
    "bit_or": ("arith.ori", "arith.ori", ""),
    "bit_xor": ("arith.xori", "arith.xori", ""),
    "shl": ("arith.shli", "arith.shli", ""),
    "shr": ("arith.shrsi", "arith.shrui", ""),
}
#  IR compare    cmpi signed   cmpi unsigned   cmpf (ordered)
_COMPARE: dict[str, tuple[str, str, str]] = {
    "eq": ("eq", "eq", "oeq"), "ne": ("ne", "ne", "one"), "lt": ("slt", "ult", "olt"),
    "le": ("sle", "ule", "ole"), "gt": ("sgt", "ugt", "ogt"), "ge": ("sge", "uge", "oge"),
}


def _col(dt: DataType) -> int:
    """Column of the op tables for a dtype: 0 signed/index/bool, 1 unsigned, 2 float."""
    if dt.is_float():
        return 2
    return 1 if dt.kind is DTypeKind.UINT else 0


def float_literal(v: float, dt: DataType) -> str:
    """An MLIR float literal for `v` (hexadecimal bit pattern for inf/nan)."""
    if math.isfinite(v):
        s = repr(float(v))
        if "e" in s and "." not in s.split("e")[0]:
            s = s.replace("e", ".0e")
        return s
    bits = struct.unpack("<I", struct.pack("<f", v))[0]
    if dt.name == "FP16":
        return f"0x{struct.unpack('<H', struct.pack('<e', v))[0]:04X}"
    if dt.name == "BF16":
        return f"0x{bits >> 16:04X}"
    return f"0x{bits:08X}"


class ScalarBuilder:
    """Constants and scalar arithmetic of one kernel.

    `emit(line, span)` appends an op line to the current block (supplied by the kernel emitter);
    constant lines collect in `const_lines` and are printed at the top of the function.
    """

    def __init__(self, names: NameAllocator, emit: Callable[[str], None], loc: str) -> None:
        self.names = names
        self.emit = emit
        self.loc = loc  # location of the hoisted constants (the function)
        self.const_lines: list[str] = []
        self._consts: dict[tuple[str, str], Scalar] = {}

    # ---- constants -------------------------------------------------------------------------
    def const(self, value: int | float | bool, dt: DataType) -> Scalar:
        ty = elem(dt)
        if dt is BOOL:
            lit, hint = ("true" if value else "false"), ("true" if value else "false")
        elif dt.is_float():
            lit, hint = float_literal(float(value), dt), "cst"
        else:
            lit = str(int(value))
            hint = f"c{lit}".replace("-", "m") + ("" if dt is INDEX else f"_{ty}")
        key = (lit, ty)
        got = self._consts.get(key)
        if got is None:
            name = "%" + self.names.fresh(hint)
            suffix = "" if dt is BOOL else f" : {ty}"
            self.const_lines.append(f"{name} = arith.constant {lit}{suffix} {self.loc}")
            got = self._consts[key] = Scalar(name, dt)
        return got

    def index(self, n: int) -> Scalar:
        return self.const(n, INDEX)

    # ---- conversions -----------------------------------------------------------------------
    def coerce(self, v: Scalar, to: DataType, loc: str) -> Scalar:
        """`v` converted to dtype `to` (`arith.index_cast`, `extsi`, `sitofp`, ...)."""
        src = v.dtype
        if elem(src) == elem(to):
            return Scalar(v.name, to)
        if src is INDEX or to is INDEX:
            if to.is_float():
                return self.coerce(self.coerce(v, INT64, loc), to, loc)
            if src.is_float():
                return self.coerce(self.coerce(v, INT64, loc), to, loc)
            return self._op("arith.index_cast", [v], to, loc, cast=True)
        if src.is_float() and to.is_float():
            op = "arith.extf" if to.get_bit() > src.get_bit() else "arith.truncf"
        elif src.is_float():
            op = "arith.fptoui" if to.kind is DTypeKind.UINT else "arith.fptosi"
        elif to.is_float():
            op = "arith.uitofp" if src.kind in (DTypeKind.UINT, DTypeKind.BOOL) else "arith.sitofp"
        elif to.get_bit() > src.get_bit():
            op = "arith.extui" if src.kind in (DTypeKind.UINT, DTypeKind.BOOL) else "arith.extsi"
        else:
            op = "arith.trunci"
        return self._op(op, [v], to, loc, cast=True)

    def _op(self, op: str, args: list[Scalar], to: DataType, loc: str, cast: bool = False,
            hint: str = "t") -> Scalar:
        name = "%" + self.names.fresh(hint)
        operands = ", ".join(a.name for a in args)
        if cast:
            self.emit(f"{name} = {op} {operands} : {elem(args[0].dtype)} to {elem(to)} {loc}")
        else:
            self.emit(f"{name} = {op} {operands} : {elem(to)} {loc}")
        return Scalar(name, to)

    # ---- expressions -----------------------------------------------------------------------
    def literal(self, e: ConstInt | ConstFloat | ConstBool) -> Scalar:
        if isinstance(e, ConstBool):
            return self.const(e.value, BOOL)
        return self.const(e.value, e.dtype)

    def binary(self, e: BinaryExpr, lhs: Scalar, rhs: Scalar, loc: str, hint: str) -> Scalar:
        if e.op in _COMPARE:
            dt = lhs.dtype if lhs.dtype.is_float() or not rhs.dtype.is_float() else rhs.dtype
            a, b = self.coerce(lhs, dt, loc), self.coerce(rhs, dt, loc)
            pred = _COMPARE[e.op][_col(dt)]
            op = "arith.cmpf" if dt.is_float() else "arith.cmpi"
            name = "%" + self.names.fresh(hint)
            self.emit(f"{name} = {op} {pred}, {a.name}, {b.name} : {elem(dt)} {loc}")
            return Scalar(name, BOOL)
        row = _BINARY.get(e.op)
        if row is None:
            raise CodegenError(f"scalar operator '{e.op}' has no arith lowering", e.span)
        dt = e.dtype
        a, b = self.coerce(lhs, dt, loc), self.coerce(rhs, dt, loc)
        op = row[_col(dt)]
        if e.op == "floordiv" and dt.is_float():  # floor(a / b)
            q = self._op("arith.divf", [a, b], dt, loc)
            return self._op("math.floor", [q], dt, loc, hint=hint)
        if not op:
            raise CodegenError(f"scalar operator '{e.op}' is not defined on {dt.name}", e.span)
        return self._op(op, [a, b], dt, loc, hint=hint)

    def unary(self, e: UnaryExpr, x: Scalar, loc: str, hint: str) -> Scalar:
        dt = e.dtype
        if e.op == "cast":
            return self.coerce(x, dt, loc)
        x = self.coerce(x, dt, loc)
        if e.op == "neg":
            if dt.is_float():
                return self._op("arith.negf", [x], dt, loc, hint=hint)
            return self._op("arith.subi", [self.const(0, dt), x], dt, loc, hint=hint)
        if e.op in ("not", "bit_not"):
            ones = self.const(True, BOOL) if dt is BOOL else self.const(-1, dt)
            return self._op("arith.xori", [x, ones], dt, loc, hint=hint)
        if e.op == "abs":
            return self._op("math.absf" if dt.is_float() else "math.absi", [x], dt, loc, hint=hint)
        raise CodegenError(f"scalar operator '{e.op}' has no arith lowering", e.span)
