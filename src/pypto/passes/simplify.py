"""Simplify: constant folding and algebraic simplification of scalar expressions (SPEC §5).

Index arithmetic written by users or produced by other passes (`i * 16 + 0`, `(k + 1) + 1`,
`4 * 8` after unrolling) is folded so that op type rules see constants (and can check bounds) and
codegen emits fewer scalar instructions. The rewrites are a table of (operators, rule) pairs — each
rule returns the replacement or None — run bottom-up to a fixed point by one driver (STYLE rule 6).

An `if` whose condition folds to a constant is replaced by the branch it takes. A dimension query
(`pl.dim(x, i)`) of a static dimension folds to the constant, in a kernel one of a dynamic dimension
to its `pl.dynamic` variable. A tuple bound to a variable and read
only element-wise (an inline helper's multiple returns) is first taken apart (split_tuples.py).

Only integer, INDEX and BOOL arithmetic is folded; float scalars are left alone (folding them would
change rounding). Integer folding follows the simulator's semantics: results wrap to the dtype's
width, `//` and `%` round toward negative infinity (Python), division by zero is never folded.
Identity rules (`x + 0 → x`) apply only when `x` already has the expression's dtype, so no
rewrite changes a type.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import replace

from ..core.dtype import BOOL, DataType
from ..core.enums import KERNEL_TYPES
from ..ir.expr import BinaryExpr, Call, ConstBool, ConstInt, Expr, UnaryExpr, Var
from ..ir.function import Function, Program
from ..ir.stmt import IfStmt, SeqStmts, Stmt, YieldStmt
from ..ir.types import ScalarType
from ..ir.visitor import IRMutator
from ..ops import get_op
from ..ops.memory import queried_dim
from .base import FunctionPass, PassContext
from .split_tuples import split_tuple_bindings

__all__ = ["Simplify", "simplify_expr", "RULES", "dim_query_value"]


def _int(e: Expr) -> int | None:
    """The value of an integer constant (not BOOL), else None."""
    return e.value if isinstance(e, ConstInt) and e.dtype.is_int() else None


def _bool(e: Expr) -> bool | None:
    return e.value if isinstance(e, ConstBool) else None


def _dtype(e: Expr) -> DataType | None:
    t = e.type
    return t.dtype if isinstance(t, ScalarType) else None


def _wrap(value: int, dtype: DataType) -> int:
    """`value` brought into the range of integer `dtype` (two's complement wrap-around)."""
    mod = 1 << dtype.bits
    if dtype.is_unsigned_int():
        return value % mod
    half = mod >> 1
    return (value + half) % mod - half


def _const(value: int | bool, dtype: DataType, span) -> Expr:  # type: ignore[no-untyped-def]
    if dtype is BOOL:
        return ConstBool(bool(value), span=span)
    return ConstInt(_wrap(int(value), dtype), dtype, span=span)


def _same(a: Expr, b: Expr) -> bool:
    """Syntactically the same value: one Var, or equal integer constants."""
    return (isinstance(a, Var) and a is b) or (_int(a) is not None and _int(a) == _int(b))


def _keeps(x: Expr, e: Expr) -> Expr | None:
    """`x` as the replacement of `e` if it has `e`'s dtype (identity rules never change types)."""
    return x if _dtype(x) is e.dtype else None


_FOLD: dict[str, Callable[[int, int], int | bool]] = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv,
    "floormod": operator.mod, "min": min, "max": max, "bit_and": operator.and_,
    "bit_or": operator.or_, "bit_xor": operator.xor, "shl": operator.lshift, "shr": operator.rshift,
    "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
    "ge": operator.ge,
}
_COMMUTATIVE = frozenset({"add", "mul", "min", "max", "bit_and", "bit_or", "bit_xor", "eq", "ne"})
_SAFE_RHS = {"floordiv": lambda b: b != 0, "floormod": lambda b: b != 0,
             "shl": lambda b: 0 <= b < 64, "shr": lambda b: 0 <= b < 64}


def _fold_int(e: BinaryExpr) -> Expr | None:
    a, b = _int(e.lhs), _int(e.rhs)
    if a is None or b is None or not _SAFE_RHS.get(e.op, lambda _: True)(b):
        return None
    if e.dtype is not BOOL and not e.dtype.is_int():
        return None
    return _const(_FOLD[e.op](a, b), e.dtype, e.span)


def _fold_logic(e: BinaryExpr) -> Expr | None:
    a, b = _bool(e.lhs), _bool(e.rhs)
    if a is None or b is None:
        return None
    return ConstBool((a and b) if e.op == "and" else (a or b), span=e.span)


def _swap_const_right(e: BinaryExpr) -> Expr | None:
    if _int(e.lhs) is not None and _int(e.rhs) is None:
        return replace(e, lhs=e.rhs, rhs=e.lhs)
    return None


