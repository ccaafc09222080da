"""What a loop or an if did to the names that existed before it, and the errors about it (SPEC §2.4).

Non-SSA source may rebind an outer name inside a loop: when the new value has the old type the
parser keeps one variable and ConvertToSSA carries it around the loop. When the type changes
(`t = pl.cast(t, pl.FP16)` on an FP32 `t`) nothing can be carried — a loop-carried value keeps one
type — so the name is local to the loop. Two situations then deserve a message naming both types
and lines instead of a generic one:

- the body reads the value from before the loop and then rebinds the name with a new type: the
  next iteration would read the new type, so this is a loop-carried value changing type
  (ParserTypeError at the loop, raised by `note_loop_rebinds`);
- the name is used after the loop (UndefinedVariableError from `stale_name_error`).

`FunctionParser.loop_before` maps such a name to (value before the loop, value the loop left).
Likewise after an `if` a name has one type: `branch_type_error` says which branch changed it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ...core.errors import ParserTypeError, UndefinedVariableError
from ...core.span import Span
from ...ir.expr import Expr, IterArg, Var
from ...ir.stmt import SeqStmts, Stmt
from ...ir.structural import structural_equal
from ...ir.visitor import IRVisitor

__all__ = ["note_loop_rebinds", "stale_name_error", "branch_type_error"]


class _FirstUse(IRVisitor):
    """Span of the first statement (in source order) that reads `var`."""

    def __init__(self, var: Expr) -> None:
        self.var = var
        self.span: Span | None = None
        self._stmt: Span | None = None

    def visit_stmt(self, s: Stmt) -> None:
        if self.span is not None:
            return
        outer = self._stmt
        if not isinstance(s, SeqStmts):
            self._stmt = s.span
        try:
            super().visit_stmt(s)
        finally:
            self._stmt = outer

    def visit_Var(self, e: Var) -> None:
        if e is self.var and self.span is None:
            self.span = self._stmt

    visit_IterArg = visit_Var  # type: ignore[assignment]


def _types(a: Any, b: Any) -> tuple[str, str, str | None]:
    """How to name types `a` and `b` in a message: "an FP32 tile" / "an FP16 tile" when only the
    dtype differs (plus the new dtype's name), else the printed types."""
    from ...ir.types import ScalarType, TensorType, TileType
    from .stmts import type_text

    kinds = {TileType: "tile", TensorType: "tensor", ScalarType: "scalar"}
    kind = kinds.get(type(a))
    if kind is not None and type(a) is type(b) and structural_equal(a, replace(b, dtype=a.dtype)):
        def named(t: Any) -> str:
            article = "an" if t.dtype.name[0] in "AEFHILMNORSX" else "a"
            return f"{article} {t.dtype.name} {kind}"
        return named(a), named(b), b.dtype.name
    return type_text(a), type_text(b), None


def _line(e: Expr) -> str:
    return f"line {e.span.begin_line}" if e.span.is_known() else "an earlier line"


def note_loop_rebinds(parser: Any, outer: dict[str, Expr], loop_names: dict[str, Any], body: SeqStmts) -> None:
    """After a loop body is parsed (and its rebound names moved to `parser.loop_local`): remember
    the value each outer name had before the loop, and reject a body that reads an outer name and
    then gives it a value of another type (the next iteration would read that type).

    `outer` is the environment before the loop, `loop_names` the loop's own names (loop variable,
    iter args). Raises ParserTypeError at the rebinding statement.
    """
    for name, before in outer.items():
        if name in loop_names or name in parser.env:
            continue  # the loop's own name, or the same variable (carried by ConvertToSSA)
        after = parser.loop_local.get(name)
        if after is None:
            continue
        parser.loop_before[name] = (before, after)
        if structural_equal(before.type, after.type):
            continue
        finder = _FirstUse(before)
        finder.visit_stmt(body)
        if finder.span is None:
            continue
        was, now, dtype = _types(before.type, after.type)
        read = finder.span.begin_line
        how = (f"line {read} reads it and assigns it {now}" if after.span.begin_line == read else
               f"line {read} reads it and {_line(after)} assigns it {now}")
        example = f"'{name}_{dtype.lower()} = pl.cast({name}, pl.{dtype})'" if dtype else "a new name"
        raise ParserTypeError(
            f"'{name}' changes type inside the loop: it is {was} before the loop ({_line(before)}), "
            f"and {how}, so the next iteration would read {now}. A value carried from one iteration to "
            f"the next must keep its type: give the converted value a new name (e.g. {example}), or "
            f"convert it back before the iteration ends", after.span)


def stale_name_error(parser: Any, name: str, stale: Expr, span: Span) -> UndefinedVariableError:
    """The error for reading `name` after the loop or branch that last bound it (to `stale`)."""
    record = parser.loop_before.get(name)
    before = record[0] if record is not None and record[1] is stale else None
    if before is not None and not structural_equal(before.type, stale.type):
        was, now, dtype = _types(before.type, stale.type)
        example = f" (e.g. '{name}_{dtype.lower()} = pl.cast({name}, pl.{dtype})')" if dtype else ""
        return UndefinedVariableError(
            f"'{name}' changes type in the loop: it is {was} before the loop ({_line(before)}) but the "
            f"loop assigns it {now} at {_line(stale)}. A value carried through a loop must keep its "
            f"type (after the loop it is the old value when the loop runs zero times): give the "
            f"converted value a new name{example}, or convert it back before the loop body ends", span)
    if isinstance(before, IterArg):
        return UndefinedVariableError(
            f"'{name}' is the loop-carried value of the enclosing loop ({_line(before)}); the inner "
            f"loop assigns it at {_line(stale)}, and a loop-carried value cannot be rebound inside an "
            f"inner loop. Copy it to a new name before the inner loop (e.g. '{name}_in = {name}'), "
            f"update that name in the inner loop and yield it", span)
    return UndefinedVariableError(
        f"variable '{name}' is assigned at {_line(stale)} inside a loop or a branch and has no single "
        f"value here; assign it before the loop or in every branch", span)


def branch_type_error(name: str, then_value: Expr, else_value: Expr, before: Expr | None, has_else: bool,
                      span: Span) -> ParserTypeError:
    """The error for an `if` after which `name` would have two types: the then-branch leaves
    `then_value`, the else-branch (or the missing else) `else_value`; `before` is the value before
    the if (None when the name is new)."""
    fix = ("after the if a name has one type: give the converted value a new name, or convert it in "
           "both branches")
    if before is not None and (then_value is before or else_value is before):
        branch, changed = ("then", then_value) if else_value is before else ("else", else_value)
        was, now, _ = _types(before.type, changed.type)
        other = ("" if has_else or branch == "else"
                 else " (without an else-branch it keeps that type when the condition is false)")
        return ParserTypeError(f"'{name}' is {was} before the if ({_line(before)}) but the {branch}-branch "
                               f"assigns it {now} at {_line(changed)}{other}; {fix}", span)
    a, b, _ = _types(then_value.type, else_value.type)
    return ParserTypeError(f"'{name}' gets {a} in the then-branch ({_line(then_value)}) but {b} in the "
                           f"else-branch ({_line(else_value)}); {fix}", span)
