"""Simulator sanitizer (`RunConfig(sanitize=True)`): finds the bugs that silently give wrong numbers.

It reports, each naming the kernel, the op and the user's source line, and for a task the
orchestration line that called the kernel and the call's scalar arguments (`Task.call_site`):

- **uninitialized-read**: an op reads on-chip bytes that nothing in the current task wrote (stale
  bytes of an earlier task, or a `tile.create` buffer never filled);
- **overlapping-live-buffers**: an op reads a tile whose bytes another tile overwrote while the
  first was still live (memory planning placed two live buffers on the same bytes);
- **ddr-out-of-bounds**: a load/store region outside its DDR tensor;
- **unordered-conflict**: two tasks touch overlapping DDR regions, at least one writing, and no
  chain of dependencies orders them (their order, hence the numbers, could differ on the chip).
  Checked for runs where dependencies are not all derived: `RunConfig(auto_deps=False)`, tasks of
  a MANUAL scope, SPMD blocks, `no_dep_args` (SPEC §13).

How on-chip bytes are tracked: every tile write gets a fresh *value id*; a shadow array per core
and memory space holds, per byte, the id of the value that last wrote it. Each tile variable knows
the id of the value it holds (a copy-free alias, e.g. a loop-carried tile planned into the same
buffer, shares the id). A read checks that its bytes still carry its value's id: ids from before
the task started mean never written in this task; another id means clobbered by that value.

DDR out-of-bounds accesses stop the task; every other finding is collected, and the run ends with
a `SanitizerError` listing them all (Out tensors are then not copied back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from ...core.enums import MemorySpace
from ...core.errors import RuntimeSimError, render_location
from ...core.span import Span
from .exprs import Extent

if TYPE_CHECKING:
    from .task import Task

__all__ = ["Finding", "SanitizerError", "Sanitizer", "KINDS"]

KINDS = ("uninitialized-read", "overlapping-live-buffers", "ddr-out-of-bounds", "unordered-conflict")


@dataclass(frozen=True)
class Finding:
    """One sanitizer report: `kind` (one of KINDS), the text, and where: kernel, op, source span,
    task id, and how the task was called (`Task.call_site`: `called at prog.py:22 with i=48`;
    empty when unknown, or when the message names the call sites itself)."""

    kind: str
    message: str
    kernel: str | None = None
    op: str | None = None
    span: Span | None = None
    task_id: int | None = None
    called: str = ""

    def __str__(self) -> str:
        where = f"kernel '{self.kernel}'" if self.kernel else "orchestration"
        if self.op:
            where += f", {self.op}"
        if self.task_id is not None:
            where += f", task {self.task_id}"
        if self.called:
            where += f", {self.called}"
        return render_location(self.span, f"[{self.kind}] ({where}) {self.message}", "sanitizer")


class SanitizerError(RuntimeSimError):
    """A sanitized run found problems; `findings` lists them (the first one locates the error)."""

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = list(findings)
        n = len(self.findings)
        text = f"sanitizer found {n} problem{'s' if n != 1 else ''}:\n" + "\n".join(
            str(f) for f in self.findings)
        super().__init__(text, None)

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class _Writer:
    var: str
    op: str
    span: Span | None
    ext: Extent


def _range(ext: Extent) -> str:
    return f"{ext.space.name} [{ext.addr}, {ext.addr + ext.nbytes})"


class Sanitizer:
    """Per-run sanitizer state (see the module docstring)."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self._seen: set[tuple] = set()
        self._next = 1
        self._writers: dict[int, _Writer] = {}
        self._shadows: dict[tuple[int, MemorySpace], torch.Tensor] = {}
        self.task: Task | None = None
        self._arena: Any = None
        self._base = 1
        self._vids: dict[int, int] = {}

    # ---- task context --------------------------------------------------------------------------
    def begin_task(self, task: Task, arena: Any) -> None:
        """Values written before this call count as never written for `task`."""
        self.task, self._arena = task, arena
        self._base = self._next
        self._vids = {}

    def save(self) -> tuple:
        """The per-task state (for the kernels of a Group call, which run interleaved)."""
        return (self.task, self._arena, self._base, self._vids)

    def restore(self, state: tuple) -> None:
        """Continue the task whose state `save` returned."""
        self.task, self._arena, self._base, self._vids = state

    def _shadow(self, space: MemorySpace) -> torch.Tensor:
        key = (id(self._arena), space)
        s = self._shadows.get(key)
        if s is None:
            s = self._shadows[key] = torch.zeros(self._arena.buffer(space).numel(), dtype=torch.int64)
        return s

    def report(self, kind: str, message: str, op: str | None, span: Span | None,
               key: tuple = (), called: str | None = None) -> None:
        """Record a finding once per (kind, kernel, op, span, key); `called` (None: the current
        task's `call_site`) says how the task was called."""
        kernel = self.task.kernel if self.task is not None else None
        dedup = (kind, kernel, op, span, key)
        if dedup in self._seen:
            return
        self._seen.add(dedup)
        tid = self.task.task_id if self.task is not None else None
        if called is None:
            called = self.task.call_site() if self.task is not None else ""
        self.findings.append(Finding(kind, message, kernel, op, span, tid, called))

    # ---- on-chip reads and writes ------------------------------------------------------------------
    def read(self, slot: int, ext: Extent, var: str, op: str, span: Span | None) -> None:
        """An op at `span` reads tile `var` (env slot `slot`) occupying `ext`."""
        own = self._shadow(ext.space)[ext.addr:ext.addr + ext.nbytes]
        vid = self._vids.get(slot)
        if vid is None:
            self.report("uninitialized-read", f"reads tile '{var}' ({_range(ext)}), which nothing in "
                        f"this task has written", op, span, (var,))
            return
        bad = (own != vid).nonzero()
        if bad.numel() == 0:
            return
        lo, hi = ext.addr + int(bad[0]), ext.addr + int(bad[-1]) + 1
        other = int(own[int(bad[0])])
        if other < self._base:
            self.report("uninitialized-read", f"reads tile '{var}' ({_range(ext)}), but bytes "
                        f"[{lo}, {hi}) of it were never written in this task", op, span, (var,))
            return
        w = self._writers[other]
        where = f" at {w.span}" if w.span is not None and w.span.is_known() else ""
        self.report("overlapping-live-buffers",
                    f"reads tile '{var}' ({_range(ext)}), but bytes [{lo}, {hi}) were overwritten by "
                    f"tile '{w.var}' ({_range(w.ext)}, written by {w.op}{where}) while '{var}' was "
                    f"still live", op, span, (var, w.var))

    def write(self, slot: int, ext: Extent, var: str, op: str, span: Span | None) -> None:
        """Tile `var` (slot `slot`) at `ext` received a new value from `op`."""
        vid = self._next
        self._next += 1
        self._vids[slot] = vid
        self._shadow(ext.space)[ext.addr:ext.addr + ext.nbytes] = vid
        self._writers[vid] = _Writer(var, op, span, ext)

    def alias(self, dst_slot: int, src_slot: int) -> None:
        """`dst` now names the value `src` holds, in the same bytes (no copy was made)."""
        vid = self._vids.get(src_slot)
        if vid is None:
            self._vids.pop(dst_slot, None)
        else:
            self._vids[dst_slot] = vid

    def ddr_out_of_bounds(self, err: RuntimeSimError, op: str, span: Span | None) -> SanitizerError:
        """Record a DDR bounds violation (fatal) and return the error to raise."""
        cause = err.__cause__
        text = str(cause) if cause is not None else err.message
        self.report("ddr-out-of-bounds", text, op, span)
        return SanitizerError(self.findings)


