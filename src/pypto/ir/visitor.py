"""Visitor and mutator bases over the IR (SPEC §4; DESIGN "IR is data").

`IRVisitor.visit_stmt/visit_expr` dispatch on the node class through a table built once per
subclass (`visit_<ClassName>` methods), defaulting to a traversal of the children.
`IRMutator` returns new nodes and returns the very same node when nothing changed below it, so
passes can detect fixed points cheaply (tinygrad's `replace()` rule). It also substitutes Vars
through `self.var_map` (a Var maps to any Expr).
"""

from __future__ import annotations

from operator import is_
from typing import Any

from .expr import (
    BinaryExpr,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    Expr,
    GlobalVar,
    IterArg,
    MakeTuple,
    TupleGetItem,
    UnaryExpr,
    Var,
)
from .function import Function, Program
from .replace import fast_replace as _replace
from .stmt import (
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
from .types import TensorType, TensorView, TileType, TileView, TupleType, Type

__all__ = ["IRVisitor", "IRMutator", "stmt_children"]

_LEAVES = (ConstInt, ConstFloat, ConstBool, GlobalVar, BreakStmt, ContinueStmt)


def _dispatch_table(cls: type) -> dict[type, Any]:
    table = {}
    for node_cls in (Var, IterArg, ConstInt, ConstFloat, ConstBool, BinaryExpr, UnaryExpr, Call,
                     GlobalVar, MakeTuple, TupleGetItem, AssignStmt, EvalStmt, ReturnStmt, SeqStmts,
                     IfStmt, ForStmt, WhileStmt, YieldStmt, BreakStmt, ContinueStmt, ScopeStmt):
        table[node_cls] = getattr(cls, f"visit_{node_cls.__name__}")
    return table


def stmt_children(s: Stmt) -> tuple[Stmt, ...]:
    """Direct child statements of a statement (bodies of control flow and scopes)."""
    if isinstance(s, SeqStmts):
        return s.stmts
    if isinstance(s, IfStmt):
        return (s.then_body,) if s.else_body is None else (s.then_body, s.else_body)
    if isinstance(s, (ForStmt, WhileStmt, ScopeStmt)):
        return (s.body,)
    return ()


def _base_leaves(cls: type, base: type) -> frozenset[type]:
    """The leaf classes (Vars, constants, GlobalVar) that `cls` handles exactly as `base` does,
    when `cls` keeps `base.visit_expr`: the traversal may then treat them inline, without a call.
    Empty when `cls` overrides `visit_expr` (it sees every expression)."""
    if cls.visit_expr is not base.visit_expr:  # type: ignore[attr-defined]
        return frozenset()
    table, ref = cls._table, base._table  # type: ignore[attr-defined]
    return frozenset(k for k in (Var, IterArg, ConstInt, ConstFloat, ConstBool, GlobalVar) if table[k] is ref[k])


class IRVisitor:
    """Read-only traversal. Override `visit_<NodeClass>`; call the base method to keep recursing."""

    _table: dict[type, Any] = {}
    # Leaf classes whose visit is the base no-op (see _base_leaves): the traversal skips them.
    _skip: frozenset[type] = frozenset()

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._table = _dispatch_table(cls)
        cls._skip = _base_leaves(cls, IRVisitor)

    def visit_program(self, p: Program) -> None:
        for f in p.functions:
            self.visit_function(f)

    def visit_function(self, f: Function) -> None:
        for v in f.params:
            self.visit_expr(v)
        self.visit_stmt(f.body)

    def visit_stmt(self, s: Stmt) -> None:
        self._table[type(s)](self, s)

    def visit_expr(self, e: Expr) -> None:
        self._table[type(e)](self, e)

    def visit_type(self, t: Type) -> None:
        if isinstance(t, (TensorType, TileType)):
            skip = self._skip
            for d in t.shape:
                if type(d) not in skip:
                    self.visit_expr(d)
            vs = getattr(t.view, "valid_shape", None) if t.view is not None else None
            for d in vs or ():
                if type(d) not in skip:
                    self.visit_expr(d)
        elif isinstance(t, TupleType):
            for x in t.types:
                self.visit_type(x)

    # expressions
    def visit_Var(self, e: Var) -> None:
        pass

    def visit_IterArg(self, e: IterArg) -> None:
        pass

    def visit_ConstInt(self, e: ConstInt) -> None:
        pass

    visit_ConstFloat = visit_ConstBool = visit_GlobalVar = visit_ConstInt

    def visit_BinaryExpr(self, e: BinaryExpr) -> None:
        skip = self._skip
        if type(e.lhs) not in skip:
            self.visit_expr(e.lhs)
        if type(e.rhs) not in skip:
            self.visit_expr(e.rhs)

    def visit_UnaryExpr(self, e: UnaryExpr) -> None:
        if type(e.operand) not in self._skip:
            self.visit_expr(e.operand)

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar):
            self.visit_expr(e.op)
        skip = self._skip
        for a in e.args:
            if type(a) not in skip:
                self.visit_expr(a)
        for d in e.deps:
            self.visit_expr(d)

    def visit_MakeTuple(self, e: MakeTuple) -> None:
        skip = self._skip
        for a in e.elements:
            if type(a) not in skip:
                self.visit_expr(a)

    def visit_TupleGetItem(self, e: TupleGetItem) -> None:
        self.visit_expr(e.tuple_value)

    # statements
    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.visit_expr(s.value)
        if type(s.var) not in self._skip:
            self.visit_expr(s.var)

    def visit_EvalStmt(self, s: EvalStmt) -> None:
        self.visit_expr(s.expr)

    def visit_ReturnStmt(self, s: ReturnStmt) -> None:
        skip = self._skip
        for v in s.values:
            if type(v) not in skip:
                self.visit_expr(v)

    visit_YieldStmt = visit_ReturnStmt

    def visit_SeqStmts(self, s: SeqStmts) -> None:
        for x in s.stmts:
            self.visit_stmt(x)

    def visit_IfStmt(self, s: IfStmt) -> None:
        self.visit_expr(s.cond)
        self.visit_stmt(s.then_body)
        if s.else_body is not None:
            self.visit_stmt(s.else_body)
        for v in s.return_vars:
            self.visit_expr(v)

    def visit_ForStmt(self, s: ForStmt) -> None:
        skip = self._skip
        for e in (s.start, s.stop, s.step):
            if type(e) not in skip:
                self.visit_expr(e)
        for ia in s.iter_args:
            if ia.init is not None:
                self.visit_expr(ia.init)
        self.visit_expr(s.loop_var)
        for ia in s.iter_args:
            self.visit_expr(ia)
        self.visit_stmt(s.body)
        for v in s.return_vars:
            self.visit_expr(v)

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        for ia in s.iter_args:
            if ia.init is not None:
                self.visit_expr(ia.init)
        for ia in s.iter_args:
            self.visit_expr(ia)
        self.visit_expr(s.cond)
        self.visit_stmt(s.body)
        for v in s.return_vars:
            self.visit_expr(v)

    def visit_BreakStmt(self, s: BreakStmt) -> None:
        pass

    visit_ContinueStmt = visit_BreakStmt

    def visit_ScopeStmt(self, s: ScopeStmt) -> None:
        for d in (*s.deps, *s.no_dep_args):
            self.visit_expr(d)
        if s.block_var is not None:
            self.visit_expr(s.block_var)
        self.visit_stmt(s.body)
        if s.task_id is not None:
            self.visit_expr(s.task_id)


