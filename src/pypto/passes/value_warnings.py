"""Compile-time warnings about values (SPEC §12; upstream's UnusedVariable, UnusedControlFlowResult,
OutParamWriteDropped), found on the program right after ConvertToSSA, where every value has one
definition and loop / if results are explicit return vars.

- **W001 UnusedVariable**: an assignment `x = value` whose value nothing reads (no later statement,
  yield, return, call or type uses `x`). Exempt: names starting with `_`, and *effectful* values —
  the result of an op that writes an argument (`pl.store`, `pl.assemble`, `y[...] = v`, ...) or of a
  system op, of a call of a program function (a task), and values carried from those (below): their
  effect is the write, the value is only the next version of the written tensor.
- **W002 UnusedControlFlowResult**: a return var of an `if` / `for` / `while` (a value carried out
  of a loop, or merged after an if) that nothing reads, unless it is effectful (a loop that writes
  an Out tensor in place may leave the final version unused) or it is a `while` loop's value its
  condition reads (the loop counter of `while i < n:`).
- **W003 OutParamWriteDropped**. How our IR represents Out writes: an Out/InOut parameter `y` is
  written only by in-place writers — `tile.store` / `tensor.assemble` (also `y[...] = v`) or a call
  passing it as an Out/InOut argument — and each write returns `y`'s *next version*, an SSA value
  aliasing `y`; loops carry versions in iter_args and ifs merge them in return vars. The value a
  function returns for `y` is the version its `return` names; that version *contains* the writes on
  its chain of versions back to the parameter. W003 reports every write of `y` that is not on the
  chain of any version of `y` the function returns — its result was discarded (`pl.store(t, [0, 0],
  y)` as a statement, or `y2 = pl.store(...)` with `return y`), or a later write started again from an
  older version (`y3 = pl.store(b, ..., y)` instead of `..., y2)`). Writes through a view of `y`
  (`top = y[0:8, :]`, then writing `top`) write `y` itself and are not versions of it, so they
  never count as dropped. A function that returns no version of `y` (writes only, `-> None`) gets
  no W003: every write is its effect. On the simulator (and in the torch reference) the bytes
  still land in DDR, as stores write in place; the warning
  is about what the program says: the value returned for `y` does not contain the write, so
  whatever goes by values (the caller's use of the result, a compiler entitled to drop a write whose
  result is unused) does not see it. Fix: thread the version, `y = pl.store(t, [0, 0], y)`,
  and return the last one.

`value_warnings(program)` returns the findings (`core.diagnostics.Diagnostic`), deduplicated by the
caller; `pypto.compiler` (the `ir.compile` driver) issues them as `DiagnosticWarning`s and writes `report/diagnostics.log`.
"""

from __future__ import annotations

from ..core.diagnostics import Diagnostic
from ..core.enums import ParamDirection
from ..core.span import Span
from ..ir.expr import Call, Expr, GlobalVar, IterArg, MakeTuple, TupleGetItem, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, ReturnStmt, SeqStmts, Stmt, WhileStmt, YieldStmt
from ..ir.types import TensorType
from ..ir.visitor import IRVisitor
from .analysis import reads_var, used_vars

__all__ = ["value_warnings"]

_OUT = (ParamDirection.Out, ParamDirection.InOut)


def _writes(call: Call) -> tuple[int, ...]:
    """Argument indices `call` (an op) writes; () for ops that write nothing."""
    from ..ops import get_op, has_op

    if not isinstance(call.op, str) or not has_op(call.op):
        return ()
    return tuple(i for i in get_op(call.op).writes if i < len(call.args))


def _effectful_op(call: Call) -> bool:
    from ..ops import get_op, has_op

    if isinstance(call.op, GlobalVar):
        return True
    return bool(_writes(call)) or (isinstance(call.op, str) and has_op(call.op)
                                   and get_op(call.op).has_trait("system"))


def _last_yield(body: SeqStmts) -> YieldStmt | None:
    return body.stmts[-1] if body.stmts and isinstance(body.stmts[-1], YieldStmt) else None


