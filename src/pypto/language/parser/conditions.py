"""Comparisons, `and` / `or` and conditional expressions in kernel bodies (SPEC §2.3).

Python decides what it can while parsing: an operand that is a compile-time Python object (a
module or closure constant, a literal, `None`, an enum member) is compared with Python's own
operator — every comparison kind (`==`, `!=`, `<`, `<=`, `>`, `>=`, `is`, `is not`, `in`,
`not in`) and chains (`0 < N <= 64`) — so `if value is None:` on a constant keeps only the taken
branch, as the Language Guide's compile-time `if` does. `and` / `or` short-circuit the same way:
`CFG is not None and CFG.depth > 2` never evaluates the right side when CFG is None.

What depends on a run-time value becomes IR: scalar comparisons are BOOL `BinaryExpr`s (a chain
is the `and` of its links), `x in (1, 2)` with a scalar `x` and a constant container is
`x == 1 or x == 2`, a single comparison of a tensor or tile is an elementwise mask
(`pl.cmp`). A DSL value is never `None`, so `x is None` is False and `x is not None` is True;
other identity tests on run-time values are refused (they have no meaning for values), as are
conditional expressions (`a if c else b`) whose condition is only known at run time.
"""

from __future__ import annotations

import ast
import operator
from typing import Any

from ...core.errors import ParserSyntaxError, ParserTypeError
from ...ir.expr import ConstBool, Expr
from ...ir.types import ScalarType, TensorType, TileType
from ..typing import DynVar
from .exprs import scalar_binary

__all__ = ["ConditionParser", "is_compile_time"]

_IR_NAMES = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge"}
_PYTHON = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_SYMBOL = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
           ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


def is_compile_time(v: Any) -> bool:
    """Whether a parsed value is a Python object known while parsing (not an IR value)."""
    if isinstance(v, (Expr, DynVar)):
        return False
    if isinstance(v, (list, tuple)):
        return all(is_compile_time(x) for x in v)
    return True


