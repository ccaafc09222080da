"""Closure compiler shared by the kernel executor and the orchestrator.

`FunctionCompiler` turns one `ir.Function` body into nested Python closures, once; running it is
then only closure calls over an *environment*: a list with one slot per Var (slot 0 holds the
return values). Vars are resolved to slots at compile time, so execution does no name lookups.

Statement closures return `None` to fall through, or one of the signals `BREAK`, `CONTINUE`,
`RETURN`, which propagate to the enclosing loop / function.

Values carried by control flow (For/While `iter_args` → `return_vars`, If `return_vars`) are
assigned *in parallel* (all sources read before any target is written). A subclass decides which
Vars are *buffers* — on-chip tiles with a fixed location, see `buffer_of` — and for those,
assignment copies bytes into the target's buffer instead of rebinding the slot; the copy is skipped
when source and target occupy the same bytes (memory planning made them share a buffer).

Expressions are compiled by the `ExprCompiler` base (`exprs.py`). Subclasses implement
`compile_call` (what a Call means in their plane) and may override `compile_assign`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...core.errors import RuntimeSimError
from ...core.span import Span
from ...ir.expr import Expr, Var
from ...ir.function import Function
from ...ir.stmt import (
    AssignStmt,
    BreakStmt,
    ContinueStmt,
    EvalStmt,
    ForStmt,
    IfStmt,
    ReturnStmt,
    ScopeStmt,
    SeqStmts,
    Stmt,
    WhileStmt,
    YieldStmt,
)
from .exprs import Env, ExprCompiler, ExprFn, Extent

__all__ = ["FunctionCompiler", "Extent", "BREAK", "CONTINUE", "RETURN", "Env", "ExprFn", "StmtFn"]

StmtFn = Callable[[Env], Any]


class _Signal:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name.upper()


BREAK, CONTINUE, RETURN = _Signal("break"), _Signal("continue"), _Signal("return")


def _fall_through(env: Env) -> None:
    return None


class FunctionCompiler(ExprCompiler):
    """Compiles `func` into `self.body` (a statement closure) and `self.num_slots`.

    Raises:
        RuntimeSimError: at the offending statement for IR the simulator cannot run (an undefined
            Var, a Yield without a target, a mismatched carried tile, ...).
    """

    def __init__(self, func: Function) -> None:
        super().__init__(func)
        self._yield_targets: list[tuple[Var, ...]] = []
        self.body = self.compile_block(func.body)

    # ---- statements --------------------------------------------------------------------------
    def compile_block(self, block: SeqStmts | Stmt) -> StmtFn:
        stmts = block.stmts if isinstance(block, SeqStmts) else (block,)
        fns = [self.compile_stmt(s) for s in stmts]
        if not fns:
            return _fall_through
        if len(fns) == 1:
            return fns[0]

        def run(env: Env) -> Any:
            for f in fns:
                sig = f(env)
                if sig is not None:
                    return sig
            return None
        return run

    def compile_stmt(self, s: Stmt) -> StmtFn:
        handler = _STMT_HANDLERS.get(type(s))
        if handler is None:
            raise RuntimeSimError(f"the simulator cannot run a {type(s).__name__}", s.span)
        return handler(self, s)

    def compile_assign(self, s: AssignStmt) -> StmtFn:
        value, slot = self.compile_expr(s.value), self.define(s.var)
        if self.buffer_of(s.var) is not None:   # a tile: copy bytes into its buffer
            return self.compile_parallel_assign((s.var,), (s.value,), s.span)

        def run(env: Env) -> None:
            env[slot] = value(env)
        return run

    def _eval(self, s: EvalStmt) -> StmtFn:
        f = self.compile_expr(s.expr)

        def run(env: Env) -> None:
            f(env)
        return run

    def _return(self, s: ReturnStmt) -> StmtFn:
        fns = [self.compile_expr(v) for v in s.values]

        def run(env: Env) -> Any:
            env[0] = tuple([f(env) for f in fns])
            return RETURN
        return run

    def _seq(self, s: SeqStmts) -> StmtFn:
        return self.compile_block(s)

    def compile_scope(self, s: ScopeStmt) -> StmtFn:
        """A scope statement runs its body (subclasses may track runtime scopes)."""
        return self.compile_block(s.body)

    def _break(self, s: BreakStmt) -> StmtFn:
        return lambda env: BREAK

    def _continue(self, s: ContinueStmt) -> StmtFn:
        return lambda env: CONTINUE

    def _yield(self, s: YieldStmt) -> StmtFn:
        if not self._yield_targets:
            raise RuntimeSimError("yield outside a loop or an if with return values", s.span)
        targets = self._yield_targets[-1]
        if len(targets) != len(s.values):
            raise RuntimeSimError(f"yield of {len(s.values)} values into {len(targets)} carried "
                                  f"variables ({', '.join(v.name for v in targets) or 'none'})", s.span)
        assign = self.compile_parallel_assign(targets, s.values, s.span)

        def run(env: Env) -> None:
            assign(env)
        return run

    def _for(self, s: ForStmt) -> StmtFn:
        for e, what in ((s.start, "start"), (s.stop, "stop"), (s.step, "step")):
            dt = self._scalar_dtype(e)
            if dt is None or not dt.is_int():
                raise RuntimeSimError(f"for-loop {what} must be an integer scalar", s.span)
        start, stop, step = (self.compile_expr(x) for x in (s.start, s.stop, s.step))
        entry = self._loop_entry(s.iter_args, s.span)
        lv = self.define(s.loop_var)
        body = self._carried_body(s.body, s.iter_args)
        exit_ = self.compile_parallel_assign(s.return_vars, s.iter_args, s.span)
        span = s.span

        def run(env: Env) -> Any:
            b, e, st = start(env), stop(env), step(env)
            if st == 0:
                raise RuntimeSimError("for-loop step is zero", span)
            entry(env)
            for i in range(b, e, st):
                env[lv] = i
                sig = body(env)
                if sig is not None:
                    if sig is BREAK:
                        break
                    if sig is CONTINUE:
                        continue
                    return sig
            exit_(env)
            return None
        return run

    def _while(self, s: WhileStmt) -> StmtFn:
        entry = self._loop_entry(s.iter_args, s.span)
        cond = self.compile_expr(s.cond)
        body = self._carried_body(s.body, s.iter_args)
        exit_ = self.compile_parallel_assign(s.return_vars, s.iter_args, s.span)

        def run(env: Env) -> Any:
            entry(env)
            while cond(env):
                sig = body(env)
                if sig is not None:
                    if sig is BREAK:
                        break
                    if sig is CONTINUE:
                        continue
                    return sig
            exit_(env)
            return None
        return run

    def _if(self, s: IfStmt) -> StmtFn:
        cond = self.compile_expr(s.cond)
        if s.return_vars and s.else_body is None:
            raise RuntimeSimError("an if with return values needs an else branch", s.span)
        for v in s.return_vars:
            self.define(v)
        if s.return_vars:
            self._yield_targets.append(tuple(s.return_vars))
        try:
            then = self.compile_block(s.then_body)
            other = self.compile_block(s.else_body) if s.else_body is not None else _fall_through
        finally:
            if s.return_vars:
                self._yield_targets.pop()

        def run(env: Env) -> Any:
            return then(env) if cond(env) else other(env)
        return run

    def _loop_entry(self, iter_args: Sequence[Var], span: Span) -> Callable[[Env], None]:
        inits = []
        for ia in iter_args:
            init = getattr(ia, "init", None)
            if init is None:
                raise RuntimeSimError(f"loop-carried variable '{ia.name}' has no initial value", span)
            inits.append(init)
        return self.compile_parallel_assign(iter_args, inits, span)

    def _carried_body(self, body: SeqStmts, iter_args: Sequence[Var]) -> StmtFn:
        self._yield_targets.append(tuple(iter_args))
        try:
            return self.compile_block(body)
        finally:
            self._yield_targets.pop()

    # ---- parallel assignment -----------------------------------------------------------------
    def check_copy(self, dst: Var, src: Expr, span: Span) -> Extent:
        """Extent of `src` for a byte copy into buffer `dst`; subclasses check shapes/dtypes."""
        ext = self.buffer_of(src) if isinstance(src, Var) else None
        if ext is None:
            raise RuntimeSimError(f"'{dst.name}' is an on-chip buffer; the value assigned to it must "
                                  f"be a tile variable, got {src!r}", span)
        return ext

    def compile_parallel_assign(self, dsts: Sequence[Var], srcs: Sequence[Expr],
                                span: Span) -> Callable[[Env], None]:
        """Assign `srcs` to `dsts` simultaneously: rebinding for values, byte copies for buffers.

        A buffer copy is skipped when source and target start at the same address of the same
        memory (an *alias*); sources are snapshotted first when a copy target overlaps another
        source. The result passes through `instrument_assign`.
        """
        src_fns = [self.compile_expr(x) for x in srcs]
        rebinds: list[tuple[int, int]] = []
        copies: list[tuple[int, int]] = []
        src_ext: list[Extent | None] = []
        dst_ext: list[Extent | None] = []
        copied: list[tuple[Var, Expr]] = []
        aliased: list[tuple[Var, Expr]] = []
        for k, (d, x) in enumerate(zip(dsts, srcs)):
            slot, dext = self.define(d), self.buffer_of(d)
            sext = self.check_copy(d, x, span) if dext is not None else None
            src_ext.append(sext)
            dst_ext.append(dext)
            if dext is None:
                rebinds.append((slot, k))
            elif not dext.same_place(sext):
                copies.append((slot, k))
                copied.append((d, x))
            else:
                aliased.append((d, x))
        snapshot = any(dst_ext[k] is not None and src_ext[j] is not None
                       and dst_ext[k].overlaps(src_ext[j]) for _, k in copies for j in range(len(srcs)))
        run: Callable[[Env], None]
        if not copies and not rebinds:
            run = _fall_through
        elif not copies and len(rebinds) == 1:
            slot, k0 = rebinds[0]
            f = src_fns[k0]

            def run(env: Env) -> None:
                env[slot] = f(env)
        else:
            def run(env: Env) -> None:
                vals = [f(env) for f in src_fns]
                if snapshot:
                    for _, k in copies:
                        vals[k] = vals[k].clone()
                for slot, k in rebinds:
                    env[slot] = vals[k]
                for slot, k in copies:
                    env[slot].copy_(vals[k])
        return self.instrument_assign(run, copied, aliased, span)

    def instrument_assign(self, run: Callable[[Env], None], copied: list[tuple[Var, Expr]],
                          aliased: list[tuple[Var, Expr]], span: Span) -> Callable[[Env], None]:
        """Hook: wrap a parallel assignment that copies buffers `copied` (dst, src) and makes
        `aliased` (dst, src) share bytes without a copy. The default returns `run` unchanged."""
        return run


_STMT_HANDLERS: dict[type, Callable[[FunctionCompiler, Any], StmtFn]] = {
    AssignStmt: lambda c, s: c.compile_assign(s),
    EvalStmt: FunctionCompiler._eval,
    ReturnStmt: FunctionCompiler._return,
    SeqStmts: FunctionCompiler._seq,
    ScopeStmt: lambda c, s: c.compile_scope(s),
    BreakStmt: FunctionCompiler._break,
    ContinueStmt: FunctionCompiler._continue,
    YieldStmt: FunctionCompiler._yield,
    ForStmt: FunctionCompiler._for,
    WhileStmt: FunctionCompiler._while,
    IfStmt: FunctionCompiler._if,
}
