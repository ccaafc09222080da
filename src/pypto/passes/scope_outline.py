"""Outlining `pl.at(level=...)` scopes above the core level into functions of that level.

Shared by OutlineHierarchyScopes (CHIP_DIE, CHIP, HOST) and OutlineClusterScopes (CLUSTER_0..2,
GLOBAL); InCore scopes (AIV, AIC, CORE_GROUP: level 0) are OutlineIncoreScopes' business, which
also outlines `pl.cluster()` scopes here, into Group functions `f_group_<k>` (same rules, the
function type Group instead of a level's Orchestration function).

A scope `with pl.at(level=L): body` in function `f` becomes the k-th function `f_<l>_<k>` (`<l>`
the level's name in lower case) of type Orchestration, level L, role Orchestrator — the code that
runs at that level of the machine and dispatches the work below it:
- its parameters are the values the body reads from outside, the caller's parameters first (in
  their order), then others in first-use order; tensor parameters get the direction the body
  implies (`derive_call_directions.derived_direction`: Out if written without reading the incoming
  contents, InOut if both, In otherwise);
- it returns the values the body defines that are used after the scope (tensors or scalars), and
  the scope is replaced by the call, binding those values (through a tuple when there are several);
- nested scopes of the same family are outlined first, innermost out, so the outer function calls
  the inner one. Scopes of other levels inside the body stay where they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..core.enums import FunctionType, Level, ParamDirection, Role, ScopeKind
from ..ir.expr import Call, GlobalVar, TupleGetItem, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, EvalStmt, ReturnStmt, ScopeStmt, SeqStmts, Stmt
from ..ir.types import TensorType, TupleType
from .analysis import defined_vars, used_vars
from .derive_call_directions import derived_direction
from .rewrite import FreshBindings as _FreshBindings
from .rewrite import is_dynamic_dim as _is_dyn_dim
from .rewrite import rebuild_children as _rebuild_children
from .rewrite import uses_outside as _uses_outside
from .tensor_access import TensorAccess

__all__ = ["outline_level_scopes"]

_KERNELS = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)


class _Outliner:
    def __init__(self, func: Function, program: Program, taken: set[str],
                 wanted: Callable[[ScopeStmt], bool]) -> None:
        self.func, self.program, self.taken, self.wanted = func, program, taken, wanted
        self.count: dict[str, int] = {}
        self.new_funcs: list[Function] = []

    def fresh_name(self, suffix: str) -> str:
        stem = f"{self.func.name}_{suffix}"
        while True:
            k = self.count.get(stem, 0)
            self.count[stem] = k + 1
            if f"{stem}_{k}" not in self.taken:
                self.taken.add(f"{stem}_{k}")
                return f"{stem}_{k}"

    def block(self, s: SeqStmts) -> SeqStmts:
        out: list[Stmt] = []
        for st in s.stmts:
            if isinstance(st, ScopeStmt) and self.wanted(st):
                out.extend(self.outline(st, self.block(st.body)))
            else:
                out.append(_rebuild_children(st, self.block))
        return s if all(a is b for a, b in zip(out, s.stmts)) and len(out) == len(s.stmts) \
            else replace(s, stmts=tuple(out))

    def outline(self, scope: ScopeStmt, body: SeqStmts) -> list[Stmt]:
        level = scope.level
        group = scope.kind is ScopeKind.Cluster
        inner = defined_vars(body)
        after = _uses_outside(self.func.body, scope)
        order = {p: i for i, p in enumerate(self.func.params)}
        inputs = [v for v in used_vars(body) if v not in inner and not _is_dyn_dim(v, self.func)]
        inputs.sort(key=lambda v: order.get(v, len(order)))
        outputs = [v for v in inner if v in after]
        param_of = {v: Var(v.name, v.type, span=v.span) for v in inputs}
        stmts = body.stmts + (ReturnStmt(tuple(outputs), span=scope.span),)
        new_body = _FreshBindings(dict(param_of)).visit_seq(SeqStmts(stmts, span=scope.span))
        params = tuple(param_of[v] for v in inputs)
        name = self.fresh_name("group" if group else level.name.lower())  # type: ignore[union-attr]
        ret_types = tuple(v.type for v in outputs)
        if group:  # pl.cluster(): its kernels run together on one cluster (SPEC §13)
            fn = Function(name, FunctionType.Group, params, (ParamDirection.In,) * len(params), ret_types,
                          new_body, span=scope.span)
        else:
            fn = Function(name, FunctionType.Orchestration, params, (ParamDirection.In,) * len(params),
                          ret_types, new_body, level, Role.Orchestrator, span=scope.span)
        fn = replace(fn, param_directions=self.directions(fn))
        self.new_funcs.append(fn)
        rt = ret_types[0] if len(ret_types) == 1 else TupleType(ret_types)
        call = Call(GlobalVar(name), tuple(inputs), (), rt, scope.deps, span=scope.span)  # deps stay
        if not outputs:
            return [EvalStmt(call, span=scope.span)]
        if len(outputs) == 1:
            return [AssignStmt(outputs[0], call, span=scope.span)]
        tup = Var(f"{name}_results", rt, span=scope.span)
        return [AssignStmt(tup, call, span=scope.span)] + [
            AssignStmt(o, TupleGetItem(tup, i), span=scope.span) for i, o in enumerate(outputs)]

    def directions(self, fn: Function) -> tuple[ParamDirection, ...]:
        known = {f.name: f.param_directions for f in (*self.program.functions, *self.new_funcs)}
        acc = TensorAccess(known.get)
        acc.visit_function(fn)
        return tuple(derived_direction(acc, p) if isinstance(p.type, TensorType) else ParamDirection.In
                     for p in fn.params)


def outline_level_scopes(program: Program, wanted: Callable[[Level], bool]) -> Program:
    """`program` with every InCore-kind scope whose level satisfies `wanted` outlined (module doc).
    Returns `program` itself when there is none."""
    return _outline(program, lambda s: s.kind is ScopeKind.InCore and s.level is not None and wanted(s.level))


def outline_cluster_groups(program: Program) -> Program:
    """`program` with every `pl.cluster()` scope (kind Cluster) outlined into a Group function
    `<f>_group_<k>` whose body calls the kernels the scope called (module doc); the scope becomes
    the call of that Group function, which runs as one unit on a cube core and its two vector cores
    (SPEC §13). Returns `program` itself when there is none."""
    return _outline(program, lambda s: s.kind is ScopeKind.Cluster)


def _outline(program: Program, wanted: Callable[[ScopeStmt], bool]) -> Program:
    taken = set(program.function_names)
    funcs: list[Function] = []
    changed = False
    current = program
    for f in program.functions:
        if f.func_type in _KERNELS:
            funcs.append(f)
            continue
        o = _Outliner(f, current, taken, wanted)
        body = o.block(f.body)
        if o.new_funcs:
            changed = True
            funcs.extend(o.new_funcs)
            funcs.append(replace(f, body=body))
            current = replace(current, functions=(*current.functions, *o.new_funcs))
        else:
            funcs.append(f)
    return replace(program, functions=tuple(funcs)) if changed else program
