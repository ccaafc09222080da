"""Building blocks of LowerCollectives: a pre-SSA statement builder and the Vec chunking plan.

`StmtBuilder` appends statements (assignments, op calls, `pl.range` loops, ifs) to a list, the way
the parser would build them from DSL text before ConvertToSSA: a Var assigned again (`acc`, the
step counter) is the same Var, and loops carry nothing explicitly (ConvertToSSA threads the
re-assigned values through iter args). Every call runs the op's type rule (`op_builder.build_call`)
and every node carries the span of the collective being lowered, so errors point at the user's line.

`plan_chunks(shape, dtype, budget)` splits a static tensor shape into tiles of at most `budget`
bytes: only the last two axes are tiled (leading axes go one index at a time); an axis that does
not divide evenly gets a remainder tile, so a shape yields up to four groups of equal tiles, each
walked by a loop per axis with more than one tile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..core.dtype import BOOL, INDEX, DataType
from ..core.enums import ForKind
from ..core.span import Span
from ..ir.expr import BinaryExpr, Call, ConstInt, Expr, MakeTuple, UnaryExpr, Var
from ..ir.stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, SeqStmts, Stmt
from ..ir.types import ScalarType, TensorType
from .op_builder import build_call

__all__ = ["StmtBuilder", "ChunkGroup", "plan_chunks", "for_each_chunk", "for_each_chunk_of", "ALIGN_BYTES"]

ALIGN_BYTES = 32   # a tile row that is cut is cut at a multiple of 32 bytes (the UB block size)


def _expr(v: Any) -> Expr:
    if isinstance(v, Expr):
        return v
    if isinstance(v, bool):
        raise TypeError("booleans are not index values")
    if isinstance(v, int):
        return ConstInt(v, INDEX)
    if isinstance(v, (list, tuple)):
        return MakeTuple(tuple(_expr(x) for x in v))
    raise TypeError(f"cannot use {v!r} as an IR operand")


class StmtBuilder:
    """Collects pre-SSA statements located at `span`; Var names are `<prefix>_<hint>`, unique."""

    def __init__(self, span: Span, prefix: str) -> None:
        self.span = span
        self.prefix = prefix
        self._stack: list[list[Stmt]] = [[]]
        self._names: dict[str, int] = {}

    def name(self, hint: str) -> str:
        """`<prefix>_<hint>`, with a counter from the second use on (every Var gets its own name)."""
        n = self._names.get(hint, 0)
        self._names[hint] = n + 1
        return f"{self.prefix}_{hint}" if n == 0 else f"{self.prefix}_{hint}_{n}"

    # ---- values ----------------------------------------------------------------------------
    def var(self, name: str, expr: Expr) -> Var:
        """A new Var `<prefix>_<name>` bound to `expr`."""
        v = Var(self.name(name), expr.type, span=self.span)
        self.emit(AssignStmt(v, expr, span=self.span))
        return v

    def assign(self, v: Var, expr: Expr) -> None:
        """Re-bind `v` (pre-SSA: the same Var) to `expr`."""
        self.emit(AssignStmt(v, expr, span=self.span))

    def call(self, op: str, *args: Any, **attrs: Any) -> Call:
        return build_call(op, [_expr(a) for a in args], attrs, self.span)

    def do(self, op: str, *args: Any, **attrs: Any) -> None:
        """Emit a call for its effect only (a notify, a wait, a store)."""
        self.emit(EvalStmt(self.call(op, *args, **attrs), span=self.span))

    def write(self, target: Var, op: str, *args: Any, **attrs: Any) -> None:
        """Emit a call that writes tensor `target` in place: `target = op(...)` when the op returns
        the tensor's next version (`tile.store`), so the version chain stays threaded as in
        hand-written code; a plain statement when it returns nothing."""
        call = self.call(op, *args, **attrs)
        if isinstance(call.type, TensorType):
            self.assign(target, call)
        else:
            self.emit(EvalStmt(call, span=self.span))

    def emit(self, s: Stmt) -> None:
        self._stack[-1].append(s)

    # ---- index arithmetic (INDEX scalars) --------------------------------------------------------
    def bin(self, op: str, a: Any, b: Any) -> Expr:
        a, b = _expr(a), _expr(b)
        if isinstance(a, ConstInt) and isinstance(b, ConstInt) and op in _FOLD:
            return ConstInt(_FOLD[op](a.value, b.value), INDEX)
        return BinaryExpr(op, a, b, BOOL if op in ("lt", "le", "eq", "ne", "ge", "gt") else INDEX,
                          span=self.span)

    def add(self, a: Any, b: Any) -> Expr:
        a, b = _expr(a), _expr(b)
        if _is_const(b, 0):
            return a
        if _is_const(a, 0):
            return b
        return self.bin("add", a, b)

    def mul(self, a: Any, b: Any) -> Expr:
        a, b = _expr(a), _expr(b)
        if _is_const(a, 0) or _is_const(b, 0):
            return ConstInt(0, INDEX)
        if _is_const(b, 1):
            return a
        if _is_const(a, 1):
            return b
        return self.bin("mul", a, b)

    def index(self, e: Expr) -> Expr:
        """`e` as an INDEX scalar (a cast unless it already is one)."""
        t = e.type
        if isinstance(t, ScalarType) and t.dtype is INDEX:
            return e
        return UnaryExpr("cast", e, INDEX, span=self.span)

    # ---- control flow ------------------------------------------------------------------------
    @contextmanager
    def loop(self, name: str, start: Any, stop: Any) -> Iterator[Var]:
        """`for <name> in pl.range(start, stop):` around the statements emitted in the block."""
        lv = Var(self.name(name), ScalarType(INDEX), span=self.span)
        self._stack.append([])
        yield lv
        body = self._stack.pop()
        self.emit(ForStmt(lv, _expr(start), _expr(stop), ConstInt(1, INDEX), (), self._seq(body), (),
                          ForKind.Sequential, span=self.span))

    @contextmanager
    def if_(self, cond: Expr) -> Iterator[None]:
        """`if cond:` (no else) around the statements emitted in the block."""
        self._stack.append([])
        yield
        body = self._stack.pop()
        self.emit(IfStmt(cond, self._seq(body), None, (), span=self.span))

    def _seq(self, stmts: list[Stmt]) -> SeqStmts:
        return SeqStmts(tuple(stmts), span=self.span)

    def result(self) -> SeqStmts:
        assert len(self._stack) == 1, "unbalanced loop/if blocks"
        return self._seq(self._stack[0])


_FOLD: dict[str, Callable[[int, int], int]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
}


@dataclass(frozen=True)
class ChunkGroup:
    """Equal tiles of `tile` elements per axis; axis d holds `count[d]` of them from `base[d]`.
    `first` is the linear index of the group's first tile over all groups."""

    tile: tuple[int, ...]
    base: tuple[int, ...]
    count: tuple[int, ...]
    first: int

    @property
    def size(self) -> int:
        n = 1
        for c in self.count:
            n *= c
        return n


