"""IR statements (SPEC §4). Frozen and slotted; bodies are `SeqStmts`.

Structured control flow carries values explicitly in SSA form: a For/While binds `iter_args`
(IterArg vars with their `init`), its body ends with a `YieldStmt` giving the next values, and
`return_vars` receive the final values. An If with `return_vars` ends both branches with a Yield.
Before ConvertToSSA the parser may produce non-SSA IR: Vars assigned more than once and loops that
rebind outer variables without iter_args.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.enums import ForKind, Level, ScopeKind
from ..core.span import Span
from .expr import Expr, IterArg, Var

__all__ = [
    "Stmt", "AssignStmt", "EvalStmt", "ReturnStmt", "SeqStmts", "IfStmt", "ForStmt", "WhileStmt",
    "YieldStmt", "BreakStmt", "ContinueStmt", "ScopeStmt",
]

_NO_SPAN = Span.unknown()


@dataclass(frozen=True, slots=True, eq=False)
class Stmt:
    span: Span = field(default=_NO_SPAN, kw_only=True, compare=False, repr=False)


@dataclass(frozen=True, slots=True, eq=False)
class AssignStmt(Stmt):
    var: Var
    value: Expr


@dataclass(frozen=True, slots=True, eq=False)
class EvalStmt(Stmt):
    """An expression evaluated for its effect (e.g. a system op, `pl.static_print`)."""

    expr: Expr


@dataclass(frozen=True, slots=True, eq=False)
class ReturnStmt(Stmt):
    values: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class SeqStmts(Stmt):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True, slots=True, eq=False)
class YieldStmt(Stmt):
    """Next values of the enclosing loop's iter_args, or the values of the enclosing If."""

    values: tuple[Expr, ...]


@dataclass(frozen=True, slots=True, eq=False)
class IfStmt(Stmt):
    cond: Expr
    then_body: SeqStmts
    else_body: SeqStmts | None
    return_vars: tuple[Var, ...] = ()


@dataclass(frozen=True, slots=True, eq=False)
class ForStmt(Stmt):
    """`for loop_var in range(start, stop, step)` carrying `iter_args` into `return_vars`."""

    loop_var: Var
    start: Expr
    stop: Expr
    step: Expr
    iter_args: tuple[IterArg, ...]
    body: SeqStmts
    return_vars: tuple[Var, ...]
    kind: ForKind = ForKind.Sequential


@dataclass(frozen=True, slots=True, eq=False)
class WhileStmt(Stmt):
    """Loop while `cond` (an expression over the iter_args) holds."""

    cond: Expr
    iter_args: tuple[IterArg, ...]
    body: SeqStmts
    return_vars: tuple[Var, ...]


@dataclass(frozen=True, slots=True, eq=False)
class BreakStmt(Stmt):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class ContinueStmt(Stmt):
    pass


@dataclass(frozen=True, slots=True, eq=False)
class ScopeStmt(Stmt):
    """A scoped region: `pl.at(level=..., optimizations=[...], deps=[...])` (InCore) or `pl.scope()`
    (Runtime).

    `optimizations` is a tuple of (name, ((key, value), ...)) pairs, e.g.
    `("split", (("mode", SplitMode.UP_DOWN),))` or `("cross_core_slot", (("slot_num", 4),))`.
    `deps` (InCore scopes only): tensor-typed Exprs, used before the scope, whose earlier writers
    the region's task(s) wait for; outlining moves them onto the call that replaces the scope
    (`Call.deps`).
    """

    kind: ScopeKind
    body: SeqStmts
    level: Level | None = None
    optimizations: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    deps: tuple[Expr, ...] = ()
