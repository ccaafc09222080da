"""Small analyses shared by passes: which Vars a subtree defines and uses."""

from __future__ import annotations

from ..ir.expr import Var
from ..ir.stmt import AssignStmt, ForStmt, IfStmt, Stmt, WhileStmt
from ..ir.visitor import IRVisitor

__all__ = ["defined_vars", "used_vars", "assigned_vars"]


class _Defs(IRVisitor):
    def __init__(self) -> None:
        self.defs: dict[Var, None] = {}

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.defs[s.var] = None
        self.visit_expr(s.value)

    def visit_ForStmt(self, s: ForStmt) -> None:
        self.defs[s.loop_var] = None
        for v in (*s.iter_args, *s.return_vars):
            self.defs[v] = None
        self.visit_stmt(s.body)

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        for v in (*s.iter_args, *s.return_vars):
            self.defs[v] = None
        self.visit_stmt(s.body)

    def visit_IfStmt(self, s: IfStmt) -> None:
        for v in s.return_vars:
            self.defs[v] = None
        self.visit_stmt(s.then_body)
        if s.else_body is not None:
            self.visit_stmt(s.else_body)


def defined_vars(s: Stmt) -> dict[Var, None]:
    """Vars bound anywhere inside `s` (assignments, loop vars, iter args, return vars), in order."""
    v = _Defs()
    v.visit_stmt(s)
    return v.defs


class _Assigned(IRVisitor):
    def __init__(self) -> None:
        self.vars: dict[Var, None] = {}

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.vars[s.var] = None


def assigned_vars(s: Stmt) -> dict[Var, None]:
    """Vars that are targets of AssignStmts inside `s` (recursively), in order."""
    v = _Assigned()
    v.visit_stmt(s)
    return v.vars


class _Uses(IRVisitor):
    def __init__(self) -> None:
        self.uses: dict[Var, None] = {}
        self._binding = False

    def visit_Var(self, e: Var) -> None:
        if not self._binding:
            self.uses[e] = None
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


def used_vars(s: Stmt) -> dict[Var, None]:
    """Vars read anywhere inside `s` (including dynamic dims in types), in first-use order."""
    v = _Uses()
    v.visit_stmt(s)
    return v.uses
