"""Checks at the end of a distributed call (issue 10 item 5; SPEC §8 "Collectives", "typical failures").

After every host call (when `DistributedConfig.end_of_call_checks`, the default) the host checks,
from what the ranks recorded during the call:

- **credit leaks**: every cell of a *credit signal* is back to zero on every rank. Collective
  signals are self-clearing (each rank adds -g to its own cells at the end, SPEC §8), so a non-zero
  cell after the call is a leaked credit that the next call using the signal would consume by
  mistake ("stale credits on signal reuse"). Only signals marked as credit signals are checked —
  by the collectives (`mark_credit`, from the code that runs a collective on a rank) or by the host
  driver (`mark_credit_window(rt, window, name)`) — because raw `pld.notify` / `pld.wait` counters
  are not reset (SPEC §8) and may legitimately end non-zero;
- **collective sequences**: every rank that ran a collective ran the same collectives, in the same
  order, with the same signal shapes and attributes (`record_collective`, called once per rank and
  collective by the code that runs it); a difference is the usual cause of a deadlock or of wrong
  numbers in a later collective, and the report names the first call where ranks diverge;
- **races** (weak visibility mode only): `visibility.check_records`.

A remote access outside a window is checked where it happens: `RankComm.locate` raises a
`RuntimeSimError` located at the `pld` op (the tensor is not in a window, or the region runs past
the end of the window buffer), and the op's own region check catches offsets outside the
window-bound tensor.

Errors: `DistributedCheckError` (a `RuntimeSimError`) with `kind` "credit_leak" or
"collective_mismatch" and the facts as data (`details`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import torch

from ...core.errors import RuntimeSimError
from ...core.span import Span
from . import visibility

__all__ = ["DistributedCheckError", "CreditSignal", "CollectiveCall", "mark_credit", "mark_credit_window",
           "record_collective", "check_collectives", "check_credits", "end_of_call"]


class DistributedCheckError(RuntimeSimError):
    """An end-of-call check failed (see the module docstring).

    Attributes:
        kind: "credit_leak" or "collective_mismatch".
        details: credit_leak: (signal name, rank, cell index, value) per non-zero cell;
            collective_mismatch: the `CollectiveCall` (or None when the rank ran fewer) of every
            rank at the first call index where they differ.
    """

    def __init__(self, message: str, span: Span | None = None, kind: str = "", details: Any = None) -> None:
        super().__init__(message, span)
        self.kind, self.details = kind, details


@dataclass
class CreditSignal:
    """A region of a window marked as a credit signal (rides in `DispatchRecord.events`): `shape` /
    `stride` elements of `dtype` at byte `offset` of window buffer `wid` (the same on every rank)."""

    rank: int
    wid: int
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype
    name: str
    collective: str = ""
    span: Span | None = None
    kind: str = "credit"
    core: str = ""


@dataclass
class CollectiveCall:
    """One collective as a rank ran it: `name` (IR name, e.g. "pld.allreduce"), `signature` (signal
    shapes and attributes that must agree across ranks, as a tuple of strings)."""

    rank: int
    name: str
    signature: tuple[str, ...]
    span: Span | None = None
    kernel: str = ""
    kind: str = "collective"
    core: str = ""

    def describe(self) -> str:
        where = f" at {self.span.filename}:{self.span.begin_line}" if self.span is not None and self.span.is_known() else ""
        sig = f"({', '.join(self.signature)})" if self.signature else "()"
        kern = f" in kernel '{self.kernel}'" if self.kernel else ""
        return f"{self.name}{sig}{kern}{where}"


# ---- rank side: what the collectives record --------------------------------------------------------

def _task_kernel(comm: Any) -> tuple[str, str]:
    task = comm.clock.task
    return (task.kernel, task.core) if task is not None else ("", "")


def mark_credit(comm: Any, local: torch.Tensor, name: str, collective: str = "", span: Span | None = None) -> None:
    """Mark window view `local` (a signal of this rank) as a credit signal: it must be all zero on
    every rank at the end of the call. `comm` is the rank's `RankComm`.

    Raises RuntimeSimError (located at `span`) when `local` is not in a window."""
    span = comm._span(span)
    win, off = comm.locate(local, "credit signal", span)
    _, core = _task_kernel(comm)
    comm.events.append(CreditSignal(comm.rank, win.wid, off, tuple(local.shape), tuple(local.stride()), local.dtype,
                                    name, collective, span, core=core))


def record_collective(comm: Any, name: str, signature: Iterable[Any] = (), span: Span | None = None) -> None:
    """Record that this rank runs collective `name` with `signature` (what must agree across ranks)."""
    span = comm._span(span)
    kernel, core = _task_kernel(comm)
    comm.events.append(CollectiveCall(comm.rank, name, tuple(str(s) for s in signature), span, kernel, core=core))


def mark_credit_window(rt: Any, window: Any, name: str, collective: str = "") -> None:
    """Host driver side: mark `window` (a `WindowTensor` of `rt.window`) as a credit signal of this
    call (checked on every rank at the end of the call)."""
    item = window.dtype.to_torch()
    shape = tuple(int(d) for d in window.shape)
    stride, n = [], 1
    for d in reversed(shape):
        stride.append(n)
        n *= d
    marks = rt._world.__dict__.setdefault("_credit_marks", [])
    marks.append(CreditSignal(-1, window.buffer.wid, window.offset, shape, tuple(reversed(stride)), item, name,
                              collective))


def on_dispatch(rt: Any, program: str, args: list[Any]) -> None:
    """Host side, before a dispatch: the signal of a builtin host collective (a chip program named
    `pld_<collective>_...` with a parameter `signal`, `pypto.runtime.dist.builtin`) is a credit signal."""
    if not program.startswith("pld_"):
        return
    cp = rt._world.programs.get(program)
    entry = getattr(cp, "entry_function", None)
    names = [p.name for p in getattr(entry, "params", ())]
    if "signal" not in names or names.index("signal") >= len(args):
        return
    sig = args[names.index("signal")]
    if hasattr(sig, "buffer") and hasattr(sig, "dtype"):
        marks = rt._world.__dict__.setdefault("_credit_marks", [])
        if not any(m.wid == sig.buffer.wid and m.offset == sig.offset for m in marks):
            coll = "pld." + program.removeprefix("pld_").split("_")[0]
            for full in ("all_to_all_v", "all_to_all", "reduce_scatter"):
                if program.startswith(f"pld_{full}"):
                    coll = f"pld.{full}"
                    break
            mark_credit_window(rt, sig, "signal", collective=f"host {coll} ('{program}')")


# ---- kernel-level collectives, found in the lowered kernel ------------------------------------------

_KERNEL_COLLECTIVES: dict[int, tuple[Any, list[tuple[str, int, str, Span | None]]]] = {}


def kernel_collectives(func: Any) -> list[tuple[str, int, str, Span | None]]:
    """The collectives a lowered kernel `func` runs, in program order: (IR name, index of its signal
    parameter, the signal's shape as text, the collective's source span).

    LowerCollectives (`pypto.passes.lower_collectives`) opens each lowered collective with
    `<short><k>_ctx = pld.get_comm_ctx(signal)` (`_SHORT`: "ar" allreduce, "bar" barrier, ...; k
    counts the kernel's collectives), located at the collective's call; that statement is what is
    looked for. Cached per function."""
    hit = _KERNEL_COLLECTIVES.get(id(func))
    if hit is not None and hit[0] is func:
        return hit[1]
    found: list[tuple[int, str, int, str, Span | None]] = []
    try:
        import re

        from ...ir.expr import Call
        from ...ir.stmt import AssignStmt
        from ...ir.visitor import stmt_children
        from ...passes.lower_collectives import _SHORT

        names = {v: f"pld.{k}" for k, v in _SHORT.items()}
        pat = re.compile(rf"^({'|'.join(sorted(names, key=len, reverse=True))})(\d+)_ctx(_\d+)?$")
        params = list(func.params)

        def walk(st: Any) -> None:
            if isinstance(st, AssignStmt) and isinstance(st.value, Call) and st.value.op == "pld.get_comm_ctx":
                m = pat.match(st.var.name)
                sig = st.value.args[0] if st.value.args else None
                if m and sig in params:
                    shape = "[" + ", ".join(str(getattr(d, "value", getattr(d, "name", d)))
                                            for d in sig.type.shape) + "]"
                    found.append((int(m.group(2)), names[m.group(1)], params.index(sig), shape, st.span))
            for c in stmt_children(st):
                walk(c)

        walk(func.body)
    except Exception:   # noqa: BLE001 - no lowering pass, or another IR shape: nothing to check
        found = []
    out = [(name, idx, shape, span) for _, name, idx, shape, span in sorted(found, key=lambda x: x[0])]
    _KERNEL_COLLECTIVES[id(func)] = (func, out)
    return out


def on_task(comm: Any, task: Any) -> None:
    """Rank side, as a kernel task starts: record its collectives and mark their signals as credit
    signals (`kernel_collectives`)."""
    func = getattr(getattr(task, "executor", None), "func", None)
    if func is None or not getattr(task, "args", None):
        return
    for name, idx, shape, span in kernel_collectives(func):
        record_collective(comm, name, [f"signal {shape}"], span)
        if idx < len(task.args):
            try:
                mark_credit(comm, task.args[idx], func.params[idx].name, name, span)
            except RuntimeSimError:   # not a window: the collective itself reports it
                pass


# ---- host side -------------------------------------------------------------------------------------

def check_collectives(calls: Iterable[CollectiveCall], nranks: int) -> None:
    """Every rank ran the same sequence of collectives (by name and signature).

    `calls` in each rank's program order (ranks may interleave). Ranks that ran no collective at all
    count too when some rank ran one (a collective needs every rank).

    Raises DistributedCheckError("collective_mismatch") naming the first call where ranks differ."""
    seqs: list[list[CollectiveCall]] = [[] for _ in range(nranks)]
    for c in calls:
        seqs[c.rank].append(c)
    if not any(seqs):
        return
    longest = max(len(s) for s in seqs)
    for i in range(longest):
        at = [s[i] if i < len(s) else None for s in seqs]
        keys = {(c.name, c.signature) if c is not None else None for c in at}
        if len(keys) == 1:
            continue
        lines = [f"collectives: the ranks did not run the same sequence of collectives (every rank must call the "
                 f"same collectives in the same order with the same signal shapes, SPEC §8); they differ at "
                 f"collective #{i + 1} of the call:"]
        for r, c in enumerate(at):
            ran = c.describe() if c is not None else f"nothing (it ran {len(seqs[r])} collective" \
                f"{'s' if len(seqs[r]) != 1 else ''} in this call)"
            lines.append(f"  rank {r}: {ran}")
        span = next((c.span for c in at if c is not None and c.span is not None), None)
        raise DistributedCheckError("\n".join(lines), span, "collective_mismatch", at)


def _cells(t: torch.Tensor) -> list[tuple[tuple[int, ...], int]]:
    nz = torch.nonzero(t, as_tuple=False).tolist()
    return [(tuple(ix), int(t[tuple(ix)].item())) for ix in nz]


def check_credits(world: Any, marks: Iterable[CreditSignal]) -> None:
    """Every cell of every credit signal in `marks` is zero on every rank of `world`.

    Raises DistributedCheckError("credit_leak") naming the signal and its non-zero cells."""
    from .comm import WindowMap

    seen: set[tuple] = set()
    for m in marks:
        key = (m.wid, m.offset, m.shape, m.stride, m.dtype)
        if key in seen or m.wid not in world.windows:
            continue
        seen.add(key)
        spec, seg = world.windows[m.wid]
        win = WindowMap(spec.wid, spec.nbytes, spec.stride, seg)
        bad = []
        for r in range(world.nranks):
            bad += [(m.name, r, ix, v) for ix, v in _cells(win.view(r, m.offset, m.shape, m.stride, m.dtype))]
        if not bad:
            continue
        by = f" (used by {m.collective}" + (f" at {m.span.filename}:{m.span.begin_line})"
                                              if m.span is not None and m.span.is_known() else ")") \
            if m.collective else ""
        lines = [f"credit leak: signal '{m.name}'{by} is not back to zero at the end of the call: a later call "
                 f"that reuses it starts with stale credits (collective signals are self-clearing, SPEC §8)"]
        shown = bad[:16]
        for _, r, ix, v in shown:
            lines.append(f"  rank {r}: {m.name}{list(ix)} = {v}")
        if len(bad) > len(shown):
            lines.append(f"  ... and {len(bad) - len(shown)} more non-zero cells")
        raise DistributedCheckError("\n".join(lines), m.span, "credit_leak", bad)


def end_of_call(world: Any) -> None:
    """The checks of one finished host call of `world` (every dispatch done, windows still mapped).

    Raises DistributedVisibilityError (weak mode) or DistributedCheckError."""
    records = list(world.records)
    marks = list(world.__dict__.pop("_credit_marks", []))
    if world.dist.visibility == "weak":
        visibility.check_records(records)
    if not world.dist.end_of_call_checks:
        return
    calls: list[CollectiveCall] = []
    for rec in records:   # one pass; most events are CommEvents (one per remote access)
        for e in rec.events:
            if isinstance(e, CollectiveCall):
                calls.append(e)
            elif isinstance(e, CreditSignal):
                marks.append(e)
    check_collectives(calls, world.nranks)
    check_credits(world, marks)
