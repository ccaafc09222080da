"""Uses of Vars: `UseVisitor` (every read of a Var, never a binding site) and `used_vars`.

Shared by passes (`pypto.passes.analysis` re-exports them) and by the parser's core-side analysis
(`pypto.ir.kernel_sides`), so it lives with the IR.
"""

from __future__ import annotations

from .expr import Var
from .stmt import AssignStmt, ForStmt, IfStmt, ScopeStmt, Stmt, WhileStmt
from .visitor import IRVisitor

__all__ = ["UseVisitor", "used_vars"]


class UseVisitor(IRVisitor):
    """Visits every *use* of a Var (never a binding site); subclasses override `on_use`."""

    def on_use(self, v: Var) -> None:
        raise NotImplementedError

    def visit_Var(self, e: Var) -> None:
        self.on_use(e)
        self.visit_type(e.type)

    visit_IterArg = visit_Var

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.visit_expr(s.value)

    def visit_ForStmt(self, s: ForStmt) -> None:
        for e in (s.start, s.stop, s.step):
            self.visit_expr(e)
        for ia in s.iter_args:
            if ia.init is not None:
                self.visit_expr(ia.init)
        self.visit_stmt(s.body)

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        for ia in s.iter_args:
            if ia.init is not None:
                self.visit_expr(ia.init)
        self.visit_expr(s.cond)
        self.visit_stmt(s.body)

    def visit_IfStmt(self, s: IfStmt) -> None:
        self.visit_expr(s.cond)
        self.visit_stmt(s.then_body)
        if s.else_body is not None:
            self.visit_stmt(s.else_body)

    def visit_ScopeStmt(self, s: ScopeStmt) -> None:
        for d in (*s.deps, *s.no_dep_args):
            self.visit_expr(d)
        self.visit_stmt(s.body)


class _Uses(UseVisitor):
    def __init__(self) -> None:
        self.uses: dict[Var, None] = {}

    def on_use(self, v: Var) -> None:
        self.uses[v] = None


def used_vars(s: Stmt) -> dict[Var, None]:
    """Vars read anywhere inside `s` (including dynamic dims in types), in first-use order."""
    v = _Uses()
    v.visit_stmt(s)
    return v.uses
