"""FlattenTileNdTo2D: tile compute on tiles of rank > 2 runs on 2-D tiles (SPEC §5).

PTO tile instructions work on 2-D tiles (rows × cols). A tile of shape [d0, ..., dk-1, dk] is
computed as the 2-D tile [d0 * ... * dk-1, dk]: leading dimensions merge into rows, the innermost
stays the columns (so row-major element order — and DDR layout — is unchanged).

- An op that maps elements independently (trait "elementwise") on rank > 2 tiles, whose tile
  operands all have the result's shape — or its shape with innermost dimension 1, a row broadcast,
  or [1, ..., 1, n] when the result's leading dimensions are 1, a column broadcast — is rebuilt on
  the 2-D forms of its operands and produces a 2-D tile.
- A reduction ("reduction" trait) of a rank > 2 tile reduces its 2-D form when that gives the same
  values: a row (last-axis) reduction always ([a, b, n] → [a*b, 1], read back as [a, b, 1]), a
  column reduction when the leading dimensions are 1 ([1, m, n] → [1, n]); its scratch tile is
  taken in 2-D form too.
- A creation op ("creation" trait, with a `shape` parameter) of a rank > 2 tile creates it 2-D.
  A buffer created without contents (`tile.create`, an op without `compute`) is created where it
  is first used, in the form that use needs (2-D for 2-D compute, N-D otherwise — e.g. the scratch
  tile of a reduction left N-D); an unused one is dropped.
- Every other use of a flattened value — loads and stores (whose DDR region stays N-D), other ops,
  yields, returns — gets the N-D form back through `tile.reshape`; an N-D value entering 2-D compute
  is reshaped to 2-D. Both forms are made once per value and reused while in scope.

A reshape is free on the hardware (`pto.treshape`); InitMemRef lets a reshape share its source's
buffer when it is the source's only use. Tiles with a partial valid region (a TileView with
`valid_shape`) are left N-D, since reshaping would mix valid and padding elements.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.dtype import INDEX
from ..core.enums import FunctionType
from ..ir.expr import Call, ConstInt, Expr, MakeTuple, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, ReturnStmt, SeqStmts, Stmt, WhileStmt, YieldStmt
from ..ir.types import TileType, static_shape
from ..ir.visitor import IRMutator, IRVisitor
from ..ops import get_op
from .base import FunctionPass, PassContext
from .op_builder import build_call

__all__ = ["FlattenTileNdTo2D", "flat_shape"]

_KERNELS = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)


def flat_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """[d0, ..., dk] → [d0 * ... * dk-1, dk]."""
    rows = 1
    for d in shape[:-1]:
        rows *= d
    return rows, shape[-1]


def _nd_tile(e: Expr) -> bool:
    t = e.type
    return isinstance(t, TileType) and len(t.shape) > 2 and \
        all(isinstance(d, ConstInt) for d in t.shape) and (t.view is None or t.view.valid_shape is None)


def _dims(shape: tuple[int, ...]) -> MakeTuple:
    return MakeTuple(tuple(ConstInt(d, INDEX) for d in shape))


class _Flattener:
    def __init__(self) -> None:
        self.two_d: dict[Var, Expr] = {}   # value -> its 2-D form
        self.n_d: dict[Var, Expr] = {}     # value computed 2-D -> its N-D form, once made
        self.loaded_nd: set[Var] = set()   # values that exist N-D (their 2-D form is a reshape)
        self.no_data: dict[Var, tuple[Call, Call]] = {}  # buffer without contents -> (2-D, N-D) creation
        self.out: list[Stmt] = []

    def emit(self, name: str, call: Call) -> Var:
        v = Var(name, call.type, span=call.span)
        self.out.append(AssignStmt(v, call, span=call.span))
        return v

    def get_2d(self, e: Expr) -> Expr:
        if isinstance(e, Var) and e in self.two_d:
            return self.two_d[e]
        if isinstance(e, Var) and e in self.no_data:
            self.two_d[e] = self.emit(e.name, self.no_data[e][0])
            return self.two_d[e]
        src = self.get_nd(e)
        r = self.emit(f"{getattr(e, 'name', 't')}_2d", build_call(
            "tile.reshape", [src, _dims(flat_shape(static_shape(e.type)))], {}, e.span))
        if isinstance(e, Var):
            self.two_d[e] = r
            self.loaded_nd.add(e)
        return r

    def get_nd(self, e: Expr) -> Expr:
        if isinstance(e, Var) and e in self.no_data:
            if e not in self.n_d:
                self.n_d[e] = self.emit(e.name, self.no_data[e][1])
            return self.n_d[e]
        if not isinstance(e, Var) or e not in self.two_d or e in self.loaded_nd:
            return e
        if e not in self.n_d:
            self.n_d[e] = self.emit(e.name, build_call(
                "tile.reshape", [self.two_d[e], _dims(static_shape(e.type))], {}, e.span))
        return self.n_d[e]

    def uses(self, e: Expr) -> Expr:
        """`e` with every flattened value replaced by its N-D form."""
        class _Sub(IRMutator):
            def visit_Var(inner, v: Var) -> Expr:  # noqa: N805
                return self.get_nd(v)
        return _Sub().visit_expr(e)

    # ---- statements ----------------------------------------------------------------------------
    def block(self, s: SeqStmts) -> SeqStmts:
        saved = (self.out, dict(self.two_d), dict(self.n_d))
        self.out = []
        for st in s.stmts:
            self.stmt(st)
        res = SeqStmts(tuple(self.out), span=s.span)
        self.out, self.two_d, self.n_d = saved
        return res

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, AssignStmt) and isinstance(s.value, Call) and isinstance(s.value.op, str) \
                and self.flattenable(s.var, s.value):
            self.assign_2d(s.var, s.value)
        elif isinstance(s, (AssignStmt, EvalStmt, ReturnStmt, YieldStmt)):
            self.out.append(_rebuild(s, self.uses))
        elif isinstance(s, (ForStmt, WhileStmt)):
            ias = tuple(replace(ia, init=self.uses(ia.init)) if ia.init is not None else ia
                        for ia in s.iter_args)
            sub = IRMutator({a: b for a, b in zip(s.iter_args, ias) if a is not b})
            body = sub.visit_seq(self.block(s.body))
            if isinstance(s, ForStmt):
                self.out.append(replace(s, start=self.uses(s.start), stop=self.uses(s.stop),
                                        step=self.uses(s.step), iter_args=ias, body=body))
            else:
                self.out.append(replace(s, cond=sub.visit_expr(self.uses(s.cond)), iter_args=ias, body=body))
        elif isinstance(s, IfStmt):
            self.out.append(replace(s, cond=self.uses(s.cond), then_body=self.block(s.then_body),
                                    else_body=self.block(s.else_body) if s.else_body is not None else None))
        elif isinstance(s, SeqStmts):
            for x in s.stmts:
                self.stmt(x)
        else:
            self.out.append(_rebuild(s, self.uses))

    def flattenable(self, var: Var, call: Call) -> bool:
        if not _nd_tile(var):
            return False
        spec = get_op(call.op)  # type: ignore[arg-type]
        if spec.has_trait("creation"):
            return "shape" in spec.params
        out = static_shape(var.type)
        if spec.has_trait("reduction"):
            return _reduction_flattens(call, out)
        if not spec.has_trait("elementwise"):
            return False
        for a in call.args:
            if isinstance(a.type, TileType):
                if not _nd_tile(a):
                    return False
                if not _broadcast_flattens(static_shape(a.type), out):
                    return False
        return True

    def assign_2d(self, var: Var, call: Call) -> None:
        spec = get_op(call.op)  # type: ignore[arg-type]
        args = list(call.args)
        if spec.has_trait("creation"):
            args[spec.params.index("shape")] = _dims(flat_shape(static_shape(var.type)))
        else:
            args = [self.get_2d(a) if isinstance(a.type, TileType) else self.uses(a) for a in args]
        new = build_call(call.op, args, dict(call.kwargs), call.span)  # type: ignore[arg-type]
        if spec.compute is None:  # a buffer without contents: created where used, in the form used
            self.no_data[var] = (new, call)
            return
        self.two_d[var] = self.emit(var.name, new)


def _broadcast_flattens(src: tuple[int, ...], out: tuple[int, ...]) -> bool:
    """An operand of `src` shape of an op with result shape `out` keeps its meaning in 2-D form: the
    same shape, a row broadcast ([..., m, 1]), or a column broadcast ([1, .., 1, n]) when the leading
    dimensions are all 1."""
    if len(src) != len(out) or src[:-2] != out[:-2]:
        return False
    row = src[-2] == out[-2] and src[-1] in (out[-1], 1)
    col = src[-2] == 1 and src[-1] == out[-1] and all(d == 1 for d in out[:-2])
    return row or col


def _reduction_flattens(call: Call, out: tuple[int, ...]) -> bool:
    """A reduction whose tile operands (input and scratch) share one N-D shape computes the same
    values on their 2-D forms when it keeps the leading dimensions (it reduces the last axis: each
    row on its own) or they are all 1 (the 2-D tile is the whole input)."""
    shapes = {static_shape(a.type) for a in call.args if isinstance(a.type, TileType)}
    if len(shapes) != 1 or not all(_nd_tile(a) for a in call.args if isinstance(a.type, TileType)):
        return False
    (src,) = shapes
    return len(src) == len(out) and (src[:-1] == out[:-1] or all(d == 1 for d in src[:-2]))


def _rebuild(s: Stmt, fn) -> Stmt:  # type: ignore[no-untyped-def]
    class _Sub(IRMutator):
        def visit_expr(self, e: Expr) -> Expr:
            return fn(e)
    return _Sub().visit_stmt(s)


def _has_nd_tile(func: Function) -> bool:
    class _Find(IRVisitor):
        found = False

        def visit_Var(self, e: Var) -> None:
            self.found |= _nd_tile(e)

        visit_IterArg = visit_Var

    f = _Find()
    f.visit_stmt(func.body)
    return f.found


class FlattenTileNdTo2D(FunctionPass):
    """Compute tiles of rank > 2 as 2-D tiles (leading dimensions merged into rows)."""

    name = "FlattenTileNdTo2D"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        if func.func_type not in _KERNELS or not _has_nd_tile(func):
            return func
        f = _Flattener()
        body = f.block(func.body)
        return replace(func, body=body)
