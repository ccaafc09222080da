"""LowerCollectives: a kernel's collectives become signal and remote-memory primitives (SPEC §8).

Runs right after InlineFunctions, on pre-SSA IR, so everything it produces — loops, re-assigned
accumulators, tile ops — is lowered by the rest of the pipeline like hand-written code. Each
`pld.<collective>(...)` statement in a kernel (an InCore/AIV function, or a `pl.at` region of an
Orchestration function) is replaced by code built from `pld.get_comm_ctx`, `pld.rank`,
`pld.nranks`, `pld.system.notify`, `pld.system.wait`, `pld.tile.remote_load` and tile ops
(`tile.load`, `tile.store`, `tile.reshape`, `tile.read`, the reductions `tile.add` / `tile.maximum` /
`tile.minimum` / `tile.mul`). Host-level collectives (HOST functions) are left to
the host compiler; a collective directly in a chip Orchestration function is a CompileError.

**Rank count.** The number of ranks `nr` is read at run time with `pld.nranks(ctx)`: loops over
peers and ring steps have dynamic bounds, so one compiled kernel serves every world size. Data is
chunked at compile time (the tensors' shapes are static): tiles of at most a Vec budget, remainder
tiles for shapes that do not divide. The budget is 1/`CHUNK_FRACTION` of the core's Vec capacity,
or 1/`LONE_CHUNK_FRACTION` in a kernel that is nothing but its collective(s) (the builtin program of
a host-level collective): no tile of the kernel's own competes for Vec there, and the two live tiles
of a chunk (accumulator and incoming part) fit with room to spare. Fewer, larger tiles cost fewer
per-op issue cycles and link latencies in simulated time, and fewer interpreted ops in wall time.

**Signals are self-clearing.** A *rendezvous* step g (the k-th of the call) does: every rank adds
+1 to its own cell `[me, 0]` in every peer's signal, then waits until each of its own cells
`[p, 0]` (p ≠ me) is >= g. At the end of the call each rank adds −g to its own cells `[p, 0]`,
which then hold exactly what the peers sent for this call (a peer that already started the next
call only adds to it), so the signal is zero again after every call — in loops too.

**Mesh** (signal `[NR, 1]`): allreduce = rendezvous (everyone's `src` is ready); then chunk j is
*owned* by rank j mod NR: for each chunk it owns a rank reads that chunk of every rank
(`remote_load`, rank 0 first, so the result is what every rank would compute) and reduces it into
its own window — no peer reads an owned chunk of another rank in this phase, so the store races with
nothing; rendezvous (every chunk is final at its owner); each rank copies every chunk it does not
own from the owner's window; rendezvous (nobody reads this window any more: the caller may overwrite
it). Three steps whatever the size (a rendezvous per chunk cost one process wake-up each); each
rank reads 2(NR−1)/NR × size bytes. No scratch buffer is needed (a one-shot mesh, where every rank
reduces every chunk, would need one the size of `src` to hold the result until no peer reads it).

**Ring** (signal `[2(NR-1), NR]`): the data is cut into at least `RING_MIN_TILES` tiles (when it
is that large; still at most the Vec budget each), dealt to NR segments (tile j to segment j mod NR);
in step t = 0 .. 2(NR-1)-1 rank r takes segment (r-1-t) mod NR from its predecessor: added to its
own copy in the first NR-1 steps (reduce-scatter), copied over it in the last NR-1 (allgather).
Before step t it waits for cell `[t, prev]` (the predecessor finished step t-1, or entered the call
for t = 0), after it notifies `[t+1, me]` at its successor. When done it tells its predecessor it has
stopped reading (cell `[0, me]` there) and waits for the same from its successor, then clears the
cells it received (`[t, prev]` for every t, `[0, next]`). The chain of notifications orders every
overwrite after the last read of the old value. With one rank nothing happens.

**Other collectives** (signal `[NR, 1]`, two rendezvous: before, so every rank's data is ready,
and after, so no rank leaves — and lets its caller overwrite its window — while a peer still reads
it). Every rank only *pulls* (`remote_load`) and writes its own window with `tile.store`, so a
collective's effects are local writes of its target, like any kernel's:
barrier = one rendezvous; broadcast = non-root ranks read root's `target`; allgather = `local` copied
into the own row `me` of `target`, then row s read from rank s; reduce_scatter = row `me` of every
rank read and reduced into the own row `me`; all_to_all = row `me` of rank s's `input` read into row
s of `target`; all_to_all_v = the same for the first `recv_counts[s]` elements (full tiles in a
loop, the remainder in power-of-two pieces).

Errors (CompileError at the collective's line): a collective in chip orchestration code, a
kernel-level allreduce without a signal, a collective nested inside another expression; and at the
call, a kernel with a collective launched inside `pl.spmd` (its blocks would each take part).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from ..core.dtype import INDEX
from ..core.enums import FunctionType, Level, MemorySpace, ReduceOp, ScopeKind, WaitCmp
from ..core.errors import CompileError
from ..ir.expr import Call, ConstInt, Expr, GlobalVar, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, EvalStmt, ReturnStmt, ScopeStmt, SeqStmts, Stmt
from ..ir.types import TensorType
from ..ir.visitor import IRMutator, IRVisitor
from ..ops import get_op
from .base import FunctionPass, PassContext
from .collective_builder import ALIGN_BYTES, StmtBuilder, for_each_chunk, for_each_chunk_of, plan_chunks

__all__ = ["LowerCollectives", "CHUNK_FRACTION", "LONE_CHUNK_FRACTION", "REDUCE_TILE_OP", "RING_MIN_TILES", "is_collective"]

CHUNK_FRACTION = 8   # a chunk tile uses at most 1/8 of Vec: two live tiles plus the kernel's own
LONE_CHUNK_FRACTION = 3   # a kernel that is nothing but its collective(s): two live tiles and slack
RING_MIN_TILES = 8   # ring: at least this many tiles (when the data allows), dealt to the NR segments
REDUCE_TILE_OP = {ReduceOp.Sum: "tile.add", ReduceOp.Max: "tile.maximum", ReduceOp.Min: "tile.minimum",
                  ReduceOp.Prod: "tile.mul"}
_SHORT = {"allreduce": "ar", "barrier": "bar", "broadcast": "bc", "allgather": "ag",
          "reduce_scatter": "rs", "all_to_all": "a2a", "all_to_all_v": "a2av"}


def is_collective(call: Expr) -> bool:
    """True for a call of a `pld.*` collective (OpSpec trait "collective")."""
    return isinstance(call, Call) and isinstance(call.op, str) and call.op.startswith("pld.") and \
        get_op(call.op).has_trait("collective")


@dataclass
class _Lowering:
    """One collective call being lowered: the builder, the call's operands by name, the chunk budget."""

    b: StmtBuilder
    call: Call
    args: dict[str, Var]
    budget: int

    def attr(self, name: str) -> object:
        return self.call.attr(name)


