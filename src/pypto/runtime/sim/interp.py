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

Subclasses implement `compile_call` (what a Call means in their plane) and may override
`compile_assign`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any, NamedTuple

from ...core.dtype import INDEX, DataType
from ...core.enums import MemorySpace
from ...core.errors import RuntimeSimError
from ...core.span import Span
from ...ir.expr import (
    BinaryExpr,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    Expr,
    GlobalVar,
    MakeTuple,
    TupleGetItem,
    UnaryExpr,
    Var,
)
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
from ...ir.types import ScalarType, TensorType
from ...ops.registry import OpSpec, get_op
from . import scalar

__all__ = ["FunctionCompiler", "Extent", "BREAK", "CONTINUE", "RETURN", "Env", "ExprFn", "StmtFn"]

Env = list
ExprFn = Callable[[Env], Any]
StmtFn = Callable[[Env], Any]


class _Signal:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name.upper()


BREAK, CONTINUE, RETURN = _Signal("break"), _Signal("continue"), _Signal("return")


class Extent(NamedTuple):
    """Bytes `[addr, addr + nbytes)` of on-chip memory `space` occupied by a buffer Var."""

    space: MemorySpace
    addr: int
    nbytes: int

    def overlaps(self, other: Extent) -> bool:
        return (self.space is other.space and self.addr < other.addr + other.nbytes
                and other.addr < self.addr + self.nbytes)

    def same_place(self, other: Extent) -> bool:
        return self.space is other.space and self.addr == other.addr


def _const(v: Any) -> ExprFn:
    return lambda env: v


def _fall_through(env: Env) -> None:
    return None


