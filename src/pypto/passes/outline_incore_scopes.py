"""OutlineIncoreScopes: each `with pl.at(...)` body becomes an InCore function (SPEC §5).

For a scope in function `f`, the k-th outlined function is `f_incore_<k>`:
- its parameters are the values the body reads from outside (tensors and scalars), in first-use
  order, with the Orchestration function's directions where the value is one of its parameters;
- a tensor the body writes with `tensor.assemble` (e.g. `out[:] = ...`) is passed in and becomes an
  Out parameter (InOut if the body also reads it otherwise); the function returns its new value;
- a tensor computed inside and used after the scope gets a fresh Out parameter: the caller creates
  it with `tensor.create` and the body assembles the value into it.
The scope is replaced by the call; values used afterwards are bound to the call's results.
The scope's `optimizations` (`pl.split`, `pl.cross_core_slot`) go onto the outlined function, where
ExpandMixedKernel reads them; its explicit `deps=[...]` go onto the call that replaces it. A region
that names its task (`with pl.at(...) as tid`) or sets task options (`no_dep_args`, `name_hint`,
`allow_early_resolve`) becomes a `pl.submit` of the outlined function, its TaskId bound to `tid`
(SPEC §13). Last, each `pl.cluster()` scope, whose regions are now kernel calls, becomes the call
of a Group function (`scope_outline.outline_cluster_groups`).
"""

from __future__ import annotations

from dataclasses import replace