# ---- task ordering --------------------------------------------------------------------------------

def first_accesses(func: Any) -> dict[int, tuple[str, Span | None]]:
    """For each tensor parameter (by index) of kernel `func`: the first op reading or writing it
    (directly or through the tensor an op returns after writing it), as (op name, span)."""
    from ...ir.expr import Call as _Call
    from ...ir.stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, ScopeStmt, SeqStmts, WhileStmt
    from ...ir.types import TensorType
    from ...ops.registry import get_op, has_op

    alias: dict[Any, int] = {p: i for i, p in enumerate(func.params) if isinstance(p.type, TensorType)}
    found: dict[int, tuple[str, Span | None]] = {}

    def walk(s: Any) -> None:
        if isinstance(s, SeqStmts):
            for x in s.stmts:
                walk(x)
        elif isinstance(s, ScopeStmt):
            walk(s.body)
        elif isinstance(s, (AssignStmt, EvalStmt)):
            call = s.value if isinstance(s, AssignStmt) else s.expr
            if not (isinstance(call, _Call) and isinstance(call.op, str) and has_op(call.op)):
                return
            spec = get_op(call.op)
            for i in (*spec.reads, *spec.writes):
                if i < len(call.args) and call.args[i] in alias:
                    found.setdefault(alias[call.args[i]], (spec.name, call.span))
            if isinstance(s, AssignStmt) and isinstance(s.var.type, TensorType):
                for i in spec.writes:
                    if i < len(call.args) and call.args[i] in alias:
                        alias[s.var] = alias[call.args[i]]
        elif isinstance(s, (ForStmt, WhileStmt)):
            for ia, rv in zip(s.iter_args, s.return_vars):
                if ia.init in alias:
                    alias[ia] = alias[rv] = alias[ia.init]
            walk(s.body)
        elif isinstance(s, IfStmt):
            walk(s.then_body)
            if s.else_body is not None:
                walk(s.else_body)

    walk(func.body)
    return found