def _tile_shape(shape: tuple[int, ...], elem_bytes: int, budget: int) -> tuple[int, ...]:
    max_elems = max(1, budget // elem_bytes)
    align = max(1, ALIGN_BYTES // elem_bytes)
    cols = shape[-1]
    if cols > max_elems:
        cols = max(align, max_elems // align * align)
    if len(shape) == 1:
        return (cols,)
    rows = max(1, min(shape[-2], max_elems // cols))
    return (1,) * (len(shape) - 2) + (rows, cols)


def plan_chunks(shape: tuple[int, ...], dtype: DataType, budget: int) -> list[ChunkGroup]:
    """The tiles (at most `budget` bytes each) that cover a tensor of static `shape`, by group."""
    eb = max(1, dtype.get_bit() // 8)
    tile = _tile_shape(shape, eb, budget)
    per_axis: list[list[tuple[int, int, int]]] = []   # (tile size, base, count) per part of the axis
    for n, t in zip(shape, tile):
        parts = []
        if n // t:
            parts.append((t, 0, n // t))
        if n % t:
            parts.append((n % t, n // t * t, 1))
        per_axis.append(parts)
    groups: list[ChunkGroup] = []
    first = 0

    def walk(d: int, acc: list[tuple[int, int, int]]) -> None:
        nonlocal first
        if d == len(per_axis):
            g = ChunkGroup(tuple(a[0] for a in acc), tuple(a[1] for a in acc), tuple(a[2] for a in acc), first)
            groups.append(g)
            first += g.size
            return
        for part in per_axis[d]:
            walk(d + 1, [*acc, part])

    walk(0, [])
    return groups


def for_each_chunk(b: StmtBuilder, groups: list[ChunkGroup],
                   body: Callable[[tuple[Expr, ...], tuple[int, ...], Expr], None]) -> None:
    """Emit `body(offsets, tile_shape, linear_index)` for every tile of `groups`, inside one loop
    per axis that has more than one tile."""
    for gi, g in enumerate(groups):
        _emit_group(b, g, gi, 0, [], body)


def for_each_chunk_of(b: StmtBuilder, groups: list[ChunkGroup], k: Expr, nr: Expr,
                      body: Callable[[tuple[Expr, ...], tuple[int, ...], Expr], None]) -> None:
    """Like `for_each_chunk`, for the tiles whose linear index j is congruent to `k` modulo `nr`
    only (0 <= k < nr, both run-time INDEX values): a group of one tile becomes `if F % nr == k`,
    a larger one a loop over exactly its tiles of that class (j = j0, j0 + nr, ...), so no time is
    spent testing the tiles of the other classes."""
    for gi, g in enumerate(groups):
        first = ConstInt(g.first, INDEX)
        if g.size == 1:
            with b.if_(b.bin("eq", b.bin("floormod", first, nr), k)):
                _emit_group(b, g, gi, 0, [], body)
            continue
        j0 = k if g.first == 0 else b.var(f"g{gi}_j0", b.bin("floormod", b.bin("sub", k, first), nr))
        n = b.bin("floordiv", b.add(b.bin("sub", g.size, j0), b.bin("sub", nr, 1)), nr)
        with b.loop(f"g{gi}_k", 0, n) as i:
            lin = b.var(f"g{gi}_j", b.add(j0, b.mul(i, nr)))
            idx: list[Expr] = []
            stride = g.size
            for c in g.count:
                stride //= c
                if c == 1:
                    idx.append(ConstInt(0, INDEX))
                    continue
                q = lin if stride == 1 else b.bin("floordiv", lin, stride)
                idx.append(q if stride * c == g.size else b.bin("floormod", q, c))
            offsets = tuple(b.add(g.base[d], b.mul(idx[d], g.tile[d])) for d in range(len(g.tile)))
            body(offsets, g.tile, b.add(lin, first))


def _emit_group(b: StmtBuilder, g: ChunkGroup, gi: int, d: int, idx: list[Expr],
                body: Callable[[tuple[Expr, ...], tuple[int, ...], Expr], None]) -> None:
    if d == len(g.tile):
        offsets = tuple(b.add(g.base[k], b.mul(idx[k], g.tile[k])) for k in range(d))
        linear: Expr = ConstInt(0, INDEX)
        for k in range(d):
            linear = b.add(b.mul(linear, g.count[k]), idx[k])
        body(offsets, g.tile, b.add(linear, g.first))
        return
    if g.count[d] == 1:
        _emit_group(b, g, gi, d + 1, [*idx, ConstInt(0, INDEX)], body)
        return
    with b.loop(f"g{gi}_i{d}", 0, g.count[d]) as i:
        _emit_group(b, g, gi, d + 1, [*idx, i], body)


def _is_const(e: Expr, v: int) -> bool:
    return isinstance(e, ConstInt) and e.value == v