def _get_op(name: str) -> Any:
    """`pypto.ops.get_op`, imported on first use (ops imports the IR)."""
    global _get_op
    from ..ops import get_op

    _get_op = get_op
    return get_op(name)


def _same(a: tuple, b: list) -> bool:
    return len(a) == len(b) and all(map(is_, a, b))


def _all_const(dims: tuple[Expr, ...]) -> bool:
    for d in dims:
        if type(d) is not ConstInt:
            return False
    return True


class IRMutator:
    """Rebuilding traversal. Override `visit_<NodeClass>` and return a node.

    `var_map` substitutes Vars (uses, not binding sites) by Exprs. Types are rewritten too, so a
    substituted dynamic dimension reaches shapes.
    """

    _table: dict[type, Any] = {}
    # True while ConstInt nodes map to themselves (visit_expr and visit_ConstInt not overridden):
    # a type whose dimensions are all constants is then returned as it is, without a walk.
    _keeps_consts = True
    # Leaf classes handled as the base does (see _base_leaves): constants and GlobalVars map to
    # themselves, Vars through `var_map`; the traversal does that inline.
    _leaves: frozenset[type] = frozenset()
    _const_leaves: frozenset[type] = frozenset()

    def __init__(self, var_map: dict[Var, Expr] | None = None) -> None:
        self.var_map: dict[Var, Expr] = dict(var_map or {})

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._table = _dispatch_table(cls)
        cls._leaves = _base_leaves(cls, IRMutator)
        cls._const_leaves = cls._leaves - {Var, IterArg}
        cls._keeps_consts = ConstInt in cls._leaves

    def _exprs(self, xs: tuple[Expr, ...]) -> list[Expr]:
        """`visit_expr` of each of `xs`, leaves (see `_leaves`) handled inline."""
        leaves, consts, vm = self._leaves, self._const_leaves, self.var_map
        return [x if (k := type(x)) in consts else vm.get(x, x) if k in leaves else self.visit_expr(x)
                for x in xs]

    def visit_program(self, p: Program) -> Program:
        funcs = [self.visit_function(f) for f in p.functions]
        return p if _same(p.functions, funcs) else _replace(p, functions=tuple(funcs))

    def visit_function(self, f: Function) -> Function:
        params = [self.visit_binding(v) for v in f.params]
        body = self.visit_stmt(f.body)
        rets = [self.visit_type(t) for t in f.return_types]
        if _same(f.params, params) and body is f.body and _same(f.return_types, rets):
            return f
        return _replace(f, params=tuple(params), body=body, return_types=tuple(rets))

    def visit_stmt(self, s: Stmt) -> Stmt:
        return self._table[type(s)](self, s)

    def visit_expr(self, e: Expr) -> Expr:
        return self._table[type(e)](self, e)

    def visit_seq(self, s: SeqStmts) -> SeqStmts:
        r = self.visit_stmt(s)
        return r if isinstance(r, SeqStmts) else SeqStmts((r,), span=r.span)

    # types
    def visit_type(self, t: Type) -> Type:
        if isinstance(t, (TensorType, TileType)):
            view = t.view
            if self._keeps_consts and _all_const(t.shape) and (
                    not isinstance(view, (TensorView, TileView)) or view.valid_shape is None
                    or _all_const(view.valid_shape)):
                return t  # constants map to themselves: nothing to rewrite
            shape = [self.visit_expr(d) for d in t.shape]
            if isinstance(view, (TensorView, TileView)) and view.valid_shape is not None:
                vs = [self.visit_expr(d) for d in view.valid_shape]
                if not _same(view.valid_shape, vs):
                    view = _replace(view, valid_shape=tuple(vs))
            if _same(t.shape, shape) and view is t.view:
                return t
            return _replace(t, shape=tuple(shape), view=view)
        if isinstance(t, TupleType):
            ts = [self.visit_type(x) for x in t.types]
            return t if _same(t.types, ts) else TupleType(tuple(ts))
        return t

    def visit_binding(self, v: Var) -> Var:
        """A Var at a binding site. By default re-typed when its type changes (and remembered)."""
        mapped = self.var_map.get(v)
        if isinstance(mapped, Var):
            return mapped
        t = self.visit_type(v.type)
        if t is v.type:
            return v
        nv = _replace(v, var_type=t)
        self.var_map[v] = nv
        return nv

    # expressions
    def visit_Var(self, e: Var) -> Expr:
        return self.var_map.get(e, e)

    visit_IterArg = visit_Var

    def visit_ConstInt(self, e: Expr) -> Expr:
        return e

    visit_ConstFloat = visit_ConstBool = visit_GlobalVar = visit_ConstInt

    def visit_BinaryExpr(self, e: BinaryExpr) -> Expr:
        lhs, rhs = self.visit_expr(e.lhs), self.visit_expr(e.rhs)
        return e if lhs is e.lhs and rhs is e.rhs else _replace(e, lhs=lhs, rhs=rhs)

    def visit_UnaryExpr(self, e: UnaryExpr) -> Expr:
        o = self.visit_expr(e.operand)
        return e if o is e.operand else _replace(e, operand=o)

    def visit_Call(self, e: Call) -> Expr:
        args = self._exprs(e.args)
        deps = self._exprs(e.deps) if e.deps else []
        if _same(e.args, args):
            rt = self.visit_type(e.result_type)
            if rt is e.result_type and _same(e.deps, deps):
                return e
            return _replace(e, result_type=rt, deps=tuple(deps))
        if isinstance(e.op, str):  # operands changed: re-run the op's type rule
            rt = _get_op(e.op).infer(args, dict(e.kwargs))
        else:
            rt = self.visit_type(e.result_type)
        return _replace(e, args=tuple(args), result_type=rt, deps=tuple(deps))

    def visit_MakeTuple(self, e: MakeTuple) -> Expr:
        els = self._exprs(e.elements)
        return e if _same(e.elements, els) else _replace(e, elements=tuple(els))

    def visit_TupleGetItem(self, e: TupleGetItem) -> Expr:
        t = self.visit_expr(e.tuple_value)
        return e if t is e.tuple_value else _replace(e, tuple_value=t)

    # statements
    def visit_AssignStmt(self, s: AssignStmt) -> Stmt:
        value = self.visit_expr(s.value)
        var = self.visit_binding(s.var)
        return s if value is s.value and var is s.var else _replace(s, var=var, value=value)

    def visit_EvalStmt(self, s: EvalStmt) -> Stmt:
        e = self.visit_expr(s.expr)
        return s if e is s.expr else _replace(s, expr=e)

    def visit_ReturnStmt(self, s: ReturnStmt) -> Stmt:
        vals = self._exprs(s.values)
        return s if _same(s.values, vals) else _replace(s, values=tuple(vals))

    visit_YieldStmt = visit_ReturnStmt

    def visit_SeqStmts(self, s: SeqStmts) -> Stmt:
        out: list[Stmt] = []
        changed = False
        for x in s.stmts:
            y = self.visit_stmt(x)
            changed |= y is not x
            if isinstance(y, SeqStmts) and not isinstance(x, SeqStmts):
                out.extend(y.stmts)  # a statement expanded into several
            else:
                out.append(y)
        return _replace(s, stmts=tuple(out)) if changed else s

    def visit_IfStmt(self, s: IfStmt) -> Stmt:
        cond = self.visit_expr(s.cond)
        then = self.visit_seq(s.then_body)
        els = self.visit_seq(s.else_body) if s.else_body is not None else None
        rvs = [self.visit_binding(v) for v in s.return_vars]
        if cond is s.cond and then is s.then_body and els is s.else_body and _same(s.return_vars, rvs):
            return s
        return _replace(s, cond=cond, then_body=then, else_body=els, return_vars=tuple(rvs))

    def _iter_args(self, ias: tuple[IterArg, ...]) -> list[IterArg]:
        out = []
        for ia in ias:
            init = self.visit_expr(ia.init) if ia.init is not None else None
            nb = self.visit_binding(ia)
            if init is not ia.init or nb is not ia:
                nia = _replace(nb, init=init)
                self.var_map[ia] = nia
                out.append(nia)
            else:
                out.append(ia)
        return out

    def visit_ForStmt(self, s: ForStmt) -> Stmt:
        start, stop, step = (self.visit_expr(e) for e in (s.start, s.stop, s.step))
        ias = self._iter_args(s.iter_args)
        lv = self.visit_binding(s.loop_var)
        body = self.visit_seq(s.body)
        rvs = [self.visit_binding(v) for v in s.return_vars]
        if (start is s.start and stop is s.stop and step is s.step and _same(s.iter_args, ias)
                and lv is s.loop_var and body is s.body and _same(s.return_vars, rvs)):
            return s
        return _replace(s, loop_var=lv, start=start, stop=stop, step=step, iter_args=tuple(ias),
                       body=body, return_vars=tuple(rvs))

    def visit_WhileStmt(self, s: WhileStmt) -> Stmt:
        ias = self._iter_args(s.iter_args)
        cond = self.visit_expr(s.cond)
        body = self.visit_seq(s.body)
        rvs = [self.visit_binding(v) for v in s.return_vars]
        if cond is s.cond and _same(s.iter_args, ias) and body is s.body and _same(s.return_vars, rvs):
            return s
        return _replace(s, cond=cond, iter_args=tuple(ias), body=body, return_vars=tuple(rvs))

    def visit_BreakStmt(self, s: Stmt) -> Stmt:
        return s

    visit_ContinueStmt = visit_BreakStmt

    def visit_ScopeStmt(self, s: ScopeStmt) -> Stmt:
        deps = [self.visit_expr(d) for d in s.deps]
        nda = [self.visit_expr(d) for d in s.no_dep_args]
        bv = self.visit_binding(s.block_var) if s.block_var is not None else None
        body = self.visit_seq(s.body)
        tid = self.visit_binding(s.task_id) if s.task_id is not None else None
        if body is s.body and _same(s.deps, deps) and _same(s.no_dep_args, nda) and bv is s.block_var \
                and tid is s.task_id:
            return s
        return _replace(s, body=body, deps=tuple(deps), no_dep_args=tuple(nda), block_var=bv, task_id=tid)




IRVisitor._table = _dispatch_table(IRVisitor)
IRVisitor._skip = _base_leaves(IRVisitor, IRVisitor)
IRMutator._table = _dispatch_table(IRMutator)
IRMutator._leaves = _base_leaves(IRMutator, IRMutator)
IRMutator._const_leaves = IRMutator._leaves - {Var, IterArg}