def _reassociate(e: BinaryExpr) -> Expr | None:
    inner, c2 = e.lhs, _int(e.rhs)
    if c2 is None or not isinstance(inner, BinaryExpr) or inner.dtype is not e.dtype:
        return None
    c1 = _int(inner.rhs)
    if c1 is None or _dtype(inner.rhs) is not _dtype(e.rhs):
        return None
    ops = (inner.op, e.op)
    if ops == ("mul", "mul"):
        return replace(e, lhs=inner.lhs, rhs=_const(c1 * c2, e.dtype, e.rhs.span))
    sign = {("add", "add"): (1, 1), ("add", "sub"): (1, -1), ("sub", "add"): (-1, 1),
            ("sub", "sub"): (-1, -1)}.get(ops)  # type: ignore[arg-type]
    if sign is None:
        return None
    total = sign[0] * c1 + sign[1] * c2
    if total < 0 and e.dtype.is_signed_int():
        return replace(e, op="sub", lhs=inner.lhs, rhs=_const(-total, e.dtype, e.rhs.span))
    return replace(e, op="add", lhs=inner.lhs, rhs=_const(total, e.dtype, e.rhs.span))


def _distribute(e: BinaryExpr) -> Expr | None:
    inner, c2 = e.lhs, _int(e.rhs)
    if c2 is None or not isinstance(inner, BinaryExpr) or inner.op not in ("add", "sub") \
            or inner.dtype is not e.dtype or _int(inner.rhs) is None:
        return None
    scaled = BinaryExpr("mul", inner.lhs, e.rhs, e.dtype, span=inner.span)
    return replace(inner, lhs=scaled, rhs=_const(_int(inner.rhs) * c2, e.dtype, inner.rhs.span))


def _absorb(e: BinaryExpr) -> Expr | None:
    absorbing = e.op == "or"  # False absorbs `and`, True absorbs `or`
    if _bool(e.lhs) is absorbing or _bool(e.rhs) is absorbing:
        return ConstBool(absorbing, span=e.span)
    return None


def _rhs_is(value: int) -> Callable[[BinaryExpr], bool]:
    return lambda e: _int(e.rhs) == value


#  binary rules: (operators, rule); every rule sees children that are already simplified
RULES: list[tuple[frozenset[str], Callable[[BinaryExpr], Expr | None]]] = [
    # c1 op c2 → c (integer arithmetic, comparisons)
    (frozenset(_FOLD), _fold_int),
    # True and False → False, ... (boolean constants)
    (frozenset({"and", "or"}), _fold_logic),
    # c op x → x op c for commutative op (constants to the right, so the rules below see them)
    (_COMMUTATIVE, _swap_const_right),
    # x + 0 → x ; x - 0 → x ; x | 0 → x ; x ^ 0 → x ; x << 0 → x ; x >> 0 → x
    (frozenset({"add", "sub", "bit_or", "bit_xor", "shl", "shr"}),
     lambda e: _keeps(e.lhs, e) if _rhs_is(0)(e) else None),
    # x * 1 → x ; x // 1 → x
    (frozenset({"mul", "floordiv"}), lambda e: _keeps(e.lhs, e) if _rhs_is(1)(e) else None),
    # x * 0 → 0 ; x % 1 → 0 ; x & 0 → 0 (integers)
    (frozenset({"mul", "bit_and"}),
     lambda e: _const(0, e.dtype, e.span) if _rhs_is(0)(e) and e.dtype.is_int() else None),
    (frozenset({"floormod"}),
     lambda e: _const(0, e.dtype, e.span) if _rhs_is(1)(e) and e.dtype.is_int() else None),
    # x - x → 0 ; x % x is not folded (x may be 0)
    (frozenset({"sub"}),
     lambda e: _const(0, e.dtype, e.span) if e.dtype.is_int() and _same(e.lhs, e.rhs) else None),
    # min(x, x) → x ; max(x, x) → x
    (frozenset({"min", "max"}), lambda e: _keeps(e.lhs, e) if _same(e.lhs, e.rhs) else None),
    # x == x, x <= x, x >= x → True ; x != x, x < x, x > x → False (integers only: no NaN)
    (frozenset({"eq", "le", "ge", "ne", "lt", "gt"}),
     lambda e: ConstBool(e.op in ("eq", "le", "ge"), span=e.span)
     if _same(e.lhs, e.rhs) and (_dtype(e.lhs) or BOOL).is_int() else None),
    # (x + c1) + c2 → x + (c1 + c2) ; (x - c1) + c2 → x + (c2 - c1) ; (x * c1) * c2 → x * (c1 * c2)
    # (a negative total is written as x - |total|)
    (frozenset({"add", "sub", "mul"}), _reassociate),
    # (x + c1) * c2 → x * c2 + c1 * c2 ; (x - c1) * c2 → x * c2 - c1 * c2
    (frozenset({"mul"}), _distribute),
    # x and True → x ; x or False → x
    (frozenset({"and", "or"}),
     lambda e: _keeps(e.lhs, e) if _bool(e.rhs) is (e.op == "and") else None),
    # True and x → x ; False or x → x
    (frozenset({"and", "or"}),
     lambda e: _keeps(e.rhs, e) if _bool(e.lhs) is (e.op == "and") else None),
    # x and False → False ; x or True → True (scalar expressions have no side effects)
    (frozenset({"and", "or"}), _absorb),
]


