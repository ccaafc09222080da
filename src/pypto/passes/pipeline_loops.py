"""PipelineLoops: software pipelining of `pl.pipeline(..., stage=N)` loops (issue 14 item 2).

Runs after MemoryReuse (the body's buffers are planned as for one iteration) and before
AllocateMemoryAddr (which places, and checks the capacity of, every copy). A loop

    for i, (acc,) in pl.pipeline(lo, hi, st, stage=N, init_values=(x,)):
        body(i, acc)

becomes a loop over groups of N iterations whose body is N copies of `body`, copy k working on
iteration `i + k*st` with its own set of the body's *private* buffers (those of tiles bound in
the body that no other tile holds while the loop runs: not the carried buffers, not the buffer of a
value live across the loop; a buffer memory planning shares with a tile dead before the loop, or
born after it, is private), then a plain loop over the iterations left over (`(hi - lo) / st` not a multiple of N;
emitted whenever the bounds are not constants):

    for i, (acc,) in pl.range(lo, lo + (n // N) * N * st, N * st, init_values=(x,)):
        body(i, acc)              # buffers of set 0
        i_s1 = i + st
        body(i_s1, acc')          # buffers of set 1: the same ids, renumbered
        ...
    for i, (acc,) in pl.range(lo + (n // N) * N * st, hi, st, init_values=(acc_main,)):
        body(i, acc)              # set 0

So the loads of iteration i+1 go into buffers that the compute and store of iteration i do not
use, and the pipes overlap (ping-pong; `runtime.sim.pipes` orders ops by the buffers they touch,
as the flags of a real kernel do). The numbers are those of the loop as written: each copy is the
body on its own iteration, carried values flow from one copy to the next.

Capacity: the copies need `(N - 1) x` the private bytes on top of the kernel's placed buffers; when
a memory space would overflow, the largest depth that fits is used instead and hint PH009
(`PipelineStagesReduced`; upstream's PH-MR-001) is recorded (also when the body has no private
buffer at all, e.g. a `pl.pipeline` loop of an Orchestration function: it runs as a plain loop) in `ctx.records["perf_hints"]` (the driver writes it
to `report/perf_hints.log`). A depth of 1 leaves the loop as a plain `pl.range` loop. A pipelined
loop needs a positive constant step (CompileError otherwise).
"""

from __future__ import annotations

import operator
from collections import Counter
from dataclasses import replace

from ..core.diagnostics import Diagnostic
from ..core.dtype import INDEX
from ..core.enums import ForKind, FunctionType, MemorySpace
from ..core.errors import CompileError
from ..ir.expr import BinaryExpr, ConstInt, Expr, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, ForStmt, SeqStmts, Stmt, YieldStmt
from ..ir.types import MemRef, TileType
from ..ir.visitor import IRMutator, IRVisitor
from .analysis import defined_vars
from .base import FunctionPass, PassContext
from .liveness import numbered_statements, value_intervals
from .tile_layout import align_up

__all__ = ["PipelineLoops", "HINT_CODE"]

HINT_CODE = "PH009"
Key = tuple[MemorySpace, int]


def _key(v: Var) -> Key | None:
    t = v.type
    if isinstance(t, TileType) and t.memref is not None:
        return (t.memref.memory_space, t.memref.id)
    return None


class _Buffers(IRVisitor):
    """Every MemRef of a function by key, and how many binding sites each key has."""

    def __init__(self) -> None:
        self.memrefs: dict[Key, MemRef] = {}

    def visit_Var(self, e: Var) -> None:
        k = _key(e)
        if k is not None:
            self.memrefs.setdefault(k, e.type.memref)  # type: ignore[attr-defined]

    visit_IterArg = visit_Var


def _private_keys(func: Function, loop: ForStmt) -> set[Key]:
    """Buffers of tiles bound in the loop body that no other tile holds while the loop runs: not
    the carried buffers, not one that a value live across the loop is in (a buffer memory planning
    shares with a tile that is dead before the loop or born after it is private all the same)."""
    inside = defined_vars(loop.body)
    keys = {k for v in inside if (k := _key(v)) is not None}
    nums = [n for n in numbered_statements(func) if n.stmt is loop]
    head, end = min(n.number for n in nums), max(n.number for n in nums)
    for v, iv in value_intervals(func, lambda v: v).items():
        if v not in inside and iv.start <= end and head <= iv.end:
            keys.discard(_key(v))  # type: ignore[arg-type]
    return keys


class _FirstPipeline(IRVisitor):
    """The first `pl.pipeline` loop whose body holds no other one (innermost first)."""

    def __init__(self) -> None:
        self.found: ForStmt | None = None

    def visit_ForStmt(self, s: ForStmt) -> None:
        if self.found is None:
            super().visit_ForStmt(s)
            if self.found is None and s.kind is ForKind.Pipeline:
                self.found = s