class _Versions(IRVisitor):
    """Per function: the effectful values, every write of an Out/InOut parameter, and the writes
    each version of a parameter contains (module docstring)."""

    def __init__(self, func: Function, program: Program) -> None:
        self.program = program
        self.effectful: set[Var] = set()
        self.param_of: dict[Var, Var] = {}              # version -> its Out/InOut parameter
        self.contains: dict[Var, frozenset[int]] = {}   # version -> ids of the writes it contains
        self.writes: list[tuple[Var, Span, str]] = []   # (parameter, span, what) per write
        self.returned: dict[Var, set[int]] = {}         # parameter -> writes its returned versions contain
        for p, d in zip(func.params, func.param_directions):
            if d in _OUT and isinstance(p.type, TensorType):
                self.param_of[p], self.contains[p] = p, frozenset()

    def _alias(self, dst: Var, src: Expr) -> None:
        """`dst` is `src` (a copy, view or tuple element): a tensor alias is the same DDR memory, so
        it counts as effectful (what matters is what is written into it, not the name)."""
        if isinstance(src, Var):
            if src in self.param_of:
                self.param_of[dst], self.contains[dst] = self.param_of[src], self.contains[src]
            if src in self.effectful or isinstance(dst.type, TensorType):
                self.effectful.add(dst)

    def _write(self, dst: Var | None, src: Expr, span: Span, what: str) -> None:
        if not isinstance(src, Var) or src not in self.param_of:
            return
        p = self.param_of[src]
        self.writes.append((p, span, what))
        if dst is not None:
            self.param_of[dst], self.contains[dst] = p, self.contains[src] | {len(self.writes) - 1}

    def _call(self, dst: Var | None, call: Call, span: Span) -> None:
        if dst is not None and _effectful_op(call):
            self.effectful.add(dst)
        if isinstance(call.op, GlobalVar):
            callee = self.program.get_function(call.op.name)
            if callee is None:
                return
            outs = [a for a, d in zip(call.args, callee.param_directions) if d in _OUT]
            for a in outs:   # each Out argument is one write; a single one is the call's result
                self._write(dst if len(outs) == 1 else None, a, span, f"the call of '{callee.name}'")
            return
        from ..ops import get_op, has_op

        if not isinstance(call.op, str) or not has_op(call.op):
            return
        if get_op(call.op).has_trait("view"):
            # a view of a parameter is part of it, not a version of it: writes through the view
            # land in the parameter and cannot be threaded back into its versions
            if dst is not None and isinstance(dst.type, TensorType):
                self.effectful.add(dst)
            return
        for i in _writes(call):
            if isinstance(call.args[i].type, TensorType):
                self._write(dst, call.args[i], span, f"'{call.op}'")

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        v = s.value
        if isinstance(v, Call):
            self._call(s.var, v, s.span)
        elif isinstance(v, TupleGetItem):
            self._alias(s.var, v.tuple_value)
        elif isinstance(v, Var):
            self._alias(s.var, v)

    def visit_EvalStmt(self, s: EvalStmt) -> None:
        if isinstance(s.expr, Call):
            self._call(None, s.expr, s.span)

    def _carry(self, pairs: list[tuple[Var, list[Expr]]]) -> None:
        """`dst` (an iter arg or return var) takes the versions / effects of any of `srcs`."""
        for dst, srcs in pairs:
            for src in srcs:
                if isinstance(src, Var) and src in self.param_of:
                    self.param_of[dst] = self.param_of[src]
                    self.contains[dst] = self.contains.get(dst, frozenset()) | self.contains[src]
                if isinstance(src, Var) and src in self.effectful:
                    self.effectful.add(dst)

    def _loop(self, s: ForStmt | WhileStmt) -> None:
        self._carry([(ia, [ia.init]) for ia in s.iter_args if ia.init is not None])
        self.visit_stmt(s.body)
        y = _last_yield(s.body)
        vals = list(y.values) if y is not None else []
        self._carry([(ia, [vals[i]]) for i, ia in enumerate(s.iter_args) if i < len(vals)])
        self._carry([(rv, [ia.init, vals[i]] if i < len(vals) else [ia.init])
                     for i, (ia, rv) in enumerate(zip(s.iter_args, s.return_vars))])

    visit_ForStmt = _loop
    visit_WhileStmt = _loop

    def visit_IfStmt(self, s: IfStmt) -> None:
        self.visit_stmt(s.then_body)
        if s.else_body is not None:
            self.visit_stmt(s.else_body)
        ys = [y for y in (_last_yield(s.then_body), _last_yield(s.else_body) if s.else_body else None) if y]
        self._carry([(rv, [y.values[i] for y in ys if i < len(y.values)]) for i, rv in enumerate(s.return_vars)])

    def visit_ReturnStmt(self, s: ReturnStmt) -> None:
        values = list(s.values[0].elements) if len(s.values) == 1 and isinstance(s.values[0], MakeTuple) \
            else list(s.values)
        for v in values:
            if isinstance(v, Var) and v in self.param_of:
                self.returned.setdefault(self.param_of[v], set()).update(self.contains[v])