class _Ranks:
    """This rank, the rank count and the mesh rendezvous of one collective call (module docstring)."""

    def __init__(self, lw: _Lowering, signal: Var, steps: bool = True) -> None:
        b = self.b = lw.b
        self.signal = signal
        ctx = b.var("ctx", b.call("pld.get_comm_ctx", signal))
        self.me = b.var("me", b.index(b.call("pld.rank", ctx)))
        self.nr = b.var("nr", b.index(b.call("pld.nranks", ctx)))
        if steps:   # the rendezvous counter (the ring counts its steps itself)
            self.step = b.var("step", ConstInt(0, INDEX))

    @contextmanager
    def peers(self, name: str) -> Iterator[Expr]:
        """A loop over the other ranks, me+1, me+2, ... (mod nr)."""
        b = self.b
        with b.loop(f"{name}_i", 1, self.nr) as i:
            yield b.var(name, b.bin("floormod", b.add(self.me, i), self.nr))

    @contextmanager
    def all_ranks(self, name: str) -> Iterator[Expr]:
        with self.b.loop(name, 0, self.nr) as p:
            yield p

    def rendezvous(self) -> None:
        b = self.b
        b.assign(self.step, b.add(self.step, 1))
        with self.peers("to") as p:
            b.do("pld.system.notify", self.signal, p, [self.me, 0], 1)
        with self.peers("from") as p:
            b.do("pld.system.wait", self.signal, [p, 0], self.step, cmp=WaitCmp.Ge)

    def clear(self) -> None:
        b = self.b
        with self.peers("own") as p:
            b.do("pld.system.notify", self.signal, self.me, [p, 0], b.bin("sub", 0, self.step))