class _Copy(IRMutator):
    """One copy of a loop body: every binding site gets a fresh Var named `<name><suffix>`, and
    tiles of the private buffers their copy's MemRef (`memrefs`)."""

    def __init__(self, seed: dict[Var, Expr], memrefs: dict[Key, MemRef], suffix: str) -> None:
        super().__init__(seed)
        self.memrefs = memrefs
        self.suffix = suffix

    def visit_binding(self, v: Var) -> Var:
        if v in self.var_map:
            return self.var_map[v]  # type: ignore[return-value]
        t = self.visit_type(v.type)
        k = _key(v)
        if k is not None and k in self.memrefs:
            t = replace(t, memref=self.memrefs[k])  # type: ignore[call-arg]
        nv = replace(v, name=v.name + self.suffix, var_type=t)
        self.var_map[v] = nv
        return nv


def _idx(v: int) -> ConstInt:
    return ConstInt(v, INDEX)


_FOLD = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "floordiv": operator.floordiv}


def _bin(op: str, a: Expr, b: Expr) -> Expr:
    """`a op b` on indices, folded when both are constants or `b` is the identity of `op`."""
    if isinstance(a, ConstInt) and isinstance(b, ConstInt) and op in _FOLD:
        return _idx(_FOLD[op](a.value, b.value))
    if isinstance(b, ConstInt) and b.value == {"add": 0, "sub": 0, "mul": 1, "floordiv": 1}.get(op):
        return a
    if op == "add" and isinstance(a, ConstInt) and a.value == 0:
        return b
    return BinaryExpr(op, a, b, INDEX)


def _bytes(memrefs: dict[Key, MemRef], ctx: PassContext) -> Counter[MemorySpace]:
    """Bytes of `memrefs` per memory space, each buffer aligned as AllocateMemoryAddr places it."""
    out: Counter[MemorySpace] = Counter()
    for (space, _), m in memrefs.items():
        out[space] += align_up(m.size, ctx.soc.alignment)
    return out


def _overflowing(depth: int, private: dict[Key, MemRef], placed: dict[Key, MemRef],
                 ctx: PassContext) -> list[tuple[MemorySpace, int, int, int]]:
    """(space, bytes planned, bytes per extra stage, bytes needed) of each memory space that `depth`
    copies of the private buffers overflow, by space name."""
    used, extra = _bytes(placed, ctx), _bytes(private, ctx)
    need = {s: used[s] + (depth - 1) * extra[s] for s in extra}
    return [(s, used[s], extra[s], need[s]) for s in sorted(extra, key=lambda s: s.name)
            if need[s] > ctx.soc.capacity_of(s)]


def _depth(loop: ForStmt, private: dict[Key, MemRef], placed: dict[Key, MemRef], ctx: PassContext) -> int:
    """The largest depth <= loop.stage whose copies fit every memory space."""
    depth = loop.stage
    while depth > 1 and _overflowing(depth, private, placed, ctx):
        depth -= 1
    return depth


def _hint(func: Function, loop: ForStmt, depth: int, private: dict[Key, MemRef], placed: dict[Key, MemRef],
          ctx: PassContext) -> Diagnostic:
    """PH009 for `loop`, naming only the memory spaces `loop.stage` copies overflow."""
    soc, n = ctx.soc, loop.stage
    parts = []
    for s, used, extra, need in _overflowing(n, private, placed, ctx):
        more = f"{extra} B for the extra stage" if n == 2 else f"{n - 1} x {extra} B for the extra stages"
        parts.append(f"{s.name}: {used} B planned + {more} = {need} B, over its {soc.capacity_of(s)} B")
    where = ", ".join(parts)
    got = "no software pipelining (a plain loop)" if depth < 2 else f"stage={depth}"
    return Diagnostic(HINT_CODE, func.name,
                      f"pl.pipeline(stage={n}) needs {n} copies of the loop body's buffers, "
                      f"which do not fit on {soc.backend.name} ({where}); using {got}: use smaller tiles to "
                      f"keep {n} stages", loop.span)


def _nothing_to_rotate(func: Function, loop: ForStmt) -> Diagnostic:
    """PH009 for a `stage >= 2` loop whose body binds no on-chip buffer of its own: an
    Orchestration function's loop (tasks, not tiles), or a body working only on carried tiles."""
    why = ("an Orchestration function's loop submits tasks and binds no on-chip buffers; put the "
           "pl.pipeline loop over blocks inside the InCore kernel" if func.func_type is FunctionType.Orchestration
           else "its body binds no on-chip tile of its own (only carried values or values live across "
                "the loop), so there is nothing to give copies")
    return Diagnostic(HINT_CODE, func.name,
                      f"pl.pipeline(stage={loop.stage}) has no buffers to rotate and runs as a plain loop: {why}",
                      loop.span)


