"""Tuple splitting for Simplify: a tuple bound to a variable and only read element-wise is taken apart.

Multiple returns of an inline helper (`o1, o2 = helper(...)`, spliced by the parser or by
InlineFunctions) leave `t = MakeTuple(a, b)` followed by `o1 = t[0]`, `o2 = t[1]` (SPEC §5
"Simplify", §9 inline functions). Kernels have no tuple values, so each such binding becomes one
binding per element that is not already a variable or a constant (`t_1 = <expr>`, in order, so
every element is still evaluated once and in place), and every `t[i]` reads that element directly.
A tuple variable that is also read as a whole (passed to an op, returned) is left alone, as is
`MakeTuple(...)[i]` of non-atomic elements. Runs on SSA form (each variable bound once).
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.expr import ConstBool, ConstFloat, ConstInt, Expr, MakeTuple, TupleGetItem, Var
from ..ir.function import Function
from ..ir.stmt import AssignStmt, SeqStmts, Stmt
from ..ir.visitor import IRMutator, IRVisitor

__all__ = ["split_tuple_bindings"]

_ATOMS = (Var, ConstInt, ConstFloat, ConstBool)  # IterArg is a Var


class _TupleUses(IRVisitor):
    """Variables bound to a MakeTuple (`made`) and variables read other than as `v[i]` (`whole`)."""

    def __init__(self) -> None:
        self.made: set[Var] = set()
        self.whole: set[Var] = set()

    def visit_Var(self, e: Var) -> None:
        self.whole.add(e)

    visit_IterArg = visit_Var

    def visit_TupleGetItem(self, e: TupleGetItem) -> None:
        if not isinstance(e.tuple_value, Var):
            self.visit_expr(e.tuple_value)

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        if isinstance(s.value, MakeTuple) and s.value.elements:
            self.made.add(s.var)
        self.visit_expr(s.value)


class _Splitter(IRMutator):
    def __init__(self, splittable: set[Var]) -> None:
        super().__init__()
        self.splittable = splittable
        self.elements: dict[Var, tuple[Expr, ...]] = {}

    def visit_SeqStmts(self, s: SeqStmts) -> Stmt:
        out: list[Stmt] = []
        changed = False
        for st in s.stmts:
            if isinstance(st, AssignStmt) and st.var in self.splittable:
                out.extend(self.split(st))
                changed = True
                continue
            st2 = self.visit_stmt(st)
            changed |= st2 is not st
            out.append(st2)
        return replace(s, stmts=tuple(out)) if changed else s

    def split(self, s: AssignStmt) -> list[Stmt]:
        value = self.visit_expr(s.value)
        assert isinstance(value, MakeTuple)
        stmts: list[Stmt] = []
        atoms: list[Expr] = []
        for i, el in enumerate(value.elements):
            if not isinstance(el, _ATOMS):
                v = Var(f"{s.var.name}_{i}", el.type, span=s.span)
                stmts.append(AssignStmt(v, el, span=s.span))
                el = v
            atoms.append(el)
        self.elements[s.var] = tuple(atoms)
        return stmts

    def visit_TupleGetItem(self, e: TupleGetItem) -> Expr:
        t = e.tuple_value
        if isinstance(t, Var) and t in self.elements:
            return self.elements[t][e.index]
        e2 = super().visit_TupleGetItem(e)
        t = e2.tuple_value  # type: ignore[attr-defined]
        if isinstance(t, MakeTuple) and all(isinstance(x, _ATOMS) for x in t.elements):
            return t.elements[e2.index]  # type: ignore[attr-defined]
        return e2


def split_tuple_bindings(func: Function) -> Function:
    """`func` with its element-wise-read tuple bindings taken apart (the same object if none)."""
    uses = _TupleUses()
    uses.visit_stmt(func.body)
    splittable = uses.made - uses.whole
    if not splittable:
        return func
    return _Splitter(splittable).visit_function(func)
