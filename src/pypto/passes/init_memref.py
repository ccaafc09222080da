"""InitMemRef: give every on-chip tile value a buffer descriptor (MemRef) (SPEC §5).

Each tile-typed Var defined in a kernel gets `MemRef(space, id, size)`: a buffer id, its memory
space and its size in bytes — the tile's footprint as the hardware lays it out (`buffer_bytes`:
whole 16-row fractal boxes in Mat/Left/Right/Acc, 32-byte aligned rows elsewhere), rounded up
to the 32-byte alignment.
Addresses are assigned later by AllocateMemoryAddr.

Cross-core pipe rings: first, a kernel that receives tiles on a pipe running on chip gets a ring
tile per direction at the top of its body, which its pops name (`pipe_rings.add_pipe_rings`: the
consumer reserves `slots × slot_bytes` of its Vec / Mat for the slots the producer writes into). A
ring is a byte array: its MemRef is exactly `slots × slot_bytes` bytes (rounded up to the 32-byte
alignment), with no fractal layout even in Mat.

Structured control flow shares buffers so that carried values need no copies and the rule can be
read back from printed IR (the parser types results the same way):
- a loop's iter arg and its return var live in the buffer of the iter arg's *init* value;
- an if's return var lives in the buffer of the value its then-branch yields.
A buffer can only be donated by a value that has no other use and that is defined in the same loop
body as the loop it starts (a value from outside an enclosing loop is read again by that loop's
next iteration); otherwise the pass first copies the value (`tile.move` within the same memory)
and donates the copy, so a value still read after the loop is never overwritten by the loop
(SPEC §9, "buffer reused while a value still lives in it").
Yielded values are copied into the shared buffer at run time when their buffers differ — except a
value computed *in place*: when the yielded value is made, directly in the loop body, by an op that
may write its result over the carried value (`OpSpec.inplace_args`: elementwise ops, matmul_acc's
accumulator; same shape and dtype) and the carried value is not read after that op in the
iteration, it is computed in the carried buffer, so `acc = acc + x` and `matmul_acc` loops move no
data to carry their value.

A view op (trait "view") of a whole tile — `tile.reshape` (which FlattenTileNdTo2D inserts),
`tile.view`, `tile.transpose_view`; not a sub-block `tile.slice` — whose source tile has no other
use and is defined in the same loop body lives in the source's buffer, so it moves no data.
"""

from __future__ import annotations

from collections import Counter

from ..backend import SoCModel
from ..core.enums import FunctionType, MemorySpace
from ..ir.expr import Call, Expr, Var
from ..ir.function import Function, Program
from ..ir.replace import fast_replace
from ..ir.stmt import AssignStmt, ForStmt, IfStmt, SeqStmts, Stmt, WhileStmt, YieldStmt
from ..ir.types import MemRef, TileType
from ..ir.visitor import IRMutator
from ..ops import get_op
from .analysis import UseVisitor, defined_vars, in_place_operands_of, reads_var
from .base import FunctionPass, PassContext
from .op_builder import build_call
from .pipe_rings import add_pipe_rings, ring_uses
from .tile_layout import align_up, buffer_bytes, tile_bytes

__all__ = ["InitMemRef", "tile_bytes", "buffer_bytes", "align_up"]


class _UseCount(UseVisitor):
    def __init__(self) -> None:
        self.count: Counter[Var] = Counter()

    def on_use(self, v: Var) -> None:
        self.count[v] += 1


def _copy(v: Expr, span) -> tuple[Var, AssignStmt]:  # type: ignore[no-untyped-def]
    t = v.type
    call = build_call("tile.move", [v], {"target_memory": t.memory_space or MemorySpace.Vec}, span)  # type: ignore[attr-defined]
    nv = Var(f"{getattr(v, 'name', 't')}_copy", call.type, span=span)
    return nv, AssignStmt(nv, call, span=span)


