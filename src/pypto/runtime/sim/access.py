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
  sizes, or a tile whose static shape is the box (a `valid_shape` only shrinks what is moved);
- offsets are evaluated as integer *intervals* from the scalar arguments: constants, scalar
  parameters (their value in this task), the dynamic dimensions of tensor parameters (the
  argument's size), scalar variables assigned once from such expressions, the block index and count of an SPMD
  task (`pl.get_block_idx()`, `pl.get_block_num()`), and for-loop variables
  (from start to the last value the loop reaches — `start + k * step`, when start and step are
  known — or else to stop; when the step is a nonzero constant or a scalar whose sign is known;
  a box inside a loop that runs no iteration in the task, such as the remainder loop of a
  `pl.pipeline` whose trip count divides evenly, is not moved at all),
  combined by `+ - * min max`, `//` and `%` by a divisor whose interval is positive in the task
  (a constant, `pl.get_block_num()`, a scalar argument), negation and integer casts.
  Every intermediate result must fit its dtype — the simulator wraps integers around like the
  hardware, and a wrapped value is not in the interval — or the argument counts as touched whole;
- the region of a tensor argument is then the bounding box of all its boxes, clipped to the
  argument's shape (an access outside the tensor still fails when the task runs).

Anything else makes the analysis give up *for that argument*, which then counts as touched
whole, as before: an offset built from a loop-carried scalar, a scalar variable assigned more
than once (the simulator runs non-SSA IR as written), a tensor value or any other
expression; a tensor argument passed to an op without a declared box (or inside a tuple, or to a
function call); a scalar argument that is not an int. Accesses through other tensor variables
count for the parameter the variable aliases — found flow-insensitively, as the one parameter
every value it is ever given comes from (assignments, store results, loop-carried values, `if`
results) — and the analysis gives up for *all* arguments when some tensor variable may alias two
parameters or none. It can thus only remove dependencies between tasks whose boxes cannot
overlap, never one that may be needed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from ...ir.expr import BinaryExpr, Call, ConstInt, Expr, GlobalVar, MakeTuple, TupleGetItem, UnaryExpr, Var
from ...ir.function import Function
from ...ir.stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, ScopeStmt, SeqStmts, Stmt, WhileStmt, YieldStmt
from ...ir.types import ScalarType, TensorType, TileType
from ...ops.registry import get_op, has_op

__all__ = ["AccessSummary", "StaticBoxes"]

Interval = tuple[int, int]
Memo = dict[int, Interval]
IntervalFn = Callable[[Sequence[Any], Memo], Interval]   # (task arguments, per-task memo)
_Box = tuple[tuple[IntervalFn, ...], tuple[int, ...]]   # (offset intervals, sizes)
_WHOLE = None
_MAX_NODES = 256   # expression nodes per offset before giving up (keeps the work per task small)


class _GiveUp(Exception):
    """Raised while evaluating a box for one task: the argument counts as touched whole."""


class _NoIteration(_GiveUp):
    """Raised while evaluating a box inside a loop that runs no iteration in this task (its
    variable has no value): the box is never moved. Where it is not caught, it is a _GiveUp."""


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


def _positive(b: Interval) -> None:
    if b[0] <= 0:
        raise _GiveUp   # a divisor that may be zero or negative in this task: not traced


def _floordiv(a: Interval, b: Interval) -> Interval:
    """a // b for a divisor interval of positive values: floor(a / b) is monotone in a and, for
    a fixed a, in b, so its extremes are at the corners."""
    _positive(b)
    q = (a[0] // b[0], a[0] // b[1], a[1] // b[0], a[1] // b[1])
    return min(q), max(q)


def _floormod(a: Interval, b: Interval) -> Interval:
    _positive(b)
    c = b[0]
    if b[0] == b[1] and a[0] // c == a[1] // c:      # one period of one divisor: exact
        return a[0] % c, a[1] % c
    if a[0] >= 0 and a[1] < c:                       # below every divisor: a itself
        return a
    return 0, b[1] - 1


#  IR operator  interval of the result (floordiv / floormod only by a positive divisor: a
#  constant, or a task-dependent value such as pl.get_block_num() whose interval is positive)
_BINARY: dict[str, Callable[[Interval, Interval], Interval]] = {
    "add": lambda a, b: (a[0] + b[0], a[1] + b[1]),
    "sub": lambda a, b: (a[0] - b[1], a[1] - b[0]),
    "mul": _mul,
    "floordiv": _floordiv,
    "floormod": _floormod,
    "min": lambda a, b: (min(a[0], b[0]), min(a[1], b[1])),
    "max": lambda a, b: (max(a[0], b[0]), max(a[1], b[1])),
}
_UNARY: dict[str, Callable[[Interval], Interval]] = {
    "neg": lambda a: (-a[1], -a[0]),
    "cast": lambda a: a,            # int -> int only; the range check catches a wrap
}


def _checked(fn: Callable[..., Interval], parts: tuple[IntervalFn, ...], rng: Interval) -> IntervalFn:
    lo_ok, hi_ok = rng

    def run(args: Sequence[Any], memo: Memo) -> Interval:
        r = fn(*[p(args, memo) for p in parts])
        if r[0] < lo_ok or r[1] > hi_ok:
            raise _GiveUp   # the simulator would wrap this value around
        return r
    return run


def _targeting_yields(body: SeqStmts | None) -> Iterator[YieldStmt]:
    """The yields of `body` that assign the loop's iter_args / the if's return vars: those not
    inside a nested loop or a nested `if` with return vars of its own (the simulator's rule)."""
    if body is None:
        return
    for s in body.stmts:
        if isinstance(s, YieldStmt):
            yield s
        elif isinstance(s, IfStmt) and not s.return_vars:
            yield from _targeting_yields(s.then_body)
            yield from _targeting_yields(s.else_body)
        elif isinstance(s, ScopeStmt):
            yield from _targeting_yields(s.body)
        elif isinstance(s, SeqStmts):
            yield from _targeting_yields(s)


class _Definitions:
    """One walk over a kernel: how often each Var is defined (parameters included), the value of
    each assignment, the loop of each loop variable, and every value each tensor variable is ever
    given (None: one of unknown origin) — assignments, a loop's initial and yielded values, the
    values a loop or an `if` returns."""

    def __init__(self, func: Function) -> None:
        self.count: Counter = Counter(func.params)
        self.values: dict[Var, Expr] = {}
        self.loops: dict[Var, ForStmt] = {}
        self.sources: dict[Var, list[Expr | None]] = {p: [p] for p in func.params
                                                       if isinstance(p.type, TensorType)}
        self.walk(func.body)

    def define(self, v: Var, value: Expr | None) -> None:
        self.count[v] += 1
        if isinstance(v.type, TensorType):
            self.sources.setdefault(v, []).append(value)

    def carried(self, targets: Sequence[Var], bodies: Sequence[SeqStmts | None]) -> None:
        for y in (y for b in bodies for y in _targeting_yields(b)):
            for k, v in enumerate(targets):
                if isinstance(v.type, TensorType):
                    self.sources[v].append(y.values[k] if k < len(y.values) else None)

    def walk(self, s: Stmt | None) -> None:
        if isinstance(s, SeqStmts):
            for x in s.stmts:
                self.walk(x)
        elif isinstance(s, AssignStmt):
            self.define(s.var, s.value)
            self.values[s.var] = s.value
        elif isinstance(s, (ForStmt, WhileStmt)):
            if isinstance(s, ForStmt):
                self.define(s.loop_var, None)
                self.loops[s.loop_var] = s
            for ia, rv in zip(s.iter_args, s.return_vars):
                self.define(ia, getattr(ia, "init", None))
                self.define(rv, ia)   # a loop returns its carried values (also after a break)
            self.carried(s.iter_args, [s.body])
            self.walk(s.body)
        elif isinstance(s, IfStmt):
            for v in s.return_vars:   # only the yields give it values
                self.count[v] += 1
                if isinstance(v.type, TensorType):
                    self.sources.setdefault(v, [])
            self.carried(s.return_vars, [s.then_body, s.else_body])
            self.walk(s.then_body)
            self.walk(s.else_body)
        elif isinstance(s, ScopeStmt):
            self.walk(s.body)


class _Intervals:
    """Interval functions of the scalar expressions of one kernel (module docstring)."""

    def __init__(self, func: Function, defs: _Definitions, blocks: bool = True) -> None:
        self.count, self.values, self.loops = defs.count, defs.values, defs.loops
        self.blocks = blocks    # the block index and count known (the task's), else not traced
        self.params = {p: i for i, p in enumerate(func.params) if isinstance(p.type, ScalarType)}
        self.dims: dict[Var, tuple[int, int]] = {}
        for i, p in enumerate(func.params):
            if isinstance(p.type, TensorType):
                for axis, d in enumerate(p.type.shape):
                    if isinstance(d, Var):
                        self.dims.setdefault(d, (i, axis))
        self._vars: dict[Var, IntervalFn | None] = {}
        self._nodes = 0

    def of(self, e: Expr) -> IntervalFn | None:
        """The interval function of offset `e`, or None when it cannot be traced."""
        self._nodes = 0
        return self._expr(e)

    def _expr(self, e: Expr) -> IntervalFn | None:
        self._nodes += 1
        if self._nodes > _MAX_NODES:
            return None
        if isinstance(e, ConstInt):
            v = e.value
            return (lambda args, memo: (v, v)) if isinstance(v, int) else None
        if isinstance(e, Var):
            if e not in self._vars:
                self._vars[e] = None   # a definition that refers to itself is not traced
                fn = self._var(e)
                self._vars[e] = None if fn is None else _memoized(fn)
            return self._vars[e]
        if isinstance(e, Call):
            return self._call(e)
        rng = e.dtype.int_range() if isinstance(e, (BinaryExpr, UnaryExpr)) else None
        if rng is None:
            return None
        if isinstance(e, BinaryExpr):
            fn = _BINARY.get(e.op)
            if fn is None:
                return None
            parts = (self._expr(e.lhs), self._expr(e.rhs))
        else:
            fn = _UNARY.get(e.op)   # type: ignore[assignment]
            operand_t = e.operand.type
            if fn is None or not (isinstance(operand_t, ScalarType) and operand_t.dtype.int_range()):
                return None
            parts = (self._expr(e.operand),)
        if None in parts:
            return None
        return _checked(fn, parts, rng)  # type: ignore[arg-type]

    def _call(self, e: Call) -> IntervalFn | None:
        """An operand-less op whose result lies in a declared range (`OpSpec.scalar_range`), or
        the block index / count (when `blocks`)."""
        if e.args or not isinstance(e.op, str) or not has_op(e.op):
            return None
        spec = get_op(e.op)
        rng = spec.scalar_range
        if rng is None and spec.has_trait("block") and self.blocks:
            # the launch's block index / count: known when the task's regions are computed (the
            # device computes them inside the task's block context, SPEC §13 SPMD)
            fn = spec.compute

            def block(args: Sequence[Any], memo: Memo) -> Interval:
                v = fn()
                return v, v
            return block
        if rng is None:
            return None
        lo, hi = rng
        return lambda args, memo: (lo, hi)

    def _var(self, v: Var) -> IntervalFn | None:
        if self.count[v] > 1:   # assigned more than once: its value is not one expression
            return None
        k = self.params.get(v)
        if k is not None:
            def param(args: Sequence[Any], memo: Memo) -> Interval:
                x = args[k]
                if not isinstance(x, int) or isinstance(x, bool):
                    raise _GiveUp
                return x, x
            return param
        dim = self.dims.get(v) if self.count[v] == 0 else None
        if dim is not None:
            i, axis = dim

            def size(args: Sequence[Any], memo: Memo) -> Interval:
                t = args[i]
                if not isinstance(t, torch.Tensor) or axis >= t.dim():
                    raise _GiveUp
                n = int(t.shape[axis])
                return n, n
            return size
        loop = self.loops.get(v)
        if loop is not None:
            return self._loop_var(loop)
        value = self.values.get(v)
        return None if value is None else self._expr(value)

    def _loop_var(self, loop: ForStmt) -> IntervalFn | None:
        start, stop, step = self._expr(loop.start), self._expr(loop.stop), self._expr(loop.step)
        if start is None or stop is None or step is None:
            return None

        def run(args: Sequence[Any], memo: Memo) -> Interval:
            b, e, st = start(args, memo), stop(args, memo), step(args, memo)
            if st[0] > 0:    # start, start + step, ... < stop
                if b[0] >= e[1]:
                    raise _NoIteration
                return b[0], max(b[0], _last(b, e[1] - 1, st))
            if st[1] < 0:    # start, start + step, ... > stop
                if b[1] <= e[0]:
                    raise _NoIteration
                return min(b[1], _last(b, e[0] + 1, st)), b[1]
            raise _GiveUp    # the step's sign depends on the task (or it is zero: the loop fails)
        return run


def _last(start: Interval, bound: int, step: Interval) -> int:
    """The last value a loop variable can take before passing `bound` (its stop - 1, or + 1 for a
    negative step): with a known start and step, the last multiple of the step from the start
    (`range(0, 512, 8)` ends at 504, so tasks at offsets 0, 512, ... touch disjoint boxes);
    otherwise the bound itself (safe: an upper bound of every value)."""
    if start[0] != start[1] or step[0] != step[1]:
        return bound
    b, s = start[0], step[0]
    if (bound - b) * s < 0:
        return b     # no iteration past the start (the caller keeps the start)
    return b + (bound - b) // s * s


def _memoized(fn: IntervalFn) -> IntervalFn:
    key = id(fn)

    def run(args: Sequence[Any], memo: Memo) -> Interval:
        r = memo.get(key)
        if r is None:
            r = memo[key] = fn(args, memo)
        return r
    return run


_TOP = -1   # a tensor variable that may alias more than one parameter, or something unknown


class _Owners:
    """The tensor parameter each tensor variable aliases, whatever the order the statements run
    in: the join over all the values it is given, solved to a fixed point (a variable given
    values from two parameters, or one of unknown origin, aliases `_TOP`)."""

    def __init__(self, func: Function, defs: _Definitions) -> None:
        params = {p: i for i, p in enumerate(func.params) if isinstance(p.type, TensorType)}
        self.owner: dict[Var, int] = dict(params)
        sources = defs.sources
        changed = True
        while changed:
            changed = False
            for v, exprs in sources.items():
                if v in params and len(exprs) == 1:
                    continue
                got = {self.of(e) for e in exprs}
                got.discard(None)   # not known yet
                new = got.pop() if len(got) == 1 else (_TOP if got else None)
                if new is not None and self.owner.get(v) != new:
                    self.owner[v] = new
                    changed = True
        # traced: every tensor variable aliases exactly one parameter
        self.traced = all(self.owner.get(v, _TOP) != _TOP for v in sources)

    def of(self, e: Expr | None) -> int | None:
        """The parameter a tensor-valued `e` aliases (`_TOP` when unknown, None while a variable
        has no known value yet)."""
        if isinstance(e, Var):
            return self.owner.get(e)
        if isinstance(e, Call) and isinstance(e.op, str) and has_op(e.op) and isinstance(e.result_type, TensorType):
            spec = get_op(e.op)
            written = [self.of(e.args[i]) for i in spec.writes if i < len(e.args)
                       and isinstance(e.args[i].type, TensorType)]
            known = set(written) - {None}
            if written and not known:
                return None
            if len(known) == 1:
                return known.pop()   # an op that writes a tensor in place returns it
        return _TOP


class _Walker:
    """Collects the boxes of each tensor parameter from every op call of a kernel body."""

    def __init__(self, func: Function) -> None:
        defs = _Definitions(func)
        self.iv = _Intervals(func, defs)
        self.owners = _Owners(func, defs)
        self.boxes: dict[int, list[_Box] | None] = {i: [] for i, p in enumerate(func.params)
                                                    if isinstance(p.type, TensorType)}
        self.traced = self.owners.traced   # False also once an operand tensor has no known origin

    def stmt(self, s: Stmt | None) -> None:
        if s is None:
            return
        if isinstance(s, SeqStmts):
            for x in s.stmts:
                self.stmt(x)
        elif isinstance(s, AssignStmt):
            self.expr(s.value)
        elif isinstance(s, EvalStmt):
            self.expr(s.expr)
        elif isinstance(s, ForStmt):
            for e in (s.start, s.stop, s.step):
                self.expr(e)
            self.stmt(s.body)
        elif isinstance(s, WhileStmt):
            self.expr(s.cond)
            self.stmt(s.body)
        elif isinstance(s, IfStmt):
            self.expr(s.cond)
            self.stmt(s.then_body)
            self.stmt(s.else_body)
        elif isinstance(s, ScopeStmt):
            self.stmt(s.body)
        else:   # yield / return / break / continue
            for v in getattr(s, "values", ()):
                self.expr(v)

    def expr(self, e: Expr) -> None:
        """Record the accesses of every op call in `e`."""
        if isinstance(e, (MakeTuple, TupleGetItem)):
            for x in (e.elements if isinstance(e, MakeTuple) else (e.tuple_value,)):
                self.whole(x)   # a tensor inside a tuple may be touched anywhere
                self.expr(x)
        elif isinstance(e, Call):
            for a in e.args:
                self.expr(a)
            self.call(e)

    def call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar) or not has_op(e.op):   # type: ignore[arg-type]
            for a in e.args:
                self.whole(a)
            return
        spec = get_op(e.op)  # type: ignore[arg-type]
        region = spec.ddr_region
        for i, a in enumerate(e.args):
            if region is not None and i == region[0]:
                self.add_box(a, e, region)
            elif i in spec.reads or i in spec.writes or not isinstance(e.result_type, ScalarType):
                self.whole(a)   # touched without a box, or a non-scalar result that may view it

    def param(self, a: Expr) -> int | None:
        if not isinstance(a.type, TensorType):
            return None
        p = self.owners.of(a)
        if p is None or p == _TOP:
            self.traced = False
            return None
        return p

    def whole(self, a: Expr) -> None:
        p = self.param(a)
        if p is not None:
            self.boxes[p] = _WHOLE

    def add_box(self, a: Expr, call: Call, region: tuple[int, int, int]) -> None:
        p = self.param(a)
        if p is None or self.boxes[p] is _WHOLE:
            return
        _, oi, si = region
        offs, sizes = call.args[oi], _const_ints(call.args[si])
        fns = [self.iv.of(o) for o in offs.elements] if isinstance(offs, MakeTuple) else None
        if sizes is None or fns is None or None in fns or len(fns) != len(sizes):
            self.boxes[p] = _WHOLE
            return
        self.boxes[p].append((tuple(fns), sizes))  # type: ignore[union-attr]


class _NoArgs:
    """Arguments of no task: reading one means the box depends on the task."""

    def __getitem__(self, i: int) -> Any:
        raise _GiveUp


def _covers_static(boxes: list[_Box], t: TensorType) -> bool:
    """True when the boxes that do not depend on the task already cover every element of a static
    shape (the argument is then always touched whole: no need to evaluate anything per task)."""
    dims = [getattr(d, "value", None) for d in t.shape]
    if None in dims:
        return False
    fixed = []
    for fns, sizes in boxes:
        try:
            fixed.append(([fn(_NoArgs(), {}) for fn in fns], sizes))
        except _GiveUp:
            continue
    for d, dim in enumerate(dims):
        ivs = [(iv[d], sizes[d]) for iv, sizes in fixed if len(iv) == len(dims)]
        if not ivs or min(x[0] for x, _ in ivs) > 0 or max(x[1] + n for x, n in ivs) < dim:
            return False
    return True


class StaticBoxes:
    """Whether the DDR box an op of kernel `func` moves lies inside its tensor for every task: its
    offsets' intervals (module docstring) depend on no task argument (nor on the block index or
    count of an SPMD launch), its sizes are constants, and the tensor's declared shape is static
    and holds the box at every offset. Loop variables count
    over every value their loop gives them (`pl.range(128, 1024, 128)`: 128 to 896), so a K-loop
    loading `[0, k]` of a `[128, 1024]` tensor is proven inside. A batch of such a kernel cannot
    fail on a box (`batch.BatchKernel.may_fail`)."""

    def __init__(self, func: Function) -> None:
        # (not the block index and count: evaluated here, they would be those of no launch)
        self._iv = _Intervals(func, _Definitions(func), blocks=False)

    def inside(self, call: Call) -> bool:
        """True when the box of `call` (an op with `OpSpec.ddr_region`) is inside its tensor for
        every task (class docstring); False when that is not known."""
        ti, oi, si = get_op(call.op).ddr_region  # type: ignore[arg-type, misc]
        dims = [getattr(d, "value", None) for d in getattr(call.args[ti].type, "shape", (None,))]
        offs, sizes = call.args[oi], _const_ints(call.args[si])
        if None in dims or sizes is None or not isinstance(offs, MakeTuple) or \
                not len(dims) == len(sizes) == len(offs.elements):
            return False
        try:
            for o, n, d in zip(offs.elements, sizes, dims):
                fn = self._iv.of(o)
                if fn is None:
                    return False
                lo, hi = fn(_NoArgs(), {})
                if lo < 0 or hi + n > d:
                    return False
        except _GiveUp:
            return False
        return True


class AccessSummary:
    """The boxes each tensor parameter of `func` is accessed at (module docstring).

    `region_arg(i, args)` is what the dependency tracker should treat as touched by tensor
    argument `i` of a task with arguments `args`: a view of `args[i]` covering the bounding box
    of its accesses, or `args[i]` itself when the analysis gave up or the box is all of it.
    """

    def __init__(self, func: Function) -> None:
        self._nparams = len(func.params)
        w = _Walker(func)
        w.stmt(func.body)
        self._boxes: dict[int, tuple[_Box, ...]] = {}
        # every box of every tensor parameter, when all are known (`in_bounds`)
        self._every: dict[int, tuple[_Box, ...]] | None = None
        if w.traced:
            self._boxes = {p: tuple(b) for p, b in w.boxes.items()
                           if b and not _covers_static(b, func.params[p].type)}
            if all(b is not _WHOLE for b in w.boxes.values()):
                self._every = {p: tuple(b) for p, b in w.boxes.items() if b}

    def in_bounds(self, args: Sequence[Any]) -> bool:
        """True when every DDR box the kernel moves for a task with `args` lies inside its tensor
        argument (each load and store of the kernel is summarised, and each box's interval, loops
        included, is inside the argument's shape): such a task cannot fail on a box. False when
        that is not known."""
        every = self._every
        if every is None or len(args) != self._nparams:
            return False
        memo: Memo = {}
        try:
            for p, boxes in every.items():
                a = args[p]
                if not isinstance(a, torch.Tensor):
                    return False
                shape = a.shape
                for fns, sizes in boxes:
                    if len(fns) != len(shape):
                        return False
                    try:
                        ivs = [fn(args, memo) for fn in fns]
                    except _NoIteration:
                        continue     # inside a loop this task does not enter
                    for (lo, hi), n, d in zip(ivs, sizes, shape):
                        if lo < 0 or hi + n > d:
                            return False
        except _GiveUp:
            return False
        return True

    @property
    def narrowed(self) -> frozenset[int]:
        """Indices of the tensor parameters with a known box."""
        return frozenset(self._boxes)

    def region_arg(self, i: int, args: Sequence[Any]) -> Any:
        """Argument `i` of a task with `args`, narrowed to the bounding box of its accesses (a
        view of it), or the argument itself (see the class docstring)."""
        a = args[i]
        boxes = self._boxes.get(i)
        if boxes is None or not isinstance(a, torch.Tensor) or len(args) != self._nparams:
            return a
        shape = a.shape
        memo: Memo = {}
        try:
            lo = [None] * len(shape)
            hi = [None] * len(shape)
            for fns, sizes in boxes:
                if len(fns) != len(shape):
                    return a
                try:
                    ivs = [fn(args, memo) for fn in fns]
                except _NoIteration:
                    continue     # inside a loop this task does not enter: never moved
                for d, ((x0, x1), n) in enumerate(zip(ivs, sizes)):
                    lo[d] = x0 if lo[d] is None else min(lo[d], x0)
                    hi[d] = x1 + n if hi[d] is None else max(hi[d], x1 + n)
        except _GiveUp:
            return a
        if lo[0] is None:
            return a   # no box is moved in this task (kept whole, as before: never narrower than needed)
        sizes = []
        offset, whole = a.storage_offset(), True
        for d, (dim, stride) in enumerate(zip(shape, a.stride())):
            s0, s1 = max(0, lo[d]), min(dim, hi[d])  # type: ignore[type-var]
            if s0 >= s1:
                return a   # out of bounds: the task fails when it runs; keep the whole argument
            sizes.append(s1 - s0)
            offset += s0 * stride
            whole = whole and s0 == 0 and s1 == dim
        if whole:
            return a
        return a.as_strided(sizes, a.stride(), offset)   # the view a[s0:s1, ...] without indexing
