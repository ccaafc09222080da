"""UnrollLoops: `pl.unroll(...)` loops are expanded at compile time (SPEC §5).

A For loop of kind Unroll with constant start/stop/step is replaced by one copy of its body per
iteration, with the loop variable replaced by the iteration's constant. Loop-carried values are
threaded through fresh variables: copy k starts with `acc_k = <value from copy k-1>` (the init
for k = 0), its final `pl.yield_(v)` becomes the next copy's start value, and the loop's return
vars are bound to the last values. The IR is still pre-SSA, so copies may re-assign the same
variables; only binding sites of inner loops/ifs get fresh Vars (in every copy but the last).
Non-constant bounds, or `break`/`continue` in an unrolled loop, are CompileErrors.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.enums import ForKind
from ..core.errors import CompileError
from ..ir.expr import BinaryExpr, ConstBool, ConstInt, Expr, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, BreakStmt, ForStmt, SeqStmts, Stmt, YieldStmt
from ..ir.visitor import IRMutator, IRVisitor
from .base import FunctionPass, PassContext

__all__ = ["UnrollLoops", "MAX_UNROLL"]

MAX_UNROLL = 4096  # iterations; beyond this an unrolled body is almost certainly a mistake


class _HasEscape(IRVisitor):
    def __init__(self) -> None:
        self.found: Stmt | None = None

    def visit_BreakStmt(self, s: Stmt) -> None:
        self.found = self.found or s

    visit_ContinueStmt = visit_BreakStmt

    def visit_ForStmt(self, s: ForStmt) -> None:
        pass  # escapes of inner loops are theirs

    visit_WhileStmt = visit_ForStmt


class _StructuralBindings(IRVisitor):
    """Loop vars, iter args and return vars bound inside a body: each binding site needs its own
    Var, so every copy but the last gets fresh ones (assignments may rebind: the IR is pre-SSA)."""

    def __init__(self) -> None:
        self.vars: list[Var] = []

    def visit_ForStmt(self, s: ForStmt) -> None:
        self.vars += [s.loop_var, *s.iter_args, *s.return_vars]
        super().visit_ForStmt(s)

    def visit_WhileStmt(self, s) -> None:  # type: ignore[no-untyped-def]
        self.vars += [*s.iter_args, *s.return_vars]
        super().visit_WhileStmt(s)

    def visit_IfStmt(self, s) -> None:  # type: ignore[no-untyped-def]
        self.vars += list(s.return_vars)
        super().visit_IfStmt(s)


class _Rename(IRMutator):
    """A body copy: `var_map` holds the substitutions (loop var → constant, iter args → start
    values); `fresh()` gives a binding site its own Var for this copy. Index arithmetic that the
    substitution made constant (`2 * 16`) is folded, as the parser folds constant expressions."""

    def visit_IfStmt(self, s):  # type: ignore[no-untyped-def]
        """An if whose condition the substitution made constant is replaced by its taken branch
        (results become assignments), as the parser treats a constant condition."""
        new = super().visit_IfStmt(s)
        cond = new.cond
        if not isinstance(cond, (ConstBool, ConstInt)):
            return new
        branch = new.then_body if cond.value else new.else_body
        stmts = list(branch.stmts) if branch is not None else []
        if stmts and isinstance(stmts[-1], YieldStmt) and new.return_vars:
            y = stmts.pop()
            stmts += [AssignStmt(rv, v, span=y.span) for rv, v in zip(new.return_vars, y.values)]
        return SeqStmts(tuple(stmts), span=new.span)

    def visit_BinaryExpr(self, e):  # type: ignore[no-untyped-def]
        from .simplify import simplify_expr

        new = super().visit_BinaryExpr(e)
        if new is not e and isinstance(new, BinaryExpr) and isinstance(new.lhs, ConstInt) \
                and isinstance(new.rhs, ConstInt):
            return simplify_expr(new)
        return new

    def fresh(self, v: Var) -> None:
        self.var_map[v] = replace(v, var_type=self.visit_type(v.type))


def _const(e: Expr, what: str, loop: ForStmt) -> int:
    from .simplify import simplify_expr

    e = simplify_expr(e)  # e.g. `pl.dim(x, 1) // 32` of a static dimension
    if not isinstance(e, ConstInt):
        raise CompileError(f"pl.unroll needs a compile-time constant {what}", loop.span)
    return e.value


class _Unroll(IRMutator):
    def visit_SeqStmts(self, s: SeqStmts) -> Stmt:
        out: list[Stmt] = []
        changed = False
        for st in s.stmts:
            y = self.visit_stmt(st)
            if isinstance(y, ForStmt) and y.kind is ForKind.Unroll:
                out.extend(self.expand(y))
                changed = True
            else:
                changed |= y is not st
                out.append(y)
        return replace(s, stmts=tuple(out)) if changed else s

    def expand(self, loop: ForStmt) -> list[Stmt]:
        esc = _HasEscape()
        esc.visit_stmt(loop.body)
        if esc.found is not None:
            word = "break" if isinstance(esc.found, BreakStmt) else "continue"
            raise CompileError(f"'{word}' is not supported in a pl.unroll loop", esc.found.span)
        start, stop, step = (_const(e, w, loop) for e, w in
                             ((loop.start, "start"), (loop.stop, "stop"), (loop.step, "step")))
        iters = list(range(start, stop, step))
        if len(iters) > MAX_UNROLL:
            raise CompileError(f"pl.unroll of {len(iters)} iterations exceeds the limit of {MAX_UNROLL}",
                               loop.span)
        out: list[Stmt] = []
        carried: list[Expr] = [ia.init for ia in loop.iter_args]  # type: ignore[misc]
        sb = _StructuralBindings()
        sb.visit_stmt(loop.body)
        for k, i in enumerate(iters):
            seed: dict[Var, Expr] = {loop.loop_var: ConstInt(i, loop.loop_var.type.dtype, span=loop.span)}  # type: ignore[attr-defined]
            for ia, val in zip(loop.iter_args, carried):
                cur = Var(f"{ia.name}_u{k}", ia.type, span=ia.span)
                out.append(AssignStmt(cur, val, span=loop.span))
                seed[ia] = cur
            ren = _Rename(seed)
            if k < len(iters) - 1:  # the last copy keeps the original Vars for uses after the loop
                for v in sb.vars:
                    ren.fresh(v)
            body = ren.visit_seq(loop.body)
            stmts = list(body.stmts)
            if loop.iter_args:
                last = stmts.pop()
                if not isinstance(last, YieldStmt):
                    raise CompileError("a loop with init_values must end with pl.yield_", loop.span)
                carried = list(last.values)
            out.extend(stmts)
        for rv, val in zip(loop.return_vars, carried):
            out.append(AssignStmt(rv, val, span=loop.span))
        return out


class UnrollLoops(FunctionPass):
    name = "UnrollLoops"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        return _Unroll().visit_function(func)


