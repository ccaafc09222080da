"""Which DDR tensors a function reads and writes, and where (shared by DeriveCallDirections and
AutoDeriveTaskDependencies; SPEC §1 "dependencies", §3 "Ops must declare which arguments they read
and which they write").

Every tensor value is traced back to a *region* of a root tensor — a parameter, or a tensor the
function creates (`tensor.create`): ops with the "view" trait (`tensor.slice`, reshape, ...) give a
region of their source (an exact box for an op with `shape` and `offset` parameters, the whole
root otherwise); ops that write a tensor argument in place return that argument's region; a call
of a program function returns the regions of its Out/InOut arguments (in parameter order, the
value the orchestration sees); loop-carried values and if results keep the region flowing in.

An op's declared `reads` / `writes`, and a callee's parameter directions (In reads, Out writes,
InOut both), turn each use into an access. Statements are numbered in program order, so
`first_read` / `first_write` tell whether a tensor is read before it is first written.
Calls of program functions are collected as `CallSite`s with the region and direction of each
tensor argument, the regions of its explicit `deps=[...]` (which the call does not access) and the
loops around the call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.enums import ParamDirection, ScopeKind, ScopeMode
from ..ir.expr import BinaryExpr, Call, Expr, GlobalVar, MakeTuple, TupleGetItem, Var
from ..ir.function import Function
from ..ir.stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, ScopeStmt, Stmt, WhileStmt, YieldStmt
from ..ir.tasks import is_submit, is_task_id
from ..ir.types import TensorType
from ..ir.visitor import IRVisitor
from ..ops import get_op
from .simplify import simplify_expr

__all__ = ["Region", "CallSite", "TensorAccess", "DirectionsOf"]

DirectionsOf = Callable[[str], "tuple[ParamDirection, ...] | None"]


@dataclass(frozen=True, eq=False)
class Region:
    """`root[offsets : offsets + shape]`; `offsets`/`shape` None means the whole root tensor."""

    root: Var
    offsets: tuple[Expr, ...] | None = None
    shape: tuple[Expr, ...] | None = None


@dataclass(eq=False)
class CallSite:
    """One call of a program function: `args[i]` is (param name, direction, Region or None);
    `deps` the regions its explicit `deps=[...]` name (whose earlier writers it waits for),
    `task_deps` the earlier sites whose TaskIds it names; `manual` and `untracked` say which
    region conflicts order it (none in a MANUAL scope; not through `no_dep_args`)."""

    index: int
    callee: str
    call: Call
    stmt: Stmt
    args: list[tuple[str, ParamDirection, Region | None]]
    loops: tuple[int, ...] = ()
    deps: tuple[Region, ...] = ()
    task_deps: tuple[int, ...] = ()   # sites whose TaskIds its deps= name (SPEC §13)
    manual: bool = False              # submitted in a MANUAL runtime scope: no derived order
    untracked: frozenset[str] = frozenset()   # its no_dep_args (parameter names)


class TensorAccess(IRVisitor):
    """Run `visit_function(f)`; then read the attributes (see the module docstring).

    Args:
        directions_of: parameter directions of a program function by name (None if unknown).
        params_of: parameter names of a program function by name (for CallSite labels).

    Attributes:
        region: tensor Var -> Region it denotes (a Var missing here is its own root).
        first_read / first_write: root -> number of the first statement reading / writing it.
        calls: the CallSites, in program order.
    """

    def __init__(self, directions_of: DirectionsOf,
                 params_of: Callable[[str], tuple[str, ...]] = lambda name: ()) -> None:
        self.directions_of, self.params_of = directions_of, params_of
        self.region: dict[Var, Region] = {}
        self.tuples: dict[Var, list[Region | None]] = {}
        self.first_read: dict[Var, int] = {}
        self.first_write: dict[Var, int] = {}
        self.calls: list[CallSite] = []
        self.pos = 0
        self.loops: list[int] = []
        self.modes: list[ScopeMode] = []          # enclosing runtime scopes
        self.submit_site: dict[Var, int] = {}     # result tuple of a pl.submit -> its site
        self.task_site: dict[Var, int] = {}       # TaskId var -> the site it names

    # ---- helpers -------------------------------------------------------------------------------
    def region_of(self, e: Expr) -> Region | None:
        if isinstance(e, TupleGetItem) and isinstance(e.tuple_value, Var):
            regs = self.tuples.get(e.tuple_value)
            return regs[e.index] if regs is not None and e.index < len(regs) else None
        if not isinstance(e, Var) or not isinstance(e.type, TensorType):
            return None
        return self.region.get(e, Region(e))

    def access(self, r: Region | None, read: bool, write: bool) -> None:
        if r is None:
            return
        if read:
            self.first_read.setdefault(r.root, self.pos)
        if write:
            self.first_write.setdefault(r.root, self.pos)

    def visit_function(self, f: Function) -> None:
        self.visit_stmt(f.body)

    def visit_stmt(self, s: Stmt) -> None:
        self.pos += 1
        super().visit_stmt(s)

    # ---- statements ----------------------------------------------------------------------------
    def visit_AssignStmt(self, s: AssignStmt) -> None:
        v = s.value
        if isinstance(v, TupleGetItem) and v.tuple_value in self.submit_site and is_task_id(v):
            self.task_site[s.var] = self.submit_site[v.tuple_value]  # type: ignore[index]
        got = self.value(s.value, s)
        if is_submit(v):
            self.submit_site[s.var] = len(self.calls) - 1
        if isinstance(got, list):
            self.tuples[s.var] = got
        elif got is not None and isinstance(s.var.type, TensorType):
            self.region[s.var] = got

    def visit_EvalStmt(self, s: EvalStmt) -> None:
        self.value(s.expr, s)

    def value(self, v: Expr, s: Stmt) -> Region | list[Region | None] | None:
        if isinstance(v, (Var, TupleGetItem)):
            return self.region_of(v)
        if not isinstance(v, Call):
            return None
        if isinstance(v.op, GlobalVar):
            return self.call(v, s)
        spec = get_op(v.op)
        regs = [self.region_of(a) for a in v.args]
        for i, r in enumerate(regs):
            self.access(r, i in spec.reads, i in spec.writes)
        written = [regs[i] for i in spec.writes if i < len(regs) and regs[i] is not None]
        if written:
            return written[0]
        if spec.has_trait("view") and regs and regs[0] is not None:
            return self.view(regs[0], spec.params, v)
        if spec.has_trait("creation") and isinstance(v.type, TensorType):
            return None  # a fresh root: the assigned Var itself
        return None

    def view(self, src: Region, params: tuple[str, ...], v: Call) -> Region:
        if "offset" not in params or "shape" not in params:
            return Region(src.root)
        off, shape = v.args[params.index("offset")], v.args[params.index("shape")]
        if not isinstance(off, MakeTuple) or not isinstance(shape, MakeTuple):
            return Region(src.root)
        offs = off.elements
        if src.offsets is not None:
            offs = tuple(simplify_expr(BinaryExpr("add", a, b, a.type.dtype))  # type: ignore[attr-defined]
                         for a, b in zip(src.offsets, offs))
        return Region(src.root, tuple(offs), tuple(shape.elements))

    def call(self, v: Call, s: Stmt) -> Region | list[Region | None] | None:
        name = v.op.name  # type: ignore[union-attr]
        dirs = self.directions_of(name) or (ParamDirection.In,) * len(v.args)
        names = self.params_of(name) or tuple(f"arg{i}" for i in range(len(v.args)))
        args, outs = [], []
        for a, d, n in zip(v.args, dirs, names):
            r = self.region_of(a)
            self.access(r, d is not ParamDirection.Out, d is not ParamDirection.In)
            if r is not None:
                args.append((n, d, r))
            if d is not ParamDirection.In:
                outs.append(r)
        deps = tuple(r for r in (self.region_of(d) for d in v.deps) if r is not None)
        tasks = tuple(dict.fromkeys(self.task_site[d] for d in v.deps if d in self.task_site))
        manual = bool(self.modes) and self.modes[-1] is ScopeMode.MANUAL
        untracked = frozenset(names[i] for i in v.attr("no_dep_args", ()) if i < len(names))
        self.calls.append(CallSite(len(self.calls), name, v, s, args, tuple(self.loops), deps, tasks, manual,
                                   untracked))
        if is_submit(v):  # pl.submit: the outputs, then the TaskId
            return [*outs, None]
        if len(outs) == 1:
            return outs[0]
        return outs if outs else None

    def visit_ScopeStmt(self, s: ScopeStmt) -> None:
        if s.kind is ScopeKind.Runtime:
            self.modes.append(s.mode)
        try:
            self.visit_stmt(s.body)
        finally:
            if s.kind is ScopeKind.Runtime:
                self.modes.pop()

    def _carry(self, s: ForStmt | WhileStmt) -> None:
        for ia, rv in zip(s.iter_args, s.return_vars):
            r = self.region_of(ia.init) if ia.init is not None else None
            if r is not None:
                self.region[ia] = self.region[rv] = r

    def visit_ForStmt(self, s: ForStmt) -> None:
        self._carry(s)
        self.loops.append(id(s))
        self.visit_stmt(s.body)
        self.loops.pop()

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        self._carry(s)
        self.loops.append(id(s))
        self.visit_stmt(s.body)
        self.loops.pop()

    def visit_IfStmt(self, s: IfStmt) -> None:
        self.visit_stmt(s.then_body)
        if s.else_body is not None:
            self.visit_stmt(s.else_body)
        for i, rv in enumerate(s.return_vars):
            roots = {id(r.root): r for b in (s.then_body, s.else_body) if b is not None
                     for r in [self.region_of(_yielded(b, i))] if r is not None}
            if len(roots) == 1:
                self.region[rv] = Region(next(iter(roots.values())).root)

    def visit_YieldStmt(self, s: YieldStmt) -> None:
        pass

    visit_ReturnStmt = visit_YieldStmt  # type: ignore[assignment]


def _yielded(body: Stmt, i: int) -> Expr:
    last = body.stmts[-1] if body.stmts else None  # type: ignore[attr-defined]
    return last.values[i] if isinstance(last, YieldStmt) and i < len(last.values) else MakeTuple(())
