"""Live intervals of on-chip buffers (MemRefs) in one kernel, for MemoryReuse (SPEC §5, §9).

Statements are numbered in program order (a pre-order walk; an `if` numbers its then-branch before
its else-branch; a loop gets one number for its header and one for its end). A buffer — all tile
Vars sharing one MemRef id — is live over the closed interval from its first definition to its last
use, with these rules, which keep every value alive for as long as the hardware may still read it:

- a value defined outside a loop and used inside it stays live until the end of that loop (the
  next iteration reads it again) — for nested loops, until the end of the outermost loop entered
  between the definition and the use;
- a loop's iter args are defined at the loop header *outside* the loop, so the carried buffer
  stays live through every iteration; the loop's return vars are defined at the loop end, and the
  `yield` writes into the carried buffer; since InitMemRef puts the init value, iter arg and return
  var in one buffer, that buffer is live from the init's definition through the whole loop and past
  it until the return var's last use (the SPEC §9 bug class: "a buffer reused while a loop's carried
  or returned value still lives in it");
- an if's return vars are defined at the end of the if; the value yielded by the then-branch shares
  their buffer, so that buffer covers the else-branch too;
- a statement that reads one buffer and defines another keeps both live at that statement: an op
  never writes its result over an operand it is still reading.

Intervals are convex hulls over all Vars of a buffer, which is conservative (never too short).
`value_intervals` applies the same rules with another grouping of the Vars (the memory map, SPEC
§11, draws one box per tile value), and `numbered_statements` gives the numbering itself.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

from ..core.enums import MemorySpace
from ..ir.expr import IterArg, Var
from ..ir.function import Function
from ..ir.stmt import AssignStmt, ForStmt, IfStmt, Stmt, WhileStmt, YieldStmt
from ..ir.types import TileType
from ..ir.visitor import IRVisitor
from .analysis import in_place_operands_of

__all__ = ["BufferKey", "Interval", "NumberedStmt", "buffer_intervals", "buffer_intervals_in_place", "value_intervals",
           "numbered_statements", "in_place_operands"]

BufferKey = tuple[MemorySpace, int]


@dataclass
class Interval:
    """Closed range of statement numbers `[start, end]` over which a buffer holds a live value.

    `size` is the buffer's MemRef size in bytes; `names` the Vars in it (for reports).
    """

    start: int
    end: int
    size: int
    names: list[str]

    def overlaps(self, other: Interval) -> bool:
        return self.start <= other.end and other.start <= self.end


@dataclass(frozen=True)
class NumberedStmt:
    """Statement number `number` (see the module docstring) of `stmt`; `is_end` marks the second
    number of a loop or an if (its end), the first being its header."""

    number: int
    stmt: Stmt
    is_end: bool = False


def _is_buffer(v: Var) -> bool:
    return isinstance(v.type, TileType) and v.type.memref is not None


class _Walk(IRVisitor):
    def __init__(self) -> None:
        self.pos = 0
        self.loops: list[int] = []            # ids of the loops around the current statement
        self.loop_end: dict[int, int] = {}    # loop id -> number of its end
        self.def_at: dict[Var, tuple[int, tuple[int, ...]]] = {}
        self.uses: list[tuple[Var, int, tuple[int, ...]]] = []
        self.assigns: list[tuple[int, AssignStmt]] = []   # (number, statement)
        self.numbered: list[NumberedStmt] = []

    def tick(self, s: Stmt, is_end: bool = False) -> int:
        self.pos += 1
        self.numbered.append(NumberedStmt(self.pos, s, is_end))
        return self.pos

    def define(self, v: Var, pos: int, loops: tuple[int, ...] | None = None) -> None:
        if _is_buffer(v) and v not in self.def_at:
            self.def_at[v] = (pos, tuple(self.loops) if loops is None else loops)

    def visit_Var(self, e: Var) -> None:
        if _is_buffer(e):
            self.uses.append((e, self.pos, tuple(self.loops)))

    visit_IterArg = visit_Var

    def visit_stmt(self, s: Stmt) -> None:
        if not isinstance(s, (ForStmt, WhileStmt)):  # loops number their header themselves
            self.tick(s)
        super().visit_stmt(s)

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.visit_expr(s.value)
        self.define(s.var, self.pos)
        self.assigns.append((self.pos, s))

    def visit_YieldStmt(self, s: YieldStmt) -> None:
        for v in s.values:
            self.visit_expr(v)

    def _loop(self, s: ForStmt | WhileStmt) -> None:
        header = self.tick(s)
        for ia in s.iter_args:
            if ia.init is not None:
                self.visit_expr(ia.init)
        outside = tuple(self.loops)
        for ia in s.iter_args:
            self.define(ia, header, outside)
        lid = id(s)
        self.loops.append(lid)
        if isinstance(s, WhileStmt):
            self.visit_expr(s.cond)
        for ia in s.iter_args:      # each iteration's yield writes the carried buffer
            self.visit_Var(ia)
        self.visit_stmt(s.body)
        self.loops.pop()
        end = self.tick(s, True)
        self.loop_end[lid] = end
        for ia in s.iter_args:
            if _is_buffer(ia):
                self.uses.append((ia, end, outside))
        for rv in s.return_vars:
            self.define(rv, end)

    visit_ForStmt = visit_WhileStmt = _loop  # type: ignore[assignment]

    def visit_IfStmt(self, s: IfStmt) -> None:
        self.visit_expr(s.cond)
        self.visit_stmt(s.then_body)
        if s.else_body is not None:
            self.visit_stmt(s.else_body)
        end = self.tick(s, True)
        for rv in s.return_vars:
            self.define(rv, end)


def numbered_statements(func: Function) -> list[NumberedStmt]:
    """Every statement of `func` with its number, in program order (loops and ifs twice: header
    and end); `SeqStmts` blocks get numbers too. The numbers of all intervals come from here."""
    w = _Walk()
    w.visit_stmt(func.body)
    return w.numbered


def buffer_intervals(func: Function) -> dict[BufferKey, Interval]:
    """Live interval of every buffer (MemRef space and id) of `func`, see the module docstring."""
    return value_intervals(func, _key)


def buffer_intervals_in_place(func: Function) -> tuple[dict[BufferKey, Interval], dict[BufferKey, frozenset[BufferKey]]]:
    """`buffer_intervals(func)` and `in_place_operands` of them, from one walk of `func`."""
    w = _Walk()
    w.visit_stmt(func.body)
    intervals = _intervals(w, _key)
    return intervals, _in_place(w, intervals)


def value_intervals(func: Function, key: Callable[[Var], Hashable]) -> dict[Hashable, Interval]:
    """Live interval of every group of tile Vars (those with a MemRef) of `func`, grouped by `key`,
    with the rules of the module docstring (`buffer_intervals` groups by MemRef space and id)."""
    w = _Walk()
    w.visit_stmt(func.body)
    return _intervals(w, key)


def _intervals(w: _Walk, key: Callable[[Var], Hashable]) -> dict[Hashable, Interval]:
    out: dict[Hashable, Interval] = {}

    def touch(v: Var, pos: int) -> None:
        m = v.type.memref  # type: ignore[attr-defined]
        k = key(v)
        iv = out.get(k)
        if iv is None:
            out[k] = Interval(pos, pos, m.size, [v.name])
            return
        iv.start, iv.end, iv.size = min(iv.start, pos), max(iv.end, pos), max(iv.size, m.size)
        if v.name not in iv.names:
            iv.names.append(v.name)

    for v, (pos, _) in w.def_at.items():
        touch(v, pos)
    for v, pos, loops in w.uses:
        d = w.def_at.get(v)
        def_loops = d[1] if d is not None else ()
        # the outermost loop around the use that does not also enclose the definition
        for lid in loops:
            if lid not in def_loops:
                pos = max(pos, w.loop_end[lid])
                break
        touch(v, pos)
        if d is None and not isinstance(v, IterArg):
            touch(v, 0)  # used but never defined here (e.g. a parameter): live from the start
    return out


def _key(v: Var) -> BufferKey:
    m = v.type.memref  # type: ignore[attr-defined]
    return (m.memory_space, m.id)


def in_place_operands(func: Function, intervals: dict[BufferKey, Interval]) -> dict[BufferKey, frozenset[BufferKey]]:
    """For each buffer whose first definition is an op that may write its result over an operand
    (`OpSpec.inplace_args`, operand of the result's shape and dtype): the buffers of those operands
    whose live interval ends at that very statement — the result may then take their place."""
    w = _Walk()
    w.visit_stmt(func.body)
    return _in_place(w, intervals)


def _in_place(w: _Walk, intervals: dict[BufferKey, Interval]) -> dict[BufferKey, frozenset[BufferKey]]:
    out: dict[BufferKey, frozenset[BufferKey]] = {}
    for pos, s in w.assigns:
        v = s.var
        if not _is_buffer(v) or intervals[_key(v)].start != pos:
            continue
        ops = {_key(a) for a in in_place_operands_of(s.value, v.type)
               if _is_buffer(a) and intervals[_key(a)].end == pos}
        if ops:
            out[_key(v)] = frozenset(ops)
    return out