def _pair(t: Task, other: Task) -> tuple[tuple, tuple] | None:
    for a in t.accesses:
        for b in other.accesses:
            if (a[3] or b[3]) and a[1].overlaps(b[1]):
                return a, b
    return None


def _side(t: Task, access: tuple) -> tuple[str, str | None, Span | None]:
    from .regions import describe

    idx, region, reads, writes = access
    func = t.executor.func
    pname = func.params[idx].name
    op, span = first_accesses(func).get(idx, (None, None))
    verb = "reads and writes" if reads and writes else ("writes" if writes else "reads")
    called = t.call_site()
    called = f", {called}" if called else ""
    via = f" with {op} at {span}" if op and span is not None and span.is_known() else ""
    return f"task {t.task_id} ('{t.kernel}'{called}) {verb} '{pname}' {describe(region)}{via}", op, span


def check_ordering(san: Sanitizer, tasks: list[Task]) -> None:
    """Report every pair of tasks with conflicting DDR accesses that no chain of the tasks' actual
    dependencies orders (run after all tasks were submitted)."""
    from .deps import DepTracker

    tracker = DepTracker()
    ancestors: list[int] = []
    for t in tasks:
        anc = 0
        for d in t.deps:
            anc |= ancestors[d] | (1 << d)
        ancestors.append(anc)
        # the kernels of one Group call are ordered by their pipes, not by dependencies
        conflicts = tracker.add(t.task_id, [(r, rd, wr) for _, r, rd, wr in t.accesses], since=t.group)
        for d, kind in sorted(conflicts.items()):
            if (anc >> d) & 1:
                continue
            pair = _pair(t, tasks[d])
            if pair is None:
                continue
            mine, op, span = _side(t, pair[0])
            theirs, _, _ = _side(tasks[d], pair[1])
            san.task = t
            san.report("unordered-conflict", f"{mine}; {theirs}; the accesses conflict ({kind}) but "
                       f"no dependency orders the two tasks", op, span or t.span, (d,), called="")