def _expand(loop: ForStmt, depth: int, private: dict[Key, MemRef], next_id: int) -> list[Stmt]:
    """The main loop over groups of `depth` iterations, then the loop over the rest (module doc)."""
    step = loop.step
    lo, hi = loop.start, loop.stop
    assert isinstance(step, ConstInt)
    st = step.value
    trips = _bin("floordiv", _bin("add", _bin("sub", hi, lo), _idx(st - 1)), _idx(st))
    main_stop = _bin("add", lo, _bin("mul", _bin("floordiv", trips, _idx(depth)), _idx(depth * st)))
    if not isinstance(main_stop, ConstInt):
        main_stop = BinaryExpr("max", main_stop, lo, INDEX)   # no trip at all when hi <= lo
    rest = not (isinstance(trips, ConstInt) and trips.value % depth == 0)
    sets: list[dict[Key, MemRef]] = [{}]
    for _ in range(1, depth):
        sets.append({k: replace(m, id=next_id + i) for i, (k, m) in enumerate(sorted(private.items(),
                                                                                   key=lambda kv: (kv[0][0].name, kv[0][1])))})
        next_id += len(private)
    # main loop: its own loop var, iter args and (when a loop follows) return vars
    lv = replace(loop.loop_var, name=loop.loop_var.name)
    ias = [replace(ia, name=ia.name) for ia in loop.iter_args]
    carried: list[Expr] = list(ias)
    stmts: list[Stmt] = []
    for k in range(depth):
        if k == 0:
            i_k: Expr = lv
        else:
            i_k = Var(f"{loop.loop_var.name}_s{k}", loop.loop_var.type, span=loop.span)
            stmts.append(AssignStmt(i_k, _bin("add", lv, _idx(k * st)), span=loop.span))  # type: ignore[arg-type]
        seed: dict[Var, Expr] = {loop.loop_var: i_k, **dict(zip(loop.iter_args, carried))}
        body = _Copy(seed, sets[k], f"_s{k}" if k else "").visit_seq(loop.body)
        part = list(body.stmts)
        if loop.iter_args:
            y = part.pop()
            assert isinstance(y, YieldStmt)
            carried = list(y.values)
        stmts.extend(part)
    if loop.iter_args:
        stmts.append(YieldStmt(tuple(carried), span=loop.span))
    main_rvs = tuple(replace(rv, name=rv.name + "_main") for rv in loop.return_vars) if rest else loop.return_vars
    main = ForStmt(lv, lo, main_stop, _idx(depth * st), tuple(ias), SeqStmts(tuple(stmts), span=loop.body.span),
                   main_rvs, ForKind.Sequential, span=loop.span)
    if not rest:
        return [main]
    r_ias = tuple(replace(ia, name=ia.name + "_r", init=rv) for ia, rv in zip(loop.iter_args, main_rvs))
    r_lv = replace(loop.loop_var, name=loop.loop_var.name + "_r")
    r_body = _Copy({loop.loop_var: r_lv, **dict(zip(loop.iter_args, r_ias))}, {}, "_r").visit_seq(loop.body)
    tail = ForStmt(r_lv, main_stop, hi, step, r_ias, r_body, loop.return_vars, ForKind.Sequential, span=loop.span)
    return [main, tail]


class _Replace(IRMutator):
    def __init__(self, old: ForStmt, new: list[Stmt]) -> None:
        super().__init__()
        self.old, self.new = old, new

    def visit_SeqStmts(self, s: SeqStmts) -> Stmt:
        if any(st is self.old for st in s.stmts):
            out: list[Stmt] = []
            for st in s.stmts:
                out.extend(self.new if st is self.old else [st])
            return replace(s, stmts=tuple(out))
        return super().visit_SeqStmts(s)


class PipelineLoops(FunctionPass):
    """Give the buffers of each `pl.pipeline` loop body `stage` rotating copies (module docstring)."""

    name = "PipelineLoops"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        while True:
            f = _FirstPipeline()
            f.visit_stmt(func.body)
            loop = f.found
            if loop is None:
                return func
            func = _Replace(loop, self.pipeline(func, loop, ctx)).visit_function(func)

    def pipeline(self, func: Function, loop: ForStmt, ctx: PassContext) -> list[Stmt]:
        plain = [replace(loop, kind=ForKind.Sequential, stage=1)]
        if not (isinstance(loop.step, ConstInt) and loop.step.value > 0):
            raise CompileError("pl.pipeline needs a positive constant step (the copies of its body work on "
                               "iterations i, i + step, ...)", loop.span)
        b = _Buffers()
        b.visit_function(func)
        private = {k: b.memrefs[k] for k in _private_keys(func, loop)}
        if loop.stage < 2:
            return plain
        if not private:   # nothing to rotate: say so, the author asked for stages
            ctx.records.setdefault("perf_hints", []).append(_nothing_to_rotate(func, loop))
            return plain
        depth = _depth(loop, private, b.memrefs, ctx)
        if depth < loop.stage:
            ctx.records.setdefault("perf_hints", []).append(_hint(func, loop, depth, private, b.memrefs, ctx))
        if depth < 2:
            return plain
        next_id = 1 + max(i for _, i in b.memrefs)
        return _expand(loop, depth, private, next_id)