from ..core.dtype import INDEX
from ..core.enums import FunctionType, Level, ParamDirection, ScopeKind
from ..core.errors import CompileError
from ..ir.expr import Call, ConstInt, Expr, GlobalVar, MakeTuple, TupleGetItem, Var
from ..ir.function import Function, Program
from ..ir.stmt import (
    AssignStmt,
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
from ..ir.tasks import submit_result_type
from ..ir.types import TensorType, TupleType
from ..ir.visitor import IRMutator, IRVisitor
from ..ops import get_op
from .analysis import defined_vars, first_reader, used_vars
from .base import Pass, PassContext
from .rewrite import FreshBindings, is_dynamic_dim, rebuild_children, uses_outside
from .scope_outline import outline_cluster_groups

__all__ = ["OutlineIncoreScopes"]

_OUTLINED_FROM = (FunctionType.Orchestration, FunctionType.Opaque, FunctionType.Spmd)


class _AssembleTargets(IRVisitor):
    """Maps each value that *is* an outer tensor after in-place writes to that tensor (its root).

    An op that writes a DDR tensor argument in place (`tensor.assemble`, `tile.store`) returns that
    tensor, so its result has the argument's root. Loop-carried values and loop/if results carry
    the root of their initial / yielded values, so `y = pl.store(t, [i, 0], y)` inside a loop still
    writes the parameter `y`.
    """

    def __init__(self) -> None:
        self.root: dict[Var, Var] = {}
        self.other_reads: set[Var] = set()
        self.written: set[Var] = set()  # roots some op writes in place

    def root_of(self, e: Expr) -> Var | None:
        return self.root.get(e, e) if isinstance(e, Var) else None

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        v = s.value
        if isinstance(v, Call) and isinstance(v.op, str):
            writes = [w for w in get_op(v.op).writes if w < len(v.args) and isinstance(v.args[w].type, TensorType)]
            if writes:
                w = writes[0]
                r = self.root_of(v.args[w])
                if r is not None:
                    self.root[s.var] = r
                    self.written.add(r)
                for i, a in enumerate(v.args):
                    if i != w:
                        self.visit_expr(a)
                return
        if isinstance(v, Var) and isinstance(v.type, TensorType):
            self.root[s.var] = self.root.get(v, v)
            return
        super().visit_AssignStmt(s)

    def _carry(self, s: ForStmt | WhileStmt) -> None:
        for ia, rv in zip(s.iter_args, s.return_vars):
            r = self.root_of(ia.init) if ia.init is not None and isinstance(ia.type, TensorType) else None
            if r is not None:
                self.root[ia] = r
                self.root[rv] = r

    def _uncarry(self, s: ForStmt | WhileStmt) -> None:
        """A carried value is the outer tensor only if every iteration yields that tensor back
        (in-place writes); a loop yielding computed values carries new values instead."""
        for i, (ia, rv) in enumerate(zip(s.iter_args, s.return_vars)):
            if ia in self.root and self.root_of(_yielded(s.body, i)) is not self.root[ia]:
                del self.root[ia]
                self.root.pop(rv, None)

    def visit_ForStmt(self, s: ForStmt) -> None:
        self._carry(s)
        for e in (s.start, s.stop, s.step):
            self.visit_expr(e)
        self.visit_stmt(s.body)
        self._uncarry(s)

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        self._carry(s)
        self.visit_expr(s.cond)
        self.visit_stmt(s.body)
        self._uncarry(s)

    def visit_YieldStmt(self, s: YieldStmt) -> None:
        for v in s.values:
            if not (isinstance(v, Var) and v in self.root):
                self.visit_expr(v)

    visit_ReturnStmt = visit_YieldStmt

    def visit_IfStmt(self, s: IfStmt) -> None:
        self.visit_expr(s.cond)
        self.visit_stmt(s.then_body)
        if s.else_body is not None:
            self.visit_stmt(s.else_body)
        for i, rv in enumerate(s.return_vars):
            roots = {self.root_of(_yielded(b, i)) for b in (s.then_body, s.else_body) if b is not None}
            if len(roots) == 1 and None not in roots:
                self.root[rv] = roots.pop()  # type: ignore[assignment]

    def visit_Var(self, e: Var) -> None:
        self.other_reads.add(self.root.get(e, e))

    visit_IterArg = visit_Var


def _yielded(body: SeqStmts, i: int) -> Expr | None:
    last = body.stmts[-1] if body.stmts else None
    return last.values[i] if isinstance(last, YieldStmt) and i < len(last.values) else None


class _Outliner:
    def __init__(self, func: Function, taken: set[str]) -> None:
        self.func = func
        self.taken = taken
        self.count = 0
        self.new_funcs: list[Function] = []
        self.param_dirs = dict(zip(func.params, func.param_directions))

    def fresh_name(self) -> str:
        while True:
            name = f"{self.func.name}_incore_{self.count}"
            self.count += 1
            if name not in self.taken:
                self.taken.add(name)
                return name

    def rewrite(self, body: SeqStmts) -> SeqStmts:
        self.outside_uses = used_vars(self.func.body)  # refined per scope below
        return self.block(body, self.func.body)

    def block(self, s: SeqStmts, root: Stmt) -> SeqStmts:
        out: list[Stmt] = []
        for st in s.stmts:
            if isinstance(st, ScopeStmt) and st.kind is ScopeKind.InCore and \
                    (st.level is None or st.level.level_number == 0):  # higher levels: scope_outline
                out.extend(self.outline(st))
            else:
                out.append(rebuild_children(st, lambda b: self.block(b, root)))
        return replace(s, stmts=tuple(out))

    def outline(self, scope: ScopeStmt) -> list[Stmt]:
        inner_defs = defined_vars(scope.body)
        inside_uses = used_vars(scope.body)
        used_after = uses_outside(self.func.body, scope)
        inputs = [v for v in inside_uses if v not in inner_defs and not is_dynamic_dim(v, self.func)]
        order = {p: i for i, p in enumerate(self.func.params)}
        inputs.sort(key=lambda v: order.get(v, len(order)))  # stable: non-params keep first-use order
        targets = _AssembleTargets()
        targets.visit_stmt(scope.body)
        outputs = [v for v in inner_defs if v in used_after]
        for o in outputs:
            if not isinstance(o.type, TensorType):
                use = first_reader(self.func.body, o, skip=scope)
                raise CompileError(
                    f"value '{o.name}' computed inside pl.at is used after it, but only tensors can leave "
                    f"an InCore scope: compute '{o.name}' before the pl.at, or write it into a tensor",
                    use.span if use is not None else o.span,
                    notes=((o.span, f"'{o.name}' is assigned here, inside the pl.at"),))
        pre: list[Stmt] = []
        params: list[Var] = []
        dirs: list[ParamDirection] = []
        args: list[Expr] = []
        body_stmts = list(scope.body.stmts)
        ret_values: list[Expr] = []
        param_of: dict[Var, Var] = {}
        for v in inputs:
            p = Var(v.name, v.type, span=v.span)
            param_of[v] = p
            params.append(p)
            if v in targets.written:
                d = ParamDirection.InOut if v in targets.other_reads else ParamDirection.Out
                if self.param_dirs.get(v) is ParamDirection.InOut:
                    d = ParamDirection.InOut
            else:
                d = ParamDirection.In
            dirs.append(d)
            args.append(v)
        # The function returns one value per Out/InOut parameter, in parameter order (the value a
        # call of it stands for, SPEC §1): first the outer tensors it writes in place — their last
        # value at the top level of the body, or the parameter itself —, then the new tensors.
        written = [v for v, d in zip(inputs, dirs) if d is not ParamDirection.In]
        final = _final_values(scope.body, targets)
        ret_values.extend(final.get(v, v) for v in written)
        slot: dict[Var, int] = {}
        for o in outputs:
            root = targets.root.get(o)
            if root is not None and root in param_of and root in targets.written:
                slot[o] = written.index(root)
                continue
            slot[o] = len(ret_values)
            # A new tensor: the caller allocates it, the body assembles the value into it.
            t = o.type
            buf = Var(f"{o.name}_buf", t, span=o.span)
            pre.append(AssignStmt(buf, _create(t, o.span), span=o.span))
            p = Var(f"{o.name}_out", t, span=o.span)
            params.append(p)
            dirs.append(ParamDirection.Out)
            args.append(buf)
            stored = Var(f"{o.name}_stored", t, span=o.span)
            zeros = MakeTuple(tuple(ConstInt(0, INDEX) for _ in t.shape))
            asm = get_op("tensor.assemble")
            body_stmts.append(AssignStmt(stored, Call("tensor.assemble", (p, o, zeros), (),
                                                      asm.infer([p, o, zeros], {})), span=o.span))
            ret_values.append(stored)
        name = self.fresh_name()
        ret_types = tuple(v.type for v in ret_values)
        body = SeqStmts(tuple(body_stmts) + (ReturnStmt(tuple(ret_values), span=scope.span),), span=scope.span)
        body = FreshBindings(dict(param_of)).visit_seq(body)
        self.new_funcs.append(Function(name, FunctionType.InCore, tuple(params), tuple(dirs), ret_types,
                                       body, scope.level, optimizations=scope.optimizations,
                                       span=scope.span))
        if _is_task(scope):
            return pre + _submit(scope, name, args, ret_types, outputs, slot)
        rt = ret_types[0] if len(ret_types) == 1 else TupleType(ret_types)
        call = Call(GlobalVar(name), tuple(args), (), rt, scope.deps, span=scope.span)
        if not outputs:
            return pre + [EvalStmt(call, span=scope.span)]
        if len(outputs) == 1 and len(ret_values) == 1:
            return pre + [AssignStmt(outputs[0], call, span=scope.span)]
        res = Var(f"{name}_results", rt, span=scope.span)
        stmts = pre + [AssignStmt(res, call, span=scope.span)]
        for o in outputs:
            value = res if len(ret_values) == 1 else TupleGetItem(res, slot[o])
            stmts.append(AssignStmt(o, value, span=scope.span))
        return stmts


def _is_task(scope: ScopeStmt) -> bool:
    """Whether the region names its task (`as tid`) or sets task options: it becomes a pl.submit."""
    return scope.task_id is not None or bool(scope.attrs) or bool(scope.no_dep_args)


def _submit(scope: ScopeStmt, name: str, args: list[Expr], ret_types: tuple, outputs: list[Var],
            slot: dict[Var, int]) -> list[Stmt]:
    """`outs..., tid = pl.submit(self.<name>, *args, ...)` for a region with a TaskId or task
    options (SPEC §13): its `no_dep_args` become argument positions, `name_hint` /
    `allow_early_resolve` stay attributes, `deps` stay deps."""
    excluded = tuple(i for i, a in enumerate(args) if any(a is x for x in scope.no_dep_args))
    kwargs: tuple = (("submit", True),) + ((("no_dep_args", excluded),) if excluded else ()) + scope.attrs
    rt = submit_result_type(ret_types)
    call = Call(GlobalVar(name), tuple(args), kwargs, rt, scope.deps, span=scope.span)
    res = Var(f"{name}_task", rt, span=scope.span)
    stmts: list[Stmt] = [AssignStmt(res, call, span=scope.span)]
    stmts += [AssignStmt(o, TupleGetItem(res, slot[o]), span=scope.span) for o in outputs]
    if scope.task_id is not None:
        stmts.append(AssignStmt(scope.task_id, TupleGetItem(res, len(ret_types)), span=scope.span))
    return stmts


def _final_values(body: SeqStmts, targets: _AssembleTargets) -> dict[Var, Var]:
    """Outer tensor -> the last value defined at the top level of `body` that *is* it (after the
    in-place writes of `targets`): what the outlined function returns for that parameter."""
    final: dict[Var, Var] = {}
    for st in body.stmts:
        if isinstance(st, AssignStmt):
            defined: tuple[Var, ...] = (st.var,)
        else:
            defined = tuple(getattr(st, "return_vars", ()))
        for v in defined:
            r = targets.root.get(v)
            if r is not None:
                final[r] = v
    return final


def _create(t: TensorType, span) -> Call:  # type: ignore[no-untyped-def]
    shape = MakeTuple(tuple(t.shape))
    spec = get_op("tensor.create")
    attrs = {"dtype": t.dtype}
    return Call("tensor.create", (shape,), tuple(attrs.items()), spec.infer([shape], attrs), span=span)


class _ComputeOutsideScopes(IRVisitor):
    """Does a function compute (ops an Orchestration function may not run) outside `pl.at`, or
    call other functions?"""

    def __init__(self) -> None:
        self.compute = False
        self.calls = False

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar):
            self.calls = True
        elif not get_op(e.op).has_trait("orchestration"):
            self.compute = True
        super().visit_Call(e)

    def visit_ScopeStmt(self, s: ScopeStmt) -> None:
        if s.kind is not ScopeKind.InCore:
            super().visit_ScopeStmt(s)