def _unary_fold(e: UnaryExpr) -> Expr | None:
    v = _int(e.operand)
    if v is not None and e.dtype.is_int():
        fn = {"neg": operator.neg, "abs": abs, "bit_not": operator.invert, "cast": lambda x: x}.get(e.op)
        return _const(fn(v), e.dtype, e.span) if fn is not None else None
    b = _bool(e.operand)
    if b is not None and e.op == "not":
        return ConstBool(not b, span=e.span)
    return None


def _unary_involution(e: UnaryExpr) -> Expr | None:
    o = e.operand
    if isinstance(o, UnaryExpr) and o.op == e.op and e.op in ("neg", "not", "bit_not"):
        return _keeps(o.operand, e)
    return None


#  unary rules
UNARY_RULES: list[Callable[[UnaryExpr], Expr | None]] = [
    _unary_fold,          # -c → c' ; abs(c) ; ~c ; int cast of an int constant ; not True → False
    _unary_involution,    # -(-x) → x ; not not x → x ; ~~x → x
]


def _rewrite_node(e: Expr) -> Expr:
    """Apply the first matching rule to `e`, repeatedly, until none matches (one node)."""
    for _ in range(64):
        new: Expr | None = None
        if isinstance(e, BinaryExpr):
            for ops, rule in RULES:
                if e.op in ops:
                    new = rule(e)
                    if new is not None:
                        break
        elif isinstance(e, UnaryExpr):
            for urule in UNARY_RULES:
                new = urule(e)
                if new is not None:
                    break
        if new is None:
            return e
        e = new
    return e




def dim_query_value(e: Call, in_kernel: bool) -> Expr | None:
    """A dimension query (`pl.dim`, OpSpec.lowering "shape") of a static dimension → that constant
    (a static dimension of a partly dynamic tensor is static too); in a kernel, of a dynamic one →
    its dynamic-dimension variable, which the kernel binds from the argument's shape (what
    ConvertTensorToTileOps makes of it; done here too so that a tile-level kernel compiled with
    DebugTileOptimization, which skips that pass, may ask its tensors' sizes)."""
    if not isinstance(e.op, str) or get_op(e.op).lowering != "shape":
        return None
    d = queried_dim(e.args, dict(e.kwargs))
    if isinstance(d, ConstInt):
        return ConstInt(d.value, e.type.dtype, span=e.span)  # type: ignore[attr-defined]
    if in_kernel and isinstance(d, Var):
        return d
    return None


class _Simplifier(IRMutator):
    def __init__(self, in_kernel: bool = False) -> None:
        super().__init__()
        self.in_kernel = in_kernel

    def visit_Call(self, e: Call) -> Expr:
        new = super().visit_Call(e)
        return (dim_query_value(new, self.in_kernel) if isinstance(new, Call) else None) or new

    def visit_BinaryExpr(self, e: BinaryExpr) -> Expr:
        return _rewrite_node(super().visit_BinaryExpr(e))

    def visit_UnaryExpr(self, e: UnaryExpr) -> Expr:
        return _rewrite_node(super().visit_UnaryExpr(e))

    def visit_IfStmt(self, s: IfStmt) -> Stmt:
        """`if True: A else: B` → A (its yielded values replace the if's return vars)."""
        s2 = super().visit_IfStmt(s)
        if not isinstance(s2, IfStmt) or not isinstance(s2.cond, ConstBool):
            return s2
        taken = s2.then_body if s2.cond.value else s2.else_body
        stmts = list(taken.stmts) if taken is not None else []
        if s2.return_vars:
            last = stmts.pop() if stmts and isinstance(stmts[-1], YieldStmt) else None
            if last is None or len(last.values) != len(s2.return_vars):
                return s2
            for rv, v in zip(s2.return_vars, last.values):
                self.var_map[rv] = v
        return SeqStmts(tuple(stmts), span=s2.span)


def simplify_expr(e: Expr) -> Expr:
    """`e` with every sub-expression simplified to a fixed point (the same object if unchanged)."""
    while True:
        new = _Simplifier().visit_expr(e)
        if new is e:
            return e
        e = new


class Simplify(FunctionPass):
    """Fold constants and simplify scalar expressions everywhere (statements, types, shapes)."""

    name = "Simplify"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        func = split_tuple_bindings(func)
        while True:
            new = _Simplifier(func.func_type in KERNEL_TYPES).visit_function(func)
            if new is func:
                return func
            func = new