class FunctionCompiler:
    """Compiles `func` into `self.body` (a statement closure) and `self.num_slots`.

    Raises:
        RuntimeSimError: at the offending statement for IR the simulator cannot run (an undefined
            Var, a Yield without a target, a mismatched carried tile, ...).
    """

    kind = "function"   # used in messages: "kernel" / "orchestration function"

    def __init__(self, func: Function) -> None:
        self.func = func
        self.slots: dict[Var, int] = {}
        self._yield_targets: list[tuple[Var, ...]] = []
        self.param_slots = tuple(self.define(p) for p in func.params)
        self.dim_binders = self._dim_binders(func)
        self.body = self.compile_block(func.body)

    @property
    def num_slots(self) -> int:
        return len(self.slots) + 1

    # ---- variables ---------------------------------------------------------------------------
    def define(self, var: Var) -> int:
        """Slot of `var`, allocated on its first definition."""
        s = self.slots.get(var)
        if s is None:
            s = self.slots[var] = len(self.slots) + 1
            self.on_define(var, s)
        return s

    def on_define(self, var: Var, slot: int) -> None:
        """Hook: a Var got a slot (subclasses register buffers here)."""

    def use(self, var: Var, span: Span | None = None) -> int:
        s = self.slots.get(var)
        if s is None:
            raise RuntimeSimError(f"{self.kind} '{self.func.name}' reads variable '{var.name}' before "
                                  f"any definition of it", span or var.span)
        return s

    def buffer_of(self, var: Var) -> Extent | None:
        """Where `var` lives if it is a fixed on-chip buffer; None for rebindable values."""
        return None

    def _dim_binders(self, func: Function) -> tuple[tuple[int, int, int], ...]:
        """(param index, axis, slot) for each dynamic dimension Var in a tensor parameter's shape."""
        out = []
        for i, p in enumerate(func.params):
            if isinstance(p.type, TensorType):
                for axis, d in enumerate(p.type.shape):
                    if isinstance(d, Var):
                        out.append((i, axis, self.define(d)))
        return tuple(out)

    def bind_dims(self, env: Env, args: Sequence[Any]) -> None:
        """Bind dynamic dimension Vars from the actual shapes of the tensor arguments."""
        for i, axis, slot in self.dim_binders:
            size = args[i].shape[axis]
            old = env[slot]
            if old is not None and old != size:
                raise RuntimeSimError(f"{self.kind} '{self.func.name}': dynamic dimension "
                                      f"'{self.func.params[i].type.shape[axis].name}' is {old} for an "
                                      f"earlier parameter but {size} for '{self.func.params[i].name}'")
            env[slot] = size

    # ---- expressions -------------------------------------------------------------------------
    def compile_expr(self, e: Expr) -> ExprFn:
        """A closure computing `e` from the environment."""
        ok, v = self.const_value(e)
        if ok:
            return _const(v)
        if isinstance(e, Var):
            return itemgetter(self.use(e))
        if isinstance(e, BinaryExpr):
            return self._binary(e)
        if isinstance(e, UnaryExpr):
            return self._unary(e)
        if isinstance(e, Call):
            return self.compile_call(e)
        if isinstance(e, MakeTuple):
            fns = [self.compile_expr(x) for x in e.elements]
            return lambda env: tuple([f(env) for f in fns])
        if isinstance(e, TupleGetItem):
            t, i = self.compile_expr(e.tuple_value), e.index
            return lambda env: t(env)[i]
        if isinstance(e, GlobalVar):
            raise RuntimeSimError(f"function reference '{e.name}' used as a value", e.span)
        raise RuntimeSimError(f"the simulator cannot evaluate a {type(e).__name__}", e.span)

    def const_value(self, e: Expr) -> tuple[bool, Any]:
        """(True, value) if `e` is a constant or a tuple of constants, else (False, None)."""
        if isinstance(e, ConstInt):
            return True, e.value
        if isinstance(e, ConstFloat):
            return True, float(e.value)
        if isinstance(e, ConstBool):
            return True, bool(e.value)
        if isinstance(e, MakeTuple):
            vals = []
            for x in e.elements:
                ok, v = self.const_value(x)
                if not ok:
                    return False, None
                vals.append(v)
            return True, tuple(vals)
        return False, None

    @staticmethod
    def _scalar_dtype(e: Expr) -> DataType | None:
        t = getattr(e, "type", None)
        return t.dtype if isinstance(t, ScalarType) else None

    def _normalizer(self, dtype: DataType, span: Span) -> Callable[[Any], Any]:
        try:
            return scalar.normalizer(dtype)
        except TypeError as err:
            raise RuntimeSimError(str(err), span) from None

    def _binary(self, e: BinaryExpr) -> ExprFn:
        try:
            fn = scalar.binary_fn(e.op)
        except KeyError as err:
            raise RuntimeSimError(err.args[0], e.span) from None
        lhs, rhs, span = self.compile_expr(e.lhs), self.compile_expr(e.rhs), e.span
        lt, rt = self._scalar_dtype(e.lhs), self._scalar_dtype(e.rhs)
        int_closed = (e.op in scalar.INT_CLOSED_OPS and e.dtype is INDEX
                      and lt is not None and rt is not None and lt.is_int() and rt.is_int())
        norm = None if int_closed else self._normalizer(e.dtype, span)

        def run(env: Env) -> Any:
            try:
                r = fn(lhs(env), rhs(env))
                return r if norm is None else norm(r)
            except (ArithmeticError, TypeError, ValueError) as err:
                raise RuntimeSimError(f"scalar '{e.op}' failed: {err}", span) from err
        return run

    def _unary(self, e: UnaryExpr) -> ExprFn:
        try:
            fn = scalar.unary_fn(e.op)
        except KeyError as err:
            raise RuntimeSimError(err.args[0], e.span) from None
        x, norm, span = self.compile_expr(e.operand), self._normalizer(e.dtype, e.span), e.span

        def run(env: Env) -> Any:
            try:
                return norm(fn(x(env)))
            except (ArithmeticError, TypeError, ValueError) as err:
                raise RuntimeSimError(f"scalar '{e.op}' failed: {err}", span) from err
        return run

    def compile_call(self, call: Call) -> ExprFn:  # pragma: no cover - abstract
        raise NotImplementedError

    def lookup_op(self, call: Call) -> OpSpec:
        """The OpSpec of a registered-op Call. Raises RuntimeSimError for unknown ops."""
        try:
            return get_op(call.op)  # type: ignore[arg-type]
        except KeyError as err:
            raise RuntimeSimError(err.args[0], call.span) from None

    def op_closure(self, call: Call, spec: OpSpec) -> ExprFn:
        """A closure returning `spec.compute(*args, **attrs)` for `call`.

        Tensors and tiles arrive as torch tensors, MakeTuple arguments as tuples of Python numbers,
        scalars as Python numbers. Any exception from the op becomes a RuntimeSimError naming the
        op and the function, located at the call.
        """
        compute = spec.compute
        if compute is None:
            raise RuntimeSimError(f"op '{spec.name}' has no simulator semantics (its OpSpec has no "
                                  f"compute function)", call.span)
        arg_fns = [self.compile_expr(a) for a in call.args]
        attrs = dict(call.kwargs)
        where, span = f"{spec.name} failed in {self.kind} '{self.func.name}'", call.span
        if isinstance(call.result_type, ScalarType):
            raw = compute

            def compute(*a: Any, **kw: Any) -> Any:
                r = raw(*a, **kw)
                return r.item() if hasattr(r, "item") else r

        def run(env: Env) -> Any:
            try:
                return compute(*[f(env) for f in arg_fns], **attrs)
            except RuntimeSimError:
                raise
            except Exception as err:
                raise RuntimeSimError(f"{where}: {err}", span) from err
        return run

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
        if self.buffer_of(s.var) is not None:
            return self.compile_parallel_assign((s.var,), (s.value,), s.span)
        value, slot = self.compile_expr(s.value), self.define(s.var)

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

    def _scope(self, s: ScopeStmt) -> StmtFn:
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
        memory; sources are snapshotted first when a copy target overlaps another source.
        """
        src_fns = [self.compile_expr(x) for x in srcs]
        rebinds: list[tuple[int, int]] = []
        copies: list[tuple[int, int]] = []
        src_ext: list[Extent | None] = []
        dst_ext: list[Extent | None] = []
        for k, (d, x) in enumerate(zip(dsts, srcs)):
            slot, dext = self.define(d), self.buffer_of(d)
            sext = self.check_copy(d, x, span) if dext is not None else None
            src_ext.append(sext)
            dst_ext.append(dext)
            if dext is None:
                rebinds.append((slot, k))
            elif not dext.same_place(sext):
                copies.append((slot, k))
        snapshot = any(dst_ext[k] is not None and src_ext[j] is not None
                       and dst_ext[k].overlaps(src_ext[j]) for _, k in copies for j in range(len(srcs)))
        if not copies and not rebinds:
            return _fall_through
        if not copies and len(rebinds) == 1:
            (slot, _), f = rebinds[0], src_fns[0]

            def one(env: Env) -> None:
                env[slot] = f(env)
            return one

        def run(env: Env) -> None:
            vals = [f(env) for f in src_fns]
            if snapshot:
                for _, k in copies:
                    vals[k] = vals[k].clone()
            for slot, k in rebinds:
                env[slot] = vals[k]
            for slot, k in copies:
                env[slot].copy_(vals[k])
        return run


_STMT_HANDLERS: dict[type, Callable[[FunctionCompiler, Any], StmtFn]] = {
    AssignStmt: lambda c, s: c.compile_assign(s),
    EvalStmt: FunctionCompiler._eval,
    ReturnStmt: FunctionCompiler._return,
    SeqStmts: FunctionCompiler._seq,
    ScopeStmt: FunctionCompiler._scope,
    BreakStmt: FunctionCompiler._break,
    ContinueStmt: FunctionCompiler._continue,
    YieldStmt: FunctionCompiler._yield,
    ForStmt: FunctionCompiler._for,
    WhileStmt: FunctionCompiler._while,
    IfStmt: FunctionCompiler._if,
}
