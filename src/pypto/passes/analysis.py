"""Small analyses shared by passes: which Vars a subtree defines and uses."""

from __future__ import annotations

from collections.abc import Iterable

from ..ir.expr import Call, Expr, GlobalVar, TupleGetItem, Var
from ..ir.stmt import AssignStmt, ForStmt, IfStmt, ScopeStmt, Stmt, WhileStmt
from ..ir.types import TensorType, TileType, Type
from ..ir.uses import UseVisitor, used_vars
from ..ir.visitor import IRVisitor
from ..ops import get_op, has_op
from ..ops.typing_rules import dims_equal

__all__ = ["defined_vars", "used_vars", "assigned_vars", "UseVisitor", "unwritten_outputs", "reads_var",
           "first_reader", "in_place_operands_of"]


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

    def visit_ScopeStmt(self, s: ScopeStmt) -> None:
        if s.block_var is not None:
            self.defs[s.block_var] = None
        self.visit_stmt(s.body)
        if s.task_id is not None:
            self.defs[s.task_id] = None


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


class _Reads(UseVisitor):
    def __init__(self, v: Var) -> None:
        self.v, self.found = v, False

    def on_use(self, u: Var) -> None:
        self.found = self.found or u is self.v


def reads_var(nodes: Stmt | Expr | Iterable[Stmt | Expr], v: Var) -> bool:
    """Whether `v` is read anywhere in `nodes` (a statement, an expression, or several)."""
    r = _Reads(v)
    for n in (nodes,) if isinstance(nodes, (Stmt, Expr)) else nodes:
        if isinstance(n, Stmt):
            r.visit_stmt(n)
        else:
            r.visit_expr(n)
    return r.found


class _FirstReader(UseVisitor):
    def __init__(self, v: Var, skip: Stmt | None) -> None:
        self.v, self.skip = v, skip
        self.current: Stmt | None = None
        self.found: Stmt | None = None

    def visit_stmt(self, s: Stmt) -> None:
        if s is self.skip or self.found is not None:
            return
        outer, self.current = self.current, s
        super().visit_stmt(s)
        self.current = outer

    def on_use(self, u: Var) -> None:
        if u is self.v and self.found is None:
            self.found = self.current


def first_reader(body: Stmt, v: Var, skip: Stmt | None = None) -> Stmt | None:
    """The innermost statement of `body` (in program order, leaving out the subtree `skip`) that
    first reads `v` (a loop or if for a read in its header), or None. For locating errors."""
    r = _FirstReader(v, skip)
    r.visit_stmt(body)
    return r.found


def in_place_operands_of(call: Expr, result: Type) -> list[Var]:
    """The tile operands of op call `call` that its result (of type `result`) may be written over:
    those at `OpSpec.inplace_args` with the result's shape, dtype and memory space."""
    if not (isinstance(call, Call) and isinstance(call.op, str) and has_op(call.op) and isinstance(result, TileType)):
        return []
    out = []
    for j in get_op(call.op).inplace_args:
        a = call.args[j] if j < len(call.args) else None
        t = getattr(a, "type", None)
        if isinstance(a, Var) and isinstance(t, TileType) and t.dtype is result.dtype \
                and t.memory_space is result.memory_space and len(t.shape) == len(result.shape) \
                and all(dims_equal(x, y) for x, y in zip(t.shape, result.shape)):
            out.append(a)
    return out


class _Roots(IRVisitor):
    """Alias analysis of DDR tensors: which parameter (root) each tensor value *is*.

    In-place writers (`tile.store`, `tensor.assemble`) return the tensor they write; a call of a
    program function returns its Out/InOut arguments; loop-carried values and loop/if results keep
    the root of the values flowing into them.
    """

    def __init__(self, program) -> None:  # type: ignore[no-untyped-def]
        self.program = program
        self.root: dict[Var, Var] = {}
        self.written: set[Var] = set()

    def root_of(self, e) -> Var | None:  # type: ignore[no-untyped-def]
        return self.root.get(e, e) if isinstance(e, Var) else None

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        v = s.value
        if isinstance(v, Var):
            r = self.root_of(v)
            if r is not None:
                self.root[s.var] = r
        elif isinstance(v, TupleGetItem) and isinstance(v.tuple_value, Var) and v.tuple_value in self.root:
            pass
        elif isinstance(v, Call) and isinstance(v.op, str) and get_op(v.op).has_trait("view"):
            r = self.root_of(v.args[0])  # a slice/view of a tensor is part of that tensor
            if r is not None:
                self.root[s.var] = r
        elif isinstance(v, Call) and isinstance(v.op, str):
            for w in get_op(v.op).writes:
                if w < len(v.args) and isinstance(v.args[w].type, TensorType):  # optional args may be absent
                    r = self.root_of(v.args[w])
                    if r is not None:
                        self.written.add(r)
                        self.root[s.var] = r
        elif isinstance(v, Call) and isinstance(v.op, GlobalVar):
            callee = self.program.get_function(v.op.name) if self.program is not None else None
            if callee is not None:
                from ..core.enums import ParamDirection

                outs = [self.root_of(a) for a, d in zip(v.args, callee.param_directions)
                        if d is not ParamDirection.In]
                self.written.update(r for r in outs if r is not None)
                if len(outs) == 1 and outs[0] is not None:
                    self.root[s.var] = outs[0]
        super().visit_AssignStmt(s)

    def visit_EvalStmt(self, s) -> None:  # type: ignore[no-untyped-def]
        self.visit_AssignStmt(AssignStmt(Var("_", s.expr.type), s.expr))

    def _carry(self, s) -> None:  # type: ignore[no-untyped-def]
        for ia, rv in zip(s.iter_args, s.return_vars):
            r = self.root_of(ia.init) if ia.init is not None else None
            if r is not None:
                self.root[ia] = r
                self.root[rv] = r

    def visit_ForStmt(self, s: ForStmt) -> None:
        self._carry(s)
        super().visit_ForStmt(s)

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        self._carry(s)
        super().visit_WhileStmt(s)


def unwritten_outputs(program) -> list[tuple[object, Var]]:  # type: ignore[no-untyped-def]
    """(function, parameter) pairs of Out/InOut parameters that no path ever writes (a hand-written
    C++ kernel's writes are not visible: it is not checked)."""
    from ..core.enums import ParamDirection

    out = []
    for f in program.functions:
        if f.external is not None:
            continue
        r = _Roots(program)
        r.visit_stmt(f.body)
        for p, d in zip(f.params, f.param_directions):
            if d is ParamDirection.Out and p not in r.written:
                out.append((f, p))
    return out