class _InlineIncoreScopes(IRMutator):
    """Dissolves InCore scopes into their bodies, collecting their explicit deps."""

    def __init__(self) -> None:
        super().__init__()
        self.deps: list[Expr] = []

    def visit_ScopeStmt(self, s: ScopeStmt) -> Stmt:
        body = self.visit_seq(s.body)
        if s.kind is not ScopeKind.InCore:
            return replace(s, body=body)
        self.deps += [d for d in s.deps if not any(d is x for x in self.deps)]
        return body


def _scan(s: Stmt) -> _ComputeOutsideScopes:
    v = _ComputeOutsideScopes()
    v.visit_stmt(s)
    return v


def _implicit_scope(f: Function) -> Function:
    """An Opaque function computing at tensor level without `pl.at` (the Language Guide's plain
    `@pl.function` examples) runs its body as one InCore region: everything but the final return
    is wrapped in an implicit `pl.at(level=CORE_GROUP)`. In a function that also calls other
    functions the calls stay on the orchestration side, so each run of computing statements between
    them gets its own implicit region instead (`o[:] = helper(d)`: the copy into `o` is a kernel)."""
    if f.func_type is not FunctionType.Opaque:
        return f
    v = _scan(f.body)
    if not v.compute:
        return f
    if v.calls:
        body = _regions_between_calls(f.body)
        return replace(f, body=body) if body is not f.body else f
    dissolve = _InlineIncoreScopes()
    stmts = list(dissolve.visit_seq(f.body).stmts)  # one region: inner pl.at dissolve
    tail = [stmts.pop()] if stmts and isinstance(stmts[-1], ReturnStmt) else []
    # deps on values computed inside the region are ordered within its one task; deps on
    # parameters stay (an earlier task of the caller may write them)
    deps = tuple(d for d in dissolve.deps if isinstance(d, Var) and d in f.params)
    scope = ScopeStmt(ScopeKind.InCore, SeqStmts(tuple(stmts), span=f.body.span), Level.CORE_GROUP,
                      deps=deps, span=f.span)
    return replace(f, body=SeqStmts((scope, *tail), span=f.body.span))