class _LoopScopes(IRMutator):
    """Tracks the Vars bound in the body of the innermost loop being visited: a value bound
    outside it is read again by every iteration, so no buffer of the body may be that value's."""

    def __init__(self) -> None:
        super().__init__()
        self.loop_locals: list[dict[Var, None]] = []

    def bound_per_iteration(self, v: Var) -> bool:
        """Whether `v` is bound anew in each iteration of the innermost enclosing loop (or no loop
        encloses the current statement)."""
        return not self.loop_locals or v in self.loop_locals[-1]

    def _in_loop(self, s: ForStmt | WhileStmt, visit):  # type: ignore[no-untyped-def]
        local = dict.fromkeys(s.iter_args)
        if isinstance(s, ForStmt):
            local[s.loop_var] = None
        local.update(defined_vars(s.body))
        self.loop_locals.append(local)
        try:
            return visit(s)
        finally:
            self.loop_locals.pop()

    def visit_ForStmt(self, s: ForStmt) -> Stmt:
        return self._in_loop(s, super().visit_ForStmt)

    def visit_WhileStmt(self, s: WhileStmt) -> Stmt:
        return self._in_loop(s, super().visit_WhileStmt)


class _Donate(_LoopScopes):
    """Insert copies so that every donated buffer belongs to a value with no other use, bound in
    the loop body (or function body) that holds the loop it starts."""

    def __init__(self, uses: Counter[Var]) -> None:
        super().__init__()
        self.uses = uses

    def visit_SeqStmts(self, s: SeqStmts) -> Stmt:
        out: list[Stmt] = []
        changed = False
        for st in s.stmts:
            y = self.visit_stmt(st)
            if isinstance(y, (ForStmt, WhileStmt)):
                y, pre = self.donate_inits(y)
                out.extend(pre)
                changed |= bool(pre)
            elif isinstance(y, IfStmt):
                y = self.donate_then(y)
            changed |= y is not st
            out.append(y)
        return fast_replace(s, stmts=tuple(out)) if changed else s

    def donate_inits(self, s: ForStmt | WhileStmt) -> tuple[Stmt, list[Stmt]]:
        pre: list[Stmt] = []
        ias = list(s.iter_args)
        for i, ia in enumerate(ias):
            init = ia.init
            if isinstance(ia.type, TileType) and init is not None and \
                    (not isinstance(init, Var) or self.uses[init] != 1 or not self.bound_per_iteration(init)):
                nv, st = _copy(init, s.span)
                pre.append(st)
                ias[i] = fast_replace(ia, init=nv)
        if not pre:
            return s, pre
        # The IterArgs are new objects: the body (and a while condition) must refer to them.
        rename = IRMutator({old: new for old, new in zip(s.iter_args, ias) if old is not new})
        new = fast_replace(s, iter_args=tuple(ias), body=rename.visit_seq(s.body))
        if isinstance(new, WhileStmt):
            new = fast_replace(new, cond=rename.visit_expr(new.cond))
        return new, pre

    def donate_then(self, s: IfStmt) -> IfStmt:
        if not s.return_vars or not s.then_body.stmts or not isinstance(s.then_body.stmts[-1], YieldStmt):
            return s
        y = s.then_body.stmts[-1]
        local = defined_vars(s.then_body)
        vals = list(y.values)
        pre: list[Stmt] = []
        seen: set[Var] = set()
        for i, v in enumerate(vals):
            if isinstance(v.type, TileType) and (not isinstance(v, Var) or v not in local
                                                 or self.uses[v] != 1 or v in seen):
                nv, st = _copy(v, y.span)
                pre.append(st)
                vals[i] = nv
            if isinstance(v, Var):
                seen.add(v)
        if not pre:
            return s
        body = s.then_body.stmts[:-1] + tuple(pre) + (fast_replace(y, values=tuple(vals)),)
        return fast_replace(s, then_body=fast_replace(s.then_body, stmts=body))


def _computed_in_place(loop: ForStmt | WhileStmt, ia: Var) -> Var | None:
    """The value yielded for carried tile `ia` when it can be computed straight into the carried
    buffer: defined in the loop body (not nested) by an op that may write its result over `ia`
    (`OpSpec.inplace_args`, same shape and dtype), yielded once, and `ia` is not read after it in
    the iteration (the yield itself included). The yield then needs no copy."""
    stmts = loop.body.stmts
    if not stmts or not isinstance(stmts[-1], YieldStmt):
        return None
    values = stmts[-1].values
    i = loop.iter_args.index(ia)
    y = values[i] if i < len(values) else None
    if not isinstance(y, Var) or sum(v is y for v in values) != 1:
        return None
    k = next((j for j, st in enumerate(stmts) if isinstance(st, AssignStmt) and st.var is y), None)
    if k is None or reads_var(stmts[k + 1:], ia):
        return None
    return y if any(a is ia for a in in_place_operands_of(stmts[k].value, y.type)) else None


