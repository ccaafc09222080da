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

from ..core.enums import ForKind, Level, ScopeKind, ScopeMode
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
    """`for loop_var in range(start, stop, step)` carrying `iter_args` into `return_vars`.

    `stage` (kind Pipeline only, `pl.pipeline(..., stage=N)`): how many copies of the body's
    on-chip buffers rotate across iterations (PipelineLoops); 1 for every other kind."""

    loop_var: Var
    start: Expr
    stop: Expr
    step: Expr
    iter_args: tuple[IterArg, ...]
    body: SeqStmts
    return_vars: tuple[Var, ...]
    kind: ForKind = ForKind.Sequential
    stage: int = 1


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
    """A scoped region (SPEC §1, §13):

    - `pl.at(level=..., optimizations=[...], deps=[...], no_dep_args=[...], name_hint=...,
      allow_early_resolve=...) [as tid]` (kind InCore): one task;
    - `pl.scope(mode=...)` / `pl.manual_scope()` (kind Runtime): a runtime scope whose `mode`
      (AUTO / MANUAL) says whether the runtime derives task order from overlapping regions;
    - `pl.spmd(core_num=N, sync_start=...)` / `for b in pl.spmd(N)` (kind Spmd): the tasks the
      body submits run once per block `b` in 0..N-1 (`block_var` binds it in the loop form).

    `optimizations` is a tuple of (name, ((key, value), ...)) pairs, e.g.
    `("split", (("mode", SplitMode.UP_DOWN),))` or `("cross_core_slot", (("slot_num", 4),))`.
    `deps` (InCore scopes only): tensor- or TaskId-typed Exprs, used before the scope: the
    region's task(s) wait for the tensor's earlier writers / the named tasks; outlining moves them
    onto the call that replaces the scope (`Call.deps`). `no_dep_args`: values the region reads or
    writes that take no part in dependency tracking. `task_id` (a binding site, InCore only): the
    Var `as tid` binds to the region's TaskId. `attrs`: plain values — `name_hint` and
    `allow_early_resolve` of a region, `core_num` and `sync_start` of an SPMD scope.
    """

    kind: ScopeKind
    body: SeqStmts
    level: Level | None = None
    optimizations: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    deps: tuple[Expr, ...] = ()
    mode: ScopeMode = ScopeMode.AUTO
    no_dep_args: tuple[Expr, ...] = ()
    attrs: tuple[tuple[str, Any], ...] = ()
    task_id: Var | None = None
    block_var: Var | None = None

    def attr(self, name: str, default: Any = None) -> Any:
        for k, v in self.attrs:
            if k == name:
                return v
        return default