def _reduce(lw: _Lowering, acc: Var, part: Expr) -> None:
    op = lw.attr("op")
    part_v = lw.b.var("part", part)
    lw.b.assign(acc, lw.b.call(REDUCE_TILE_OP[op], acc, part_v))  # type: ignore[index]


def _shape(v: Var) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(d.value for d in t.shape)  # type: ignore[attr-defined]  (static: the type rules check)


def _row_shape(v: Var) -> tuple[int, ...]:
    t = v.type
    assert isinstance(t, TensorType)
    return tuple(d.value for d in t.shape[1:])  # type: ignore[attr-defined]


def _dtype(v: Var):  # type: ignore[no-untyped-def]
    return v.type.dtype  # type: ignore[attr-defined]


# ---- the collectives ------------------------------------------------------------------------------
def _allreduce(lw: _Lowering) -> None:
    if "signal" not in lw.args:
        raise CompileError("pld.allreduce in a kernel needs a signal: a window-bound "
                           "pld.DistributedTensor of INT32 cells, shape [NR, 1] for mode=\"mesh\" or "
                           "[2*(NR-1), NR] for mode=\"ring\" (only a host-level allreduce allocates its own)",
                           lw.call.span)
    (_ring if lw.attr("mode") == "ring" else _mesh)(lw)


def _mesh(lw: _Lowering) -> None:
    b, src = lw.b, lw.args["src"]
    r = _Ranks(lw, lw.args["signal"])
    groups = plan_chunks(_shape(src), _dtype(src), lw.budget)
    r.rendezvous()                                   # every rank's src is ready

    def reduce_own(off: tuple[Expr, ...], shape: tuple[int, ...], j: Expr) -> None:
        acc = b.var("acc", b.call("pld.tile.remote_load", src, 0, list(off), list(shape)))
        with b.loop("q", 1, r.nr) as q:
            _reduce(lw, acc, b.call("pld.tile.remote_load", src, q, list(off), list(shape)))
        b.write(src, "tile.store", acc, list(off), src)

    def gather(off: tuple[Expr, ...], shape: tuple[int, ...], j: Expr) -> None:
        owner = b.var("owner", b.bin("floormod", j, r.nr))
        with b.if_(b.bin("ne", owner, r.me)):
            part = b.var("part", b.call("pld.tile.remote_load", src, owner, list(off), list(shape)))
            b.write(src, "tile.store", part, list(off), src)

    for_each_chunk_of(b, groups, r.me, r.nr, reduce_own)   # the chunks this rank owns
    r.rendezvous()                                   # every chunk is reduced at its owner
    for_each_chunk(b, groups, gather)
    r.rendezvous()                                   # nobody reads this rank's window any more
    r.clear()