class _Assign(_LoopScopes):
    def __init__(self, soc: SoCModel, uses: Counter[Var], rings: frozenset[Var] = frozenset()) -> None:
        super().__init__()
        self.soc = soc
        self.uses = uses
        self.rings = rings  # pipe ring tiles: dense byte arrays
        self.next_id = 0
        self.shared: dict[Var, MemRef] = {}  # binding -> memref it must use

    def new_memref(self, t: TileType, dense: bool = False) -> MemRef:
        space = t.memory_space or MemorySpace.Vec
        size = align_up(tile_bytes(t), self.soc.alignment) if dense else \
            buffer_bytes(fast_replace(t, memory_space=space), self.soc)
        m = MemRef(space, self.next_id, size)
        self.next_id += 1
        return m

    def visit_binding(self, v: Var) -> Var:
        if v in self.var_map:
            return self.var_map[v]  # type: ignore[return-value]
        t = v.type
        if not isinstance(t, TileType) or t.memref is not None:
            return super().visit_binding(v)
        m = self.shared.get(v) or self.new_memref(t, v in self.rings)
        nv = fast_replace(v, var_type=fast_replace(t, memory_space=m.memory_space, memref=m))
        self.var_map[v] = nv
        return nv

    def visit_AssignStmt(self, s: AssignStmt) -> Stmt:
        """A view (`tile.reshape`, ...) that is its source's only use lives in the source's buffer."""
        v = s.value
        if isinstance(v, Call) and isinstance(v.op, str) and get_op(v.op).has_trait("view") and v.args \
                and isinstance(v.args[0], Var) and self.uses[v.args[0]] == 1 and isinstance(s.var.type, TileType) \
                and self.bound_per_iteration(v.args[0]):
            src = self.visit_expr(v.args[0])
            m = getattr(src.type, "memref", None)
            t = s.var.type
            if m is not None and (t.memory_space or m.memory_space) is m.memory_space \
                    and tile_bytes(t) == tile_bytes(src.type) \
                    and buffer_bytes(fast_replace(t, memory_space=m.memory_space), self.soc) <= m.size:
                # a whole-tile view (not a sub-block) that fits the source's physical layout
                self.shared[s.var] = m
        return super().visit_AssignStmt(s)

    def _share_loop(self, s: ForStmt | WhileStmt) -> None:
        for ia, rv in zip(s.iter_args, s.return_vars):
            init = self.visit_expr(ia.init) if ia.init is not None else None
            m = getattr(init.type, "memref", None) if init is not None else None
            if isinstance(ia.type, TileType) and m is not None:
                self.shared[ia] = m
                self.shared[rv] = m
                y = _computed_in_place(s, ia)
                if y is not None and y not in self.shared:
                    self.shared[y] = m

    def visit_ForStmt(self, s: ForStmt) -> Stmt:
        self._share_loop(s)
        return super().visit_ForStmt(s)

    def visit_WhileStmt(self, s: WhileStmt) -> Stmt:
        self._share_loop(s)
        return super().visit_WhileStmt(s)

    def visit_IfStmt(self, s: IfStmt) -> Stmt:
        cond = self.visit_expr(s.cond)
        then = self.visit_seq(s.then_body)
        els = self.visit_seq(s.else_body) if s.else_body is not None else None
        last = then.stmts[-1] if then.stmts else None
        if isinstance(last, YieldStmt):
            for rv, v in zip(s.return_vars, last.values):
                m = getattr(v.type, "memref", None)
                if isinstance(rv.type, TileType) and m is not None:
                    self.shared[rv] = m
        rvs = tuple(self.visit_binding(v) for v in s.return_vars)
        return fast_replace(s, cond=cond, then_body=then, else_body=els, return_vars=rvs)


class InitMemRef(FunctionPass):
    name = "InitMemRef"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        if func.func_type is FunctionType.Orchestration:
            return func
        func = add_pipe_rings(func, program, ctx.soc)
        uses = _UseCount()
        uses.visit_stmt(func.body)
        donated = _Donate(uses.count).visit_function(func)
        if donated is not func:  # copies inserted: count again
            func = donated
            uses = _UseCount()
            uses.visit_stmt(func.body)
        return _Assign(ctx.soc, uses.count, frozenset(ring_uses(func))).visit_function(func)
