"""Which boxes of its tensor arguments a kernel touches, known before it runs (SPEC §1: tasks are
ordered through overlapping buffers with a write).

A kernel outlined from `with pl.at(...)` inside a `pl.parallel` loop receives whole tensors plus
the loop index, and loads / stores at offsets computed from that index. Judged by its arguments,
every such task writes the whole output, so all of them would be chained by write-after-write
dependencies and run one after another. The hardware only sees the boxes actually moved, so the
simulator works them out *before* a task runs, from the kernel's IR and the task's scalar
arguments:

- every op that moves a DDR box declares it (`OpSpec.ddr_region` = (tensor argument, offsets
  argument, box-shape argument): `tile.load`, `tile.store`); the box shape is a list of constant
  sizes, or a tile whose static shape is the box;
- offsets are evaluated as integer *intervals* from the scalar arguments: constants, scalar
  parameters (their value in this task), scalar variables assigned once from such expressions,
  and for-loop variables (the interval from start to stop - 1, when the step is a positive
  constant), combined by `+ - * // min max` and negation;
- the region of a tensor argument is then the bounding box of all its boxes, clipped to the
  argument's shape.

Anything else makes the analysis give up *for that argument*, which then counts as touched
whole, as before: an offset built from a loop-carried scalar, a tensor value, a dynamic dimension
or any other expression; a tensor argument passed to an op that reads or writes it without a
declared box; a tensor value the walk cannot trace back to one parameter. The analysis can thus
only remove dependencies between tasks whose boxes cannot overlap, never one that may be needed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...ir.expr import BinaryExpr, Call, ConstInt, Expr, GlobalVar, MakeTuple, UnaryExpr, Var
from ...ir.function import Function
from ...ir.stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, ScopeStmt, SeqStmts, Stmt, WhileStmt, YieldStmt
from ...ir.types import ScalarType, TensorType, TileType
from ...ops.registry import get_op, has_op

__all__ = ["AccessSummary"]

Interval = tuple[int, int]
IntervalFn = Callable[[Sequence[Any]], Interval]
_Box = tuple[tuple[IntervalFn, ...], tuple[int, ...]]   # (offset intervals, sizes)
_WHOLE = None


def _const_ints(e: Expr) -> tuple[int, ...] | None:
    if isinstance(e, MakeTuple) and all(isinstance(x, ConstInt) for x in e.elements):
        return tuple(x.value for x in e.elements)  # type: ignore[attr-defined]
    t = e.type
    if isinstance(t, TileType) and all(isinstance(d, ConstInt) for d in t.shape):
        return tuple(d.value for d in t.shape)  # type: ignore[attr-defined]
    return None


def _mul(a: Interval, b: Interval) -> Interval:
    p = (a[0] * b[0], a[0] * b[1], a[1] * b[0], a[1] * b[1])
    return min(p), max(p)


def _floordiv(a: Interval, b: Interval) -> Interval:
    return a[0] // b[0], a[1] // b[0]


# IR operator -> interval function (floordiv only by a positive constant, checked at compile time)
_BINARY: dict[str, Callable[[Interval, Interval], Interval]] = {
    "add": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "sub": lambda a, b: (a[0] - b[1], a[1] - b[0]),
    "mul": _mul,
    "floordiv": _floordiv,
    "min": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    "max": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
}


class _Walker:
    """One pass over a kernel body collecting the boxes of each tensor parameter."""

    def __init__(self, func: Function) -> None:
        self.scalar_params = {p: i for i, p in enumerate(func.params) if isinstance(p.type, ScalarType)}
        self.owner: dict[Var, int] = {p: i for i, p in enumerate(func.params) if isinstance(p.type, TensorType)}
        self.boxes: dict[int, list[_Box] | None] = {i: [] for i in self.owner.values()}
        self.scalar_defs: dict[Var, Expr | None] = {}   # None: assigned more than once
        self.loops: dict[Var, ForStmt] = {}
        self.traced = True   # False once a tensor value cannot be traced to one parameter

    # ---- interval evaluation -------------------------------------------------------------------
    def interval(self, e: Expr, depth: int = 0) -> IntervalFn | None:
        if depth > 64:
            return None
        if isinstance(e, ConstInt):
            v = e.value
            return lambda args: (v, v)
        if isinstance(e, Var):
            return self._var_interval(e, depth)
        if isinstance(e, BinaryExpr):
            fn = _BINARY.get(e.op)
            if fn is None:
                return None
            if e.op == "floordiv" and not (isinstance(e.rhs, ConstInt) and e.rhs.value > 0):
                return None
            lhs, rhs = self.interval(e.lhs, depth + 1), self.interval(e.rhs, depth + 1)
            if lhs is None or rhs is None:
                return None
            return lambda args: fn(lhs(args), rhs(args))
        if isinstance(e, UnaryExpr) and e.op == "neg":
            x = self.interval(e.operand, depth + 1)
            if x is None:
                return None
            return lambda args: (-x(args)[1], -x(args)[0])
        return None

    def _var_interval(self, v: Var, depth: int) -> IntervalFn | None:
        k = self.scalar_params.get(v)
        if k is not None:
            def param(args: Sequence[Any]) -> Interval:
                x = args[k]
                if not isinstance(x, int) or isinstance(x, bool):
                    raise _GiveUp
                return x, x
            return param
        loop = self.loops.get(v)
        if loop is not None:
            if not (isinstance(loop.step, ConstInt) and loop.step.value > 0):
                return None
            start, stop = self.interval(loop.start, depth + 1), self.interval(loop.stop, depth + 1)
            if start is None or stop is None:
                return None
            return lambda args: (start(args)[0], max(start(args)[0], stop(args)[1] - 1))
        d = self.scalar_defs.get(v)
        return None if d is None else self.interval(d, depth + 1)

    # ---- the walk ------------------------------------------------------------------------------
    def block(self, s: Stmt | None) -> None:
        if s is None:
            return
        for x in (s.stmts if isinstance(s, SeqStmts) else (s,)):
            self.stmt(x)

    def stmt(self, s: Stmt) -> None:
        if isinstance(s, AssignStmt):
            if isinstance(s.var.type, ScalarType):
                self.scalar_defs[s.var] = None if s.var in self.scalar_defs else s.value
            owner = self.expr(s.value)
            if isinstance(s.var.type, TensorType):
                self.bind(s.var, owner)
        elif isinstance(s, (EvalStmt,)):
            self.expr(s.expr)
        elif isinstance(s, YieldStmt):
            for v in s.values:
                self.expr(v)
        elif isinstance(s, ForStmt):
            self.loops[s.loop_var] = s
            self.carry(s.iter_args, s.return_vars)
            self.block(s.body)
        elif isinstance(s, WhileStmt):
            self.expr(s.cond)
            self.carry(s.iter_args, s.return_vars)
            self.block(s.body)
        elif isinstance(s, IfStmt):
            self.expr(s.cond)
            self.block(s.then_body)
            self.block(s.else_body)
            for rv in s.return_vars:
                if isinstance(rv.type, TensorType):
                    self.bind(rv, self._yielded_owner(s, s.return_vars.index(rv)))
        elif isinstance(s, ScopeStmt):
            self.block(s.body)
        elif isinstance(s, SeqStmts):
            self.block(s)
        else:   # return / break / continue: read their values for untraceable tensors
            for v in getattr(s, "values", ()):
                self.expr(v)

    def _yielded_owner(self, s: IfStmt, i: int) -> int | None:
        owners = set()
        for body in (s.then_body, s.else_body):
            last = body.stmts[-1] if body is not None and body.stmts else None
            if not isinstance(last, YieldStmt) or i >= len(last.values):
                return None
            owners.add(self.owner_of(last.values[i]))
        return owners.pop() if len(owners) == 1 else None

    def carry(self, iter_args: Sequence[Var], return_vars: Sequence[Var]) -> None:
        for ia, rv in zip(iter_args, return_vars):
            if isinstance(ia.type, TensorType):
                owner = self.owner_of(ia.init) if getattr(ia, "init", None) is not None else None
                self.bind(ia, owner)
                self.bind(rv, owner)
            elif isinstance(ia.type, ScalarType):
                self.scalar_defs[ia] = None   # loop-carried: unknown value

    def bind(self, v: Var, owner: int | None) -> None:
        if owner is None:
            self.traced = False
        else:
            self.owner[v] = owner

    def owner_of(self, e: Expr | None) -> int | None:
        return self.owner.get(e) if isinstance(e, Var) else None

    def expr(self, e: Expr) -> int | None:
        """Record the accesses of `e`; return the parameter a tensor-valued `e` aliases."""
        if isinstance(e, Var):
            return self.owner.get(e)
        if not isinstance(e, Call):
            for x in getattr(e, "elements", ()):
                self.expr(x)
            return None
        for a in e.args:
            if not isinstance(a, Var):
                self.expr(a)
        if isinstance(e.op, GlobalVar) or not has_op(e.op):   # type: ignore[arg-type]
            for a in e.args:
                if self.owner_of(a) is not None:
                    self.boxes[self.owner_of(a)] = _WHOLE  # type: ignore[index]
            return None
        spec = get_op(e.op)  # type: ignore[arg-type]
        region = spec.ddr_region
        result: int | None = None
        for i, a in enumerate(e.args):
            p = self.owner_of(a)
            if p is None:
                continue
            touched = i in spec.reads or i in spec.writes
            if region is not None and i == region[0]:
                self.add_box(p, e, region)
            elif touched:
                self.boxes[p] = _WHOLE
            if i in spec.writes and isinstance(e.result_type, TensorType):
                result = p
        return result

    def add_box(self, p: int, call: Call, region: tuple[int, int, int]) -> None:
        boxes = self.boxes[p]
        if boxes is _WHOLE:
            return
        _, oi, si = region
        offs, sizes = call.args[oi], _const_ints(call.args[si])
        fns = [self.interval(o) for o in offs.elements] if isinstance(offs, MakeTuple) else None
        if sizes is None or fns is None or None in fns or len(fns) != len(sizes):
            self.boxes[p] = _WHOLE
            return
        boxes.append((tuple(fns), sizes))  # type: ignore[arg-type]


class _GiveUp(Exception):
    """A scalar argument was not an int: count the tensor as touched whole."""


class _NoArgs:
    """Arguments of no task: reading one means the box depends on the task."""

    def __getitem__(self, i: int) -> Any:
        raise _GiveUp


def _covers_static(boxes: list[_Box], t: TensorType) -> bool:
    """True when boxes that do not depend on the task cover every element of a static shape (the
    argument is then always touched whole: no need to evaluate anything per task)."""
    dims = [getattr(d, "value", None) for d in t.shape]
    if None in dims:
        return False
    try:
        for d, dim in enumerate(dims):
            lo = min(b[0][d](_NoArgs())[0] for b in boxes)
            hi = max(b[0][d](_NoArgs())[1] + b[1][d] for b in boxes)
            if lo > 0 or hi < dim:
                return False
    except (_GiveUp, IndexError):
        return False
    return True


class AccessSummary:
    """The boxes each tensor parameter of `func` is accessed at (module docstring).

    `region_arg(i, args)` is what the dependency tracker should treat as touched by tensor
    argument `i` of a task with arguments `args`: a view of `args[i]` covering the bounding box
    of its accesses, or `args[i]` itself when the analysis gave up or the box is all of it.
    """

    def __init__(self, func: Function) -> None:
        w = _Walker(func)
        w.block(func.body)
        self._boxes: dict[int, tuple[_Box, ...]] = {}
        if w.traced:
            self._boxes = {p: tuple(b) for p, b in w.boxes.items()
                           if b and not _covers_static(b, func.params[p].type)}

    @property
    def narrowed(self) -> frozenset[int]:
        """Indices of the tensor parameters with a known box."""
        return frozenset(self._boxes)

    def region_arg(self, i: int, args: Sequence[Any]) -> Any:
        a = args[i]
        boxes = self._boxes.get(i)
        if boxes is None or not isinstance(a, torch.Tensor):
            return a
        shape = a.shape
        try:
            lo = [None] * len(shape)
            hi = [None] * len(shape)
            for fns, sizes in boxes:
                if len(fns) != len(shape):
                    return a
                for d, (fn, n) in enumerate(zip(fns, sizes)):
                    x0, x1 = fn(args)
                    lo[d] = x0 if lo[d] is None else min(lo[d], x0)
                    hi[d] = x1 + n if hi[d] is None else max(hi[d], x1 + n)
        except _GiveUp:
            return a
        box = []
        for d, dim in enumerate(shape):
            s0, s1 = max(0, lo[d]), min(dim, hi[d])  # type: ignore[type-var]
            if s0 >= s1:
                return a   # out of bounds: the task fails when it runs; keep the whole argument
            box.append(slice(s0, s1))
        if all(s.start == 0 and s.stop == dim for s, dim in zip(box, shape)):
            return a
        return a[tuple(box)]
