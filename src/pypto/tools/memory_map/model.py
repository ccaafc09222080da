"""The memory map of a program after AllocateMemoryAddr: boxes, lanes and conflicts (SPEC §11).

One `TileBox` per tile value: a tile Var made by a statement, together with the loop iter args and
return vars (and an if's return vars) that InitMemRef put in its buffer — they carry the same value
on. Its live range comes from the compiler's own liveness rules (`passes.liveness.value_intervals`,
the rules MemoryReuse plans with), in statement numbers (`passes.liveness.numbered_statements`),
shown as rows. A `Conflict` is a pair of boxes of *different* buffers (MemRef ids) of one memory
space that are live at a common statement and share bytes — what MemoryReuse and AllocateMemoryAddr
must never produce.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ...backend import SoCModel
from ...core.enums import FunctionType, MemorySpace
from ...core.errors import PyPTOError
from ...core.span import Span
from ...ir.expr import Call, Var
from ...ir.function import Function, Program
from ...ir.stmt import AssignStmt, ForStmt, IfStmt, SeqStmts, Stmt, WhileStmt, YieldStmt
from ...ir.types import TileType
from ...ir.visitor import IRVisitor
from ...passes.liveness import numbered_statements, value_intervals

__all__ = ["MemoryMapError", "Row", "TileBox", "Conflict", "Lane", "KernelMap", "kernel_maps"]

FULL = 0.95  # a lane whose high-water mark reaches this share of the capacity is drawn red


class MemoryMapError(PyPTOError):
    """The input cannot be drawn: not a pass dump, or a dump from before AllocateMemoryAddr."""


@dataclass(frozen=True)
class Row:
    """One statement of a kernel, in program order: liveness `number`, dump `line` (0: unknown)."""

    number: int
    line: int
    label: str


@dataclass(frozen=True)
class TileBox:
    """A tile value in its buffer: `[addr, addr + size)` bytes of `space` over rows
    `first_row..last_row` (indices into `KernelMap.rows`, inclusive).

    `names`: the Vars holding the value (the producing one first); `op`: the producing op;
    `line`: the dump line of the producing statement (0: none, e.g. an iter arg of a non-tile init).
    """

    key: str
    names: tuple[str, ...]
    space: MemorySpace
    buffer: int
    addr: int
    size: int
    shape: tuple[str, ...]
    dtype: str
    op: str
    line: int
    first_row: int
    last_row: int

    @property
    def end_addr(self) -> int:
        return self.addr + self.size


@dataclass(frozen=True)
class Conflict:
    """Boxes `a` and `b` (different buffers) both live over rows `first_row..last_row` and both
    holding bytes `[lo, hi)`."""

    a: TileBox
    b: TileBox
    lo: int
    hi: int
    first_row: int
    last_row: int


@dataclass
class Lane:
    """One memory space of a kernel. `capacity`: usable bytes per core (None: not on chip);
    `high_water`: the highest byte any box reaches."""

    space: MemorySpace
    capacity: int | None
    boxes: list[TileBox] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)

    @property
    def high_water(self) -> int:
        return max((b.end_addr for b in self.boxes), default=0)

    @property
    def full(self) -> bool:
        """True when the high-water mark is at least 95 % of the capacity."""
        return self.capacity is not None and self.high_water >= FULL * self.capacity


@dataclass
class KernelMap:
    """The map of one kernel: its rows, a lane per memory space it uses, its dump lines."""

    name: str
    func_type: str
    rows: list[Row]
    lanes: list[Lane]
    first_line: int
    last_line: int

    @property
    def conflicts(self) -> list[Conflict]:
        return [c for lane in self.lanes for c in lane.conflicts]


def _memref_key(v: Var) -> tuple[MemorySpace, int, int]:
    m = v.type.memref  # type: ignore[attr-defined]
    return (m.memory_space, m.id, m.addr)


class _Carried(IRVisitor):
    """Union-find of the Vars that carry one value on in one buffer (module docstring)."""

    def __init__(self) -> None:
        self.parent: dict[Var, Var] = {}

    def find(self, v: Var) -> Var:
        while self.parent.get(v, v) is not v:
            v = self.parent[v]
        return v

    def union(self, keep: object, other: object) -> None:
        if isinstance(keep, Var) and isinstance(other, Var) and _is_tile(keep) and _is_tile(other) \
                and _memref_key(keep) == _memref_key(other):
            a, b = self.find(keep), self.find(other)
            if a is not b:
                self.parent[b] = a

    def _loop(self, s: ForStmt | WhileStmt) -> None:
        for ia, rv in zip(s.iter_args, s.return_vars):
            self.union(ia.init, ia)
            self.union(ia, rv)
        for ia in s.iter_args[len(s.return_vars):]:
            self.union(ia.init, ia)
        self.visit_stmt(s.body)

    visit_ForStmt = visit_WhileStmt = _loop  # type: ignore[assignment]

    def visit_IfStmt(self, s: IfStmt) -> None:
        last = s.then_body.stmts[-1] if s.then_body.stmts else None
        if isinstance(last, YieldStmt):
            for rv, v in zip(s.return_vars, last.values):
                self.union(v, rv)
        super().visit_IfStmt(s)


def _is_tile(v: Var) -> bool:
    return isinstance(v.type, TileType) and v.type.memref is not None


class _Tiles(IRVisitor):
    """Every tile Var of a function with a MemRef or without, and the statement making each."""

    def __init__(self) -> None:
        self.vars: dict[Var, None] = {}
        self.made_by: dict[Var, AssignStmt] = {}

    def visit_Var(self, e: Var) -> None:
        if isinstance(e.type, TileType):
            self.vars.setdefault(e, None)

    visit_IterArg = visit_Var

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        if isinstance(s.var.type, TileType):
            self.made_by.setdefault(s.var, s)
        self.visit_Var(s.var)
        super().visit_AssignStmt(s)

    def visit_ForStmt(self, s: ForStmt) -> None:
        for v in (*s.iter_args, *s.return_vars):
            self.visit_Var(v)
        super().visit_ForStmt(s)

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        for v in (*s.iter_args, *s.return_vars):
            self.visit_Var(v)
        super().visit_WhileStmt(s)

    def visit_IfStmt(self, s: IfStmt) -> None:
        for v in s.return_vars:
            self.visit_Var(v)
        super().visit_IfStmt(s)


def tile_vars(func: Function) -> _Tiles:
    """The tile Vars of `func` (`.vars`, parameters first) and the AssignStmt making each (`.made_by`)."""
    t = _Tiles()
    for p in func.params:
        t.visit_Var(p)
    t.visit_stmt(func.body)
    return t


def unplaced_tile(program: Program) -> tuple[Function, Var] | None:
    """The first kernel tile Var without an address (no MemRef, or addr -1), if any."""
    for f in program.functions:
        if f.func_type is FunctionType.Orchestration:
            continue
        for v in tile_vars(f).vars:
            m = v.type.memref  # type: ignore[attr-defined]
            if m is None or m.addr < 0:
                return f, v
    return None


def _op_name(s: AssignStmt) -> str:
    v = s.value
    if isinstance(v, Call):
        return v.op if isinstance(v.op, str) else getattr(v.op, "name", str(v.op))
    return type(v).__name__


def _line(span: Span, end: bool = False) -> int:
    if not span.is_known():
        return 0
    return span.end_line if end and span.end_line > 0 else span.begin_line


def _label(s: Stmt, is_end: bool) -> str:
    kind = {ForStmt: "for", WhileStmt: "while", IfStmt: "if"}.get(type(s))
    if kind is not None:
        if is_end:
            return f"end {kind}"
        return f"for {s.loop_var.name}" if isinstance(s, ForStmt) else kind
    if isinstance(s, AssignStmt):
        return f"{s.var.name} = {_op_name(s)}"
    return type(s).__name__.removesuffix("Stmt").lower()


def _rows(func: Function) -> list[Row]:
    rows = [Row(0, _line(func.span), "entry")]
    for n in numbered_statements(func):
        if not isinstance(n.stmt, SeqStmts):
            rows.append(Row(n.number, _line(n.stmt.span, n.is_end), _label(n.stmt, n.is_end)))
    return rows


def _boxes(func: Function, rows: list[Row]) -> list[TileBox]:
    carried = _Carried()
    carried.visit_stmt(func.body)
    tiles = tile_vars(func)
    intervals = value_intervals(func, carried.find)
    index = {r.number: i for i, r in enumerate(rows)}
    members: dict[Var, list[Var]] = {}
    for v in tiles.vars:
        if _is_tile(v):
            members.setdefault(carried.find(v), []).append(v)
    boxes = []
    for rep, iv in intervals.items():
        made = [v for v in members.get(rep, [rep]) if v in tiles.made_by]
        owner = made[0] if made else rep
        stmt = tiles.made_by.get(owner)
        t: TileType = owner.type  # type: ignore[assignment]
        m = t.memref
        assert m is not None
        names = (owner.name, *(n for n in iv.names if n != owner.name))
        boxes.append(TileBox(
            key=f"{func.name}.{len(boxes)}", names=names, space=m.memory_space, buffer=m.id, addr=m.addr,
            size=m.size, shape=tuple(str(d) for d in t.shape), dtype=getattr(t.dtype, "name", str(t.dtype)),
            op=_op_name(stmt) if stmt is not None else "carried value (no producing op)",
            line=_line(stmt.span) if stmt is not None else _line(owner.span),
            first_row=index[iv.start], last_row=index[iv.end]))
    return sorted(boxes, key=lambda b: (b.first_row, b.addr, b.key))


def _conflicts(boxes: list[TileBox]) -> list[Conflict]:
    out = []
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            if a.buffer == b.buffer or a.space is not b.space:
                continue
            lo, hi = max(a.addr, b.addr), min(a.end_addr, b.end_addr)
            r0, r1 = max(a.first_row, b.first_row), min(a.last_row, b.last_row)
            if lo < hi and r0 <= r1:
                out.append(Conflict(a, b, lo, hi, r0, r1))
    return out


def _line_ranges(program: Program, lines: list[str]) -> dict[str, tuple[int, int]]:
    """Dump lines of each function: from its decorators to the line before the next function's,
    without trailing blank lines."""
    starts = []
    for f in program.functions:
        first = _line(f.span)
        if first:
            while first > 1 and lines[first - 2].strip().startswith("@"):
                first -= 1
            starts.append((first, f.name))
    starts.sort()
    out = {}
    for i, (first, name) in enumerate(starts):
        last = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines)
        while last > first and not lines[last - 1].strip():
            last -= 1
        out[name] = (first, last)
    return out


def kernel_maps(program: Program, soc: SoCModel, source_lines: list[str]) -> list[KernelMap]:
    """A `KernelMap` per non-Orchestration function of `program` that has tiles, in program order.

    `source_lines`: the dump text the program was parsed from (for each kernel's line range).
    The program must be placed (`unplaced_tile(program)` is None).
    """
    ranges = _line_ranges(program, source_lines)
    out = []
    for f in program.functions:
        if f.func_type is FunctionType.Orchestration:
            continue
        rows = _rows(f)
        boxes = _boxes(f, rows)
        if not boxes:
            continue
        lanes = []
        for space in MemorySpace:
            mine = [b for b in boxes if b.space is space]
            if mine:
                cap = soc.capacity.get(space)
                lanes.append(Lane(space, cap, mine, _conflicts(mine)))
        first, last = ranges.get(f.name, (1, len(source_lines)))
        out.append(KernelMap(f.name, f.func_type.name, rows, lanes, first, last))
    return out