def _ring(lw: _Lowering) -> None:
    b, src, sig = lw.b, lw.args["src"], lw.args["signal"]
    r = _Ranks(lw, sig, steps=False)
    me, nr = r.me, r.nr
    total = _dtype(src).get_bit() // 8
    for d in _shape(src):
        total *= d
    groups = plan_chunks(_shape(src), _dtype(src), min(lw.budget, max(ALIGN_BYTES, total // RING_MIN_TILES)))
    nsteps = b.bin("sub", b.mul(nr, 2), 2)
    with b.if_(b.bin("gt", nr, 1)):
        prev = b.var("prev", b.bin("floormod", b.add(me, b.bin("sub", nr, 1)), nr))
        nxt = b.var("next", b.bin("floormod", b.add(me, 1), nr))
        b.do("pld.system.notify", sig, nxt, [0, me], 1)
        with b.loop("t", 0, nsteps) as t:
            b.do("pld.system.wait", sig, [t, prev], 1, cmp=WaitCmp.Ge)
            seg = b.var("seg", b.bin("floormod", b.bin("sub", b.add(me, b.bin("sub", b.mul(nr, 2), 1)), t), nr))
            for scatter in (True, False):
                cond = b.bin("lt", t, b.bin("sub", nr, 1)) if scatter else b.bin("ge", t, b.bin("sub", nr, 1))
                with b.if_(cond):
                    for_each_chunk_of(b, groups, seg, nr, _ring_chunk(lw, prev, scatter))
            with b.if_(b.bin("lt", b.add(t, 1), nsteps)):
                b.do("pld.system.notify", sig, nxt, [b.add(t, 1), me], 1)
        b.do("pld.system.notify", sig, prev, [0, me], 1)
        # with two ranks prev == next: cell [0, next] also holds next's entry notification
        b.do("pld.system.wait", sig, [0, nxt], b.add(1, b.bin("max", 0, b.bin("sub", 3, nr))), cmp=WaitCmp.Ge)
        with b.loop("c", 0, nsteps) as c:
            b.do("pld.system.notify", sig, me, [c, prev], -1)
        b.do("pld.system.notify", sig, me, [0, nxt], -1)


def _ring_chunk(lw: _Lowering, prev: Expr,
                scatter: bool) -> Callable[[tuple[Expr, ...], tuple[int, ...], Expr], None]:
    b, src = lw.b, lw.args["src"]

    def chunk(off: tuple[Expr, ...], shape: tuple[int, ...], j: Expr) -> None:
        if scatter:
            mine = b.var("mine", b.call("tile.load", src, list(off), list(shape)))
            _reduce(lw, mine, b.call("pld.tile.remote_load", src, prev, list(off), list(shape)))
            b.write(src, "tile.store", mine, list(off), src)
        else:
            part = b.var("part", b.call("pld.tile.remote_load", src, prev, list(off), list(shape)))
            b.write(src, "tile.store", part, list(off), src)

    return chunk


def _barrier(lw: _Lowering) -> None:
    r = _Ranks(lw, lw.args["signal"])
    r.rendezvous()
    r.clear()


def _broadcast(lw: _Lowering) -> None:
    b, target, root = lw.b, lw.args["target"], lw.attr("root")
    r = _Ranks(lw, lw.args["signal"])
    r.rendezvous()

    def chunk(off: tuple[Expr, ...], shape: tuple[int, ...], _: Expr) -> None:
        t = b.var("part", b.call("pld.tile.remote_load", target, root, list(off), list(shape)))
        b.write(target, "tile.store", t, list(off), target)

    with b.if_(b.bin("ne", r.me, root)):
        for_each_chunk(b, plan_chunks(_shape(target), _dtype(target), lw.budget), chunk)
    r.rendezvous()
    r.clear()


def _allgather(lw: _Lowering) -> None:
    b, local, target = lw.b, lw.args["local"], lw.args["target"]
    r = _Ranks(lw, lw.args["signal"])
    groups = plan_chunks(_shape(local), _dtype(local), lw.budget)

    def own(off: tuple[Expr, ...], shape: tuple[int, ...], _: Expr) -> None:
        t = b.var("part", b.call("tile.load", local, list(off), list(shape)))
        row = b.var("row", b.call("tile.reshape", t, [1, *shape]))
        b.write(target, "tile.store", row, [r.me, *off], target)

    for_each_chunk(b, groups, own)     # row `me` first: it is what the peers read
    r.rendezvous()
    with r.peers("src") as p:
        def pull(off: tuple[Expr, ...], shape: tuple[int, ...], _: Expr) -> None:
            t = b.var("row", b.call("pld.tile.remote_load", target, p, [p, *off], [1, *shape]))
            b.write(target, "tile.store", t, [p, *off], target)

        for_each_chunk(b, groups, pull)
    r.rendezvous()
    r.clear()


def _reduce_scatter(lw: _Lowering) -> None:
    b, target = lw.b, lw.args["target"]
    r = _Ranks(lw, lw.args["signal"])
    r.rendezvous()

    def chunk(off: tuple[Expr, ...], shape: tuple[int, ...], _: Expr) -> None:
        where, size = [r.me, *off], [1, *shape]
        acc = b.var("acc", b.call("pld.tile.remote_load", target, 0, where, size))
        with b.loop("q", 1, r.nr) as q:
            _reduce(lw, acc, b.call("pld.tile.remote_load", target, q, where, size))
        b.write(target, "tile.store", acc, where, target)

    for_each_chunk(b, plan_chunks(_row_shape(target), _dtype(target), lw.budget), chunk)
    r.rendezvous()
    r.clear()


def _all_to_all(lw: _Lowering) -> None:
    b, inp, target = lw.b, lw.args["input"], lw.args["target"]
    r = _Ranks(lw, lw.args["signal"])
    r.rendezvous()
    groups = plan_chunks(_row_shape(target), _dtype(target), lw.budget)
    with r.all_ranks("src") as p:
        def chunk(off: tuple[Expr, ...], shape: tuple[int, ...], _: Expr) -> None:
            t = b.var("row", b.call("pld.tile.remote_load", inp, p, [r.me, *off], [1, *shape]))
            b.write(target, "tile.store", t, [p, *off], target)

        for_each_chunk(b, groups, chunk)
    r.rendezvous()
    r.clear()


def _all_to_all_v(lw: _Lowering) -> None:
    b, inp, target, counts = lw.b, lw.args["input"], lw.args["target"], lw.args["recv_counts"]
    r = _Ranks(lw, lw.args["signal"])
    r.rendezvous()
    width = plan_chunks((1, _row_shape(target)[0]), _dtype(target), lw.budget)[0].tile[-1]
    with r.all_ranks("src") as p:
        cell = b.var("count_tile", b.call("tile.load", counts, [p], [1]))
        n = b.var("count", b.index(b.call("tile.read", cell, [0])))

        def piece(off: Expr, w: int) -> None:
            t = b.var("row", b.call("pld.tile.remote_load", inp, p, [r.me, off], [1, w]))
            b.write(target, "tile.store", t, [p, off], target)

        with b.loop("k", 0, b.bin("floordiv", n, width)) as k:
            piece(b.mul(k, width), width)
        off = b.var("off", b.mul(b.bin("floordiv", n, width), width))
        w = 1
        while w * 2 < width:
            w *= 2
        while w >= 1:   # the remainder n % width < width, in power-of-two pieces, largest first
            with b.if_(b.bin("eq", b.bin("floormod", b.bin("floordiv", b.bin("sub", n, off), w), 2), 1)):
                piece(off, w)
                b.assign(off, b.add(off, w))
            w //= 2
    r.rendezvous()
    r.clear()


_LOWER: dict[str, Callable[[_Lowering], None]] = {
    "pld.allreduce": _allreduce, "pld.barrier": _barrier, "pld.broadcast": _broadcast,
    "pld.allgather": _allgather, "pld.reduce_scatter": _reduce_scatter, "pld.all_to_all": _all_to_all,
    "pld.all_to_all_v": _all_to_all_v,
}


class _Lower(IRMutator):
    def __init__(self, func: Function, ctx: PassContext) -> None:
        super().__init__()
        self.func = func
        share = LONE_CHUNK_FRACTION if _only_collectives(func) else CHUNK_FRACTION
        self.budget = ctx.soc.capacity_of(MemorySpace.Vec) // share
        self.in_kernel_scope = 0
        self.count = 0

    def visit_ScopeStmt(self, s: ScopeStmt) -> Stmt:
        self.in_kernel_scope += 1
        try:
            return super().visit_ScopeStmt(s)
        finally:
            self.in_kernel_scope -= 1

    def visit_EvalStmt(self, s: EvalStmt) -> Stmt:
        if is_collective(s.expr):
            return self.lower(s.expr, None)  # type: ignore[arg-type]
        return super().visit_EvalStmt(s)

    def visit_AssignStmt(self, s: AssignStmt) -> Stmt:
        if is_collective(s.value):
            return self.lower(s.value, s.var)  # type: ignore[arg-type]
        return super().visit_AssignStmt(s)

    def visit_Call(self, e: Call) -> Expr:
        if is_collective(e):   # statements are lowered above; this one sits inside an expression
            raise CompileError(f"'{e.op}' must be called as a statement of its own (`{e.op}(...)` or "
                               f"`y = {e.op}(...)`), not inside another expression", e.span)
        return super().visit_Call(e)

    def lower(self, call: Call, result: Var | None) -> Stmt:
        if self.func.func_type is FunctionType.Orchestration and not self.in_kernel_scope:
            raise CompileError(f"'{call.op}' in chip orchestration function '{self.func.name}': a collective "
                               f"moves data between the ranks' windows, which kernels do; call it inside a "
                               f"kernel (an InCore function or a pl.at region) or from the host orchestrator",
                               call.span)
        spec = get_op(call.op)  # type: ignore[arg-type]
        short = _SHORT[spec.short_name]
        b = StmtBuilder(call.span, f"{short}{self.count}")
        self.count += 1
        args: dict[str, Var] = {}
        for name, a in zip(spec.params, call.args):
            a = self.visit_expr(a)
            args[name] = a if isinstance(a, Var) else b.var(name, a)
        _LOWER[call.op](_Lowering(b, call, args, self.budget))  # type: ignore[index]
        if result is not None:
            target = args.get("src", args.get("target"))
            if target is not None and result is not target:
                b.assign(result, target)
        return b.result()


def _only_collectives(func: Function) -> bool:
    """True for a kernel whose body is nothing but collective statements and its return: no tile of
    its own competes with the chunks for Vec (the builtin program of a host-level collective)."""
    if func.func_type is FunctionType.Orchestration:
        return False
    body = func.body.stmts if isinstance(func.body, SeqStmts) else (func.body,)
    seen = False
    for s in body:
        if isinstance(s, ReturnStmt):
            continue
        expr = s.expr if isinstance(s, EvalStmt) else s.value if isinstance(s, AssignStmt) else None
        if expr is None or not is_collective(expr):
            return False
        seen = True
    return seen


class _Collectives(IRVisitor):
    """Finds the first collective call of a function."""

    def __init__(self) -> None:
        self.found: Call | None = None

    def visit_Call(self, e: Call) -> None:
        if self.found is None and is_collective(e):
            self.found = e
        super().visit_Call(e)


class _SpmdLaunches(IRVisitor):
    """Refuses a call, inside `pl.spmd`, of a function that calls a collective: every block would
    run the collective, and one rank's blocks would count as several ranks in the signal."""

    def __init__(self, with_collective: dict[str, Call]) -> None:
        self.with_collective = with_collective
        self.spmd = 0

    def visit_ScopeStmt(self, s: ScopeStmt) -> None:
        self.spmd += s.kind is ScopeKind.Spmd
        super().visit_ScopeStmt(s)
        self.spmd -= s.kind is ScopeKind.Spmd

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar) and e.op.name in self.with_collective and self.spmd:
            inner = self.with_collective[e.op.name]
            raise CompileError(f"'{e.op.name}' calls '{inner.op}', but this pl.spmd launch runs it on several "
                               f"cores: a collective must run once per rank (every block would take part in "
                               f"it, as if it were another rank); call the kernel outside pl.spmd", e.span)
        super().visit_Call(e)


class LowerCollectives(FunctionPass):
    """Rewrite each kernel-level `pld.*` collective into notify/wait/remote_load and tile
    ops, chunked to fit Vec (see the module docstring for the algorithms and the signal protocol)."""

    name = "LowerCollectives"

    def run(self, program: Program, ctx: PassContext) -> Program:
        found: dict[str, Call] = {}
        for f in program.functions:
            v = _Collectives()
            v.visit_stmt(f.body)
            if v.found is not None:
                found[f.name] = v.found
        if not found:
            return program
        for f in program.functions:
            _SpmdLaunches(found).visit_stmt(f.body)
        return super().run(program, ctx)

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        if func.level is Level.HOST:
            return func
        return _Lower(func, ctx).visit_function(func)