def _regions_between_calls(body: SeqStmts) -> SeqStmts:
    """`body` with each maximal run of computing leaf statements (no function call, outside any
    `pl.at`) wrapped in an implicit `pl.at(level=CORE_GROUP)`; loops and ifs are entered."""
    out: list[Stmt] = []
    run: list[Stmt] = []

    def flush() -> None:
        if run:
            span = run[0].span
            out.append(ScopeStmt(ScopeKind.InCore, SeqStmts(tuple(run), span=span), Level.CORE_GROUP, span=span))
            run.clear()

    changed = False
    for st in body.stmts:
        if isinstance(st, ScopeStmt):
            flush()
            out.append(st)
            continue
        v = _scan(st)
        if v.compute and not v.calls and isinstance(st, (AssignStmt, EvalStmt)):
            run.append(st)
            changed = True
            continue
        flush()
        new = rebuild_children(st, _regions_between_calls) if v.compute else st
        changed |= new is not st
        out.append(new)
    flush()
    return replace(body, stmts=tuple(out)) if changed else body


class OutlineIncoreScopes(Pass):
    name = "OutlineIncoreScopes"

    def run(self, program: Program, ctx: PassContext) -> Program:
        taken = set(program.function_names)
        funcs: list[Function] = []
        changed = False
        for f in program.functions:
            if f.func_type not in _OUTLINED_FROM:
                funcs.append(f)
                continue
            f = _implicit_scope(f)
            o = _Outliner(f, taken)
            body = o.rewrite(f.body)
            if o.new_funcs:
                changed = True
                funcs.extend(o.new_funcs)
                funcs.append(replace(f, body=body))
            else:
                funcs.append(f)
        out = replace(program, functions=tuple(funcs)) if changed else program
        return outline_cluster_groups(out)   # pl.cluster(): the kernels it now calls form a Group


# Old private names, still imported by passes written before `rewrite.py` existed.
_FreshBindings, _is_dyn_dim, _uses_outside, _rebuild_children = (
    FreshBindings, is_dynamic_dim, uses_outside, rebuild_children)