class _ResultVars(IRVisitor):
    """(return var, owning statement) of every if / for / while."""

    def __init__(self) -> None:
        self.results: list[tuple[Var, Stmt]] = []
        self.assigns: list[AssignStmt] = []

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.assigns.append(s)
        super().visit_AssignStmt(s)

    def _owner(self, s: ForStmt | WhileStmt | IfStmt) -> None:
        self.results += [(rv, s) for rv in s.return_vars]

    def visit_ForStmt(self, s: ForStmt) -> None:
        self._owner(s)
        super().visit_ForStmt(s)

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        # a value the condition reads is what drives the loop (its counter): its final value
        # being unused is the normal case of `while i < n: ... i = i + 1`, not a lost result
        self.results += [(rv, s) for ia, rv in zip(s.iter_args, s.return_vars) if not reads_var(s.cond, ia)]
        super().visit_WhileStmt(s)

    def visit_IfStmt(self, s: IfStmt) -> None:
        self._owner(s)
        super().visit_IfStmt(s)


_KEYWORD = {ForStmt: "for", WhileStmt: "while", IfStmt: "if"}


def _function_warnings(func: Function, program: Program) -> list[Diagnostic]:
    versions = _Versions(func, program)
    versions.visit_stmt(func.body)
    used = used_vars(func.body)
    defs = _ResultVars()
    defs.visit_stmt(func.body)
    out: list[Diagnostic] = []

    def skip(v: Var) -> bool:
        return v in used or v in versions.effectful or v.name.startswith("_") or isinstance(v, IterArg)

    for s in defs.assigns:
        if not skip(s.var) and s.span.is_known():
            out.append(Diagnostic("W001", func.name, f"'{s.var.name}' is assigned a value that is never used; "
                                  f"use it or remove the assignment (a name starting with '_' marks a value "
                                  f"kept on purpose)", s.span))
    for rv, owner in defs.results:
        if not skip(rv) and owner.span.is_known():
            kw = _KEYWORD[type(owner)]
            out.append(Diagnostic("W002", func.name, f"the value of '{rv.name}' after this '{kw}' is never "
                                  f"used; use it, drop it, or name it '_{rv.name}' when only the "
                                  f"{'iterations' if kw != 'if' else 'branches'} need it", owner.span))
    for i, (p, span, what) in enumerate(versions.writes):
        kept = versions.returned.get(p)
        if kept is not None and i not in kept:
            out.append(Diagnostic("W003", func.name, f"the write into Out parameter '{p.name}' by {what} is "
                                  f"not part of the value '{func.name}' returns for '{p.name}': its result "
                                  f"is discarded or a later write starts again from an older version. "
                                  f"Thread it: {p.name} = pl.store(..., {p.name}) and return the last "
                                  f"{p.name}", span if span.is_known() else p.span))
    return sorted(out, key=lambda d: (d.span.begin_line, d.span.begin_col))


def value_warnings(program: Program) -> list[Diagnostic]:
    """W001-W003 of every function of `program` (an SSA program: run after ConvertToSSA), in
    function and statement order."""
    out: list[Diagnostic] = []
    for f in program.functions:
        out.extend(_function_warnings(f, program))
    return out