class ConditionParser:
    """Mixin of the function parser: `expr_Compare`, `expr_BoolOp`, `expr_IfExp`."""

    def expr_Compare(self, node: ast.Compare) -> Any:
        operands = [node.left, *node.comparators]
        lhs = self.parse_value(node.left)  # type: ignore[attr-defined]
        links: list[Expr] = []
        result: Any = True
        for i, op in enumerate(node.ops):
            rhs = self.parse_value(operands[i + 1])  # type: ignore[attr-defined]
            if len(node.ops) == 1 and isinstance(lhs, Expr) and isinstance(lhs.type, (TensorType, TileType)) \
                    and type(op) in _IR_NAMES:
                # elementwise comparison of a tensor/tile: a mask (Language Guide "Python Operators")
                return self.call_unified("cmp", [lhs, rhs], {"cmp_type": _IR_NAMES[type(op)]}, node)  # type: ignore[attr-defined]
            result = self._link(op, lhs, rhs, operands[i], operands[i + 1], node)
            if isinstance(result, Expr):
                links.append(result)
            elif not result:
                return result  # Python stops at the first false link; nothing run-time is left to decide
            lhs = rhs
        if not links:
            return result
        out = links[0]
        for e in links[1:]:
            out = scalar_binary("and", out, e, self.span(node))  # type: ignore[attr-defined]
        return out

    def _link(self, op: ast.cmpop, lhs: Any, rhs: Any, lnode: ast.expr, rnode: ast.expr,
              node: ast.Compare) -> Any:
        """One link `lhs op rhs` of a comparison: a Python value when both sides are compile-time
        (or the answer does not depend on the run-time side), else a BOOL IR expression."""
        span = self.span(node)  # type: ignore[attr-defined]
        sym = _SYMBOL[type(op)]
        if is_compile_time(lhs) and is_compile_time(rhs):
            try:
                return _PYTHON[type(op)](lhs, rhs)
            except Exception as e:
                raise ParserTypeError(f"compile-time comparison '{ast.unparse(lnode)} {sym} "
                                      f"{ast.unparse(rnode)}' failed: {type(e).__name__}: {e}", span) from None
        if isinstance(op, (ast.Is, ast.IsNot)):
            if lhs is None or rhs is None:  # a DSL value is never None
                return isinstance(op, ast.IsNot)
            raise ParserTypeError(
                f"'{sym}' compares compile-time Python objects (e.g. 'CONFIG is None' on a module "
                f"constant), but '{ast.unparse(lnode if isinstance(lhs, Expr) else rnode)}' is a run-time "
                f"value; compare values with '==' / '!='", span)
        if isinstance(op, (ast.In, ast.NotIn)):
            return self._membership(op, lhs, rhs, lnode, rnode, span)
        lhs_e = self.to_expr(lhs, lnode)  # type: ignore[attr-defined]
        rhs_e = self.to_expr(rhs, rnode)  # type: ignore[attr-defined]
        if any(isinstance(e.type, (TensorType, TileType)) for e in (lhs_e, rhs_e)):
            raise ParserTypeError(f"a chained comparison or '{sym}' with a tensor/tile operand is not "
                                  f"elementwise; write one comparison with the tensor/tile on the left "
                                  f"(a mask), or combine masks with pl.and_ / pl.or_", span)
        return scalar_binary(_IR_NAMES[type(op)], lhs_e, rhs_e, span)

    def _membership(self, op: ast.cmpop, lhs: Any, rhs: Any, lnode: ast.expr, rnode: ast.expr, span: Any) -> Any:
        """`x in C` for a run-time scalar `x` and a compile-time container `C`: `x == c0 or ...`
        (`not in`: `x != c0 and ...`)."""
        if not is_compile_time(rhs):
            raise ParserTypeError(f"'{_SYMBOL[type(op)]}' needs a compile-time container on its right "
                                  f"(a tuple, list, set or range of constants); "
                                  f"'{ast.unparse(rnode)}' is a run-time value", span)
        try:
            items = list(rhs)
        except TypeError:
            raise ParserTypeError(f"'{ast.unparse(rnode)}' is not a container ({type(rhs).__name__})",
                                  span) from None
        x = self.to_expr(lhs, lnode)  # type: ignore[attr-defined]
        if not isinstance(x.type, ScalarType):
            raise ParserTypeError(f"'{_SYMBOL[type(op)]}' tests a scalar against constants; "
                                  f"'{ast.unparse(lnode)}' is not a scalar", span)
        negate = isinstance(op, ast.NotIn)
        out: Any = None
        for c in items:
            link = scalar_binary("ne" if negate else "eq", x, self.to_expr(c, rnode), span)  # type: ignore[attr-defined]
            out = link if out is None else scalar_binary("and" if negate else "or", out, link, span)
        return negate if out is None else out  # empty container: `in` is False, `not in` True

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        """`a and b` / `a or b`, short-circuiting on compile-time operands as Python does."""
        is_and = isinstance(node.op, ast.And)
        runtime: list[Expr] = []
        value: Any = None
        for v_node in node.values:
            value = self.parse_value(v_node)  # type: ignore[attr-defined]
            if is_compile_time(value):
                if bool(value) != is_and:  # a false operand of 'and' / a true one of 'or' decides
                    return value if not runtime else (not is_and)
                continue  # a true operand of 'and' / a false one of 'or' leaves the others to decide
            runtime.append(self.to_expr(value, v_node))  # type: ignore[attr-defined]
        if not runtime:
            return value  # Python's value: the last operand
        out = runtime[0]
        for e in runtime[1:]:
            out = scalar_binary("and" if is_and else "or", out, e, self.span(node))  # type: ignore[attr-defined]
        return out

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        """`a if c else b` with a compile-time condition: only the taken side is parsed."""
        cond = self.parse_value(node.test)  # type: ignore[attr-defined]
        if not is_compile_time(cond):
            raise ParserSyntaxError("a conditional expression 'a if c else b' needs a condition known at "
                                    "compile time; for a run-time condition use an if statement",
                                    self.span(node))  # type: ignore[attr-defined]
        return self.parse_value(node.body if cond else node.orelse)  # type: ignore[attr-defined]


def const_condition(v: Any) -> bool | None:
    """The truth of a parsed `if` condition known at compile time, or None for a run-time one."""
    if isinstance(v, ConstBool):
        return None  # an explicit IR constant (printed IR): kept as an IfStmt
    return bool(v) if is_compile_time(v) else None
