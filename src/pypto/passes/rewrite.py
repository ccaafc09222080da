"""Rewriting helpers shared by passes that move code between functions or copy it."""

from __future__ import annotations

from ..core.dtype import INDEX
from ..ir.expr import Var
from ..ir.function import Function
from ..ir.replace import fast_replace
from ..ir.stmt import ForStmt, IfStmt, ScopeStmt, SeqStmts, Stmt, WhileStmt
from ..ir.types import MemRef, ScalarType, TileType
from ..ir.visitor import IRMutator, IRVisitor, stmt_children
from .analysis import defined_vars

__all__ = ["FreshBindings", "is_dynamic_dim", "uses_outside", "rebuild_children", "MemRefRewriter"]


class FreshBindings(IRMutator):
    """Copy of a body with a new Var for every binding: no Var is shared between two functions."""

    def visit_binding(self, v: Var) -> Var:
        if v in self.var_map:
            return self.var_map[v]  # type: ignore[return-value]
        nv = fast_replace(v, var_type=self.visit_type(v.type))
        self.var_map[v] = nv
        return nv


def is_dynamic_dim(v: Var, func: Function) -> bool:
    """An INDEX Var that `func` neither takes nor defines: a `pl.dynamic` dimension."""
    return isinstance(v.type, ScalarType) and v.type.dtype is INDEX and v not in func.params and \
        v not in defined_vars(func.body)


def uses_outside(body: SeqStmts, scope: ScopeStmt) -> set[Var]:
    """Vars used anywhere in the function except inside `scope`."""
    class _V(IRVisitor):
        def __init__(self) -> None:
            self.uses: set[Var] = set()

        def visit_Var(self, e: Var) -> None:
            self.uses.add(e)

        visit_IterArg = visit_Var

        def visit_ScopeStmt(self, s: ScopeStmt) -> None:
            if s is not scope:
                super().visit_ScopeStmt(s)

    v = _V()
    v.visit_stmt(body)
    return v.uses


def rebuild_children(s: Stmt, fn) -> Stmt:  # type: ignore[no-untyped-def]
    """`s` with `fn` applied to each of its child bodies (If branches, loop and scope bodies)."""
    if not stmt_children(s):
        return s
    if isinstance(s, IfStmt):
        return fast_replace(s, then_body=fn(s.then_body),
                       else_body=fn(s.else_body) if s.else_body is not None else None)
    if isinstance(s, (ForStmt, WhileStmt, ScopeStmt)):
        return fast_replace(s, body=fn(s.body))
    return s


class MemRefRewriter(IRMutator):
    """Re-types every tile binding whose MemRef `rewrite_memref` changes (memory planning passes
    give buffers new ids, sizes or addresses this way); uses follow through `var_map`."""

    def rewrite_memref(self, m: MemRef) -> MemRef:
        return m

    def visit_binding(self, v: Var) -> Var:
        if v in self.var_map:
            return self.var_map[v]  # type: ignore[return-value]
        t = v.type
        if isinstance(t, TileType) and t.memref is not None:
            m = t.memref
            new = self.rewrite_memref(m)
            if (new.memory_space, new.id, new.size, new.addr) != (m.memory_space, m.id, m.size, m.addr):
                nv = fast_replace(v, var_type=fast_replace(t, memref=new))
                self.var_map[v] = nv
                return nv
        return super().visit_binding(v)
