"""Weak-visibility mode and its happens-before check (issue 10 item 5; SPEC §8 "Memory ordering").

`DistributedConfig(visibility="weak")` runs a distributed program on memory that keeps the contract
of SPEC §8 and nothing more: data is visible to a peer only once the signal that announces it is.
Upstream's simulator (and our default, `visibility="sc"`) is sequentially consistent, so a program
that notifies before its data is written, or reads a window without waiting, passes there and
fails on hardware. In weak mode:

- a remote write (`pld.tile.remote_store`, `pld.tensor.remote_store`, `pld.tensor.put`, with or
  without `atomic=Add`) is buffered in the writer and lands in the peer's window only at the
  writer's next `pld.system.fence` or `pld.system.notify` (a notify is a fence, then the signal),
  or at the host's next `sync` (end of the call): a peer that reads it without being ordered after
  it reads the old bytes;
- every access to window memory is recorded with the rank's *vector clock*: remote writes and reads,
  and the rank's own loads and stores of its window-bound tensors inside kernels and orchestration
  code (`tile.load` / `tile.store`, `pld.get`'s local destination, ...: the window views a rank
  gets are `WatchedWindow` tensors that report the bytes each torch operation reads or writes);
- a notify publishes the sender's clock on the signal cell (a shared table, `VClockTable`) and ends
  the sender's current *epoch*; a satisfied wait joins the cell's clock into the waiter's. Host
  `sync` points order everything before them before everything after them (*phases*).

At the end of the call the host checks every pair of accesses by different ranks to overlapping
bytes of the same rank's copy of a window, at least one of them a write (two atomic adds commute):
unless one happens before the other, the call fails with a `DistributedVisibilityError` that names
both sides (rank, kernel, task, file:line) and why nothing orders them. Signal cells are not data:
notify / wait never race. Local accesses of the owner are tracked at the granularity torch sees
them (the region a `tile.load` reads, a `tile.store` writes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch

from ...core.errors import RuntimeSimError
from ...core.span import Span

__all__ = ["VISIBILITY_MODES", "DistributedVisibilityError", "Access", "Release", "Race", "WeakMemory",
           "VClockTable", "WatchedWindow", "find_races", "race_report", "VSLOTS"]

VISIBILITY_MODES = ("sc", "weak")
VSLOTS = 256          # signal cells hash to this many vector-clock slots per rank (shared: a rare extra edge)
_MAX_RUNS = 4096      # a strided access with more runs than this is tracked by its bounding range


class DistributedVisibilityError(RuntimeSimError):
    """Weak-visibility mode found accesses that nothing orders (SPEC §8 "Memory ordering").

    Attributes:
        races: the `Race`s found (write / read pairs, or two writes, by different ranks to
            overlapping bytes of one rank's window copy, with no notify -> wait chain between them).
    """

    def __init__(self, message: str, span: Span | None = None, races: list[Race] | None = None) -> None:
        super().__init__(message, span)
        self.races = list(races or [])


# ---- records ---------------------------------------------------------------------------------------

@dataclass
class Access:
    """One access to window memory, as weak mode records it (rides in `DispatchRecord.events`).

    `rank` did it to `owner`'s copy of window buffer `wid`; `runs` are the (start, end) byte ranges in
    that copy; `op` is "write", "add" (atomic accumulate) or "read"; `what` says how ("remote write",
    "remote read", "local store", "local load"); `vc` the rank's vector clock then (its own entry is
    its epoch); `name`/`index` the kernel parameter and element it names, when known.
    """

    rank: int
    owner: int
    wid: int
    runs: tuple[tuple[int, int], ...]
    op: str
    what: str
    vc: tuple[int, ...]
    kernel: str = ""
    task: int = -1
    span: Span | None = None
    name: str | None = None
    index: tuple[int, ...] = ()
    core: str = ""
    kind: str = "access"
    phase: int = 0

    @property
    def epoch(self) -> int:
        return self.vc[self.rank]

    def where(self) -> str:
        loc = f" at {self.span.filename}:{self.span.begin_line}" if self.span is not None and self.span.is_known() else ""
        kern = f"kernel '{self.kernel}' (task {self.task})" if self.kernel else "chip orchestration code"
        return f"{kern}{loc}"

    def region(self) -> str:
        lo, hi = self.runs[0][0], self.runs[-1][1]
        name = f"'{self.name}'{list(self.index)}" if self.name else f"window buffer {self.wid}"
        return f"{name} of rank {self.owner}'s window (bytes [{lo}, {hi}))"


@dataclass
class Release:
    """A notify in weak mode: `rank` ended epoch `epoch` with it (sent to `peer`)."""

    rank: int
    peer: int
    epoch: int
    kernel: str = ""
    span: Span | None = None
    core: str = ""
    kind: str = "release"
    phase: int = 0

    def where(self) -> str:
        loc = f" at {self.span.filename}:{self.span.begin_line}" if self.span is not None and self.span.is_known() else ""
        return f"notify to rank {self.peer}{loc}"


@dataclass
class Race:
    """Two unordered accesses: `first` is the write (or, for two writes, the earlier rank's)."""

    first: Access
    second: Access
    why: str = field(default="")


# ---- rank side -------------------------------------------------------------------------------------

class VClockTable:
    """Vector clocks published on signal cells: int64 `[nranks (cell owner), VSLOTS, nranks]` in a
    shared segment the host creates (`<world>_vc`) and every rank maps."""

    def __init__(self, seg: Any, nranks: int) -> None:
        self.seg, self.nranks = seg, nranks
        self.table = seg.bytes.view(torch.int64)[:nranks * VSLOTS * nranks].view(nranks, VSLOTS, nranks)

    @staticmethod
    def nbytes(nranks: int) -> int:
        return 8 * nranks * VSLOTS * nranks

    @staticmethod
    def name(world_id: str) -> str:
        return f"{world_id}_vc"

    @staticmethod
    def slot(wid: int, offset: int) -> int:
        return (wid * 1000003 + offset // 4) % VSLOTS


_ACTIVE: list[WeakMemory] = []     # this process's weak memory (a rank process has one)


class WeakMemory:
    """One rank's side of weak-visibility mode: its vector clock, its buffered remote writes and its
    recorded accesses (see the module docstring). `comm` is the rank's `RankComm`."""

    def __init__(self, comm: Any, ctl_name: str) -> None:
        self.comm = comm
        self.rank, self.nranks = comm.rank, comm.nranks
        self._ctl_name = ctl_name
        self._table: VClockTable | None = None
        self.quiet = 0
        self.pending: list[tuple[torch.Tensor, torch.Tensor, bool, int]] = []
        self.new_call()
        _ACTIVE[:] = [self]

    def new_call(self) -> None:
        """A new host call: clocks start again (the host cleared the shared table)."""
        self.vc = [0] * self.nranks
        self.vc[self.rank] = 1
        self.pending = []

    @property
    def table(self) -> torch.Tensor:
        if self._table is None:
            from .shm import Segment

            world = self._ctl_name[:-len("_ctl")] if self._ctl_name.endswith("_ctl") else self._ctl_name
            seg = Segment.attach(VClockTable.name(world), VClockTable.nbytes(self.nranks))
            self._table = VClockTable(seg, self.nranks)
        return self._table.table

    # -- the Comm's hooks --
    def buffer_write(self, target: torch.Tensor, data: torch.Tensor, accumulate: bool, peer: int) -> None:
        """A remote write: kept until the next fence / notify / host sync."""
        self.pending.append((target, data.detach().clone().to(target.dtype), accumulate, peer))

    def flush(self) -> None:
        """Make the buffered remote writes visible (in issue order)."""
        pending, self.pending = self.pending, []
        for target, data, accumulate, peer in pending:
            if accumulate:
                with self.comm.locks[peer]:
                    target.add_(data)
            else:
                target.copy_(data)

    def release(self, peer: int, wid: int, offset: int, span: Span | None) -> None:
        """Before a notify to `peer`'s cell at (`wid`, `offset`): fence, publish the clock, new epoch."""
        self.flush()
        row = self.table[peer, VClockTable.slot(wid, offset)]
        mine = torch.tensor(self.vc, dtype=torch.int64)
        with self.comm.locks[peer]:
            torch.maximum(row, mine, out=row)
        kernel, _, core = self._task()
        self.comm.events.append(Release(self.rank, peer, self.vc[self.rank], kernel, span, core))
        self.vc[self.rank] += 1

    def acquire(self, wid: int, offset: int) -> None:
        """After a satisfied wait on this rank's cell at (`wid`, `offset`): join the cell's clock."""
        with self.comm.locks[self.rank]:
            row = self.table[self.rank, VClockTable.slot(wid, offset)].tolist()
        self.vc = [max(a, b) for a, b in zip(self.vc, row)]

    def _task(self) -> tuple[str, int, str]:
        task = self.comm.clock.task
        if task is None:
            return "", -1, ""
        return task.kernel, task.task_id, task.core

    def record(self, view: torch.Tensor, owner: int, wid: int, offset: int, op: str, what: str,
               span: Span | None) -> None:
        """Record an access of `view` (a view of this rank's copy at byte `offset` of window `wid`)
        done to `owner`'s copy."""
        kernel, task, core = self._task()
        name, index = self.comm._name_cell(view, self.comm.clock.task) if view.numel() else (None, ())
        self.comm.events.append(Access(self.rank, owner, wid, byte_runs(view, offset), op, what, tuple(self.vc),
                                       kernel, task, span, name, index, core))

    def local(self, view: torch.Tensor, op: str) -> None:
        """A kernel / orchestration load or store of this rank's own window view `view`."""
        if self.quiet or not view.numel():
            return
        self.quiet += 1
        try:
            for win in self.comm.windows.values():
                base = win.segment.bytes.data_ptr() + self.rank * win.stride
                ptr = view.data_ptr()
                if base <= ptr < base + win.nbytes:
                    what = "local store" if op == "write" else "local load"
                    self.record(view, self.rank, win.wid, ptr - base, op, what, self.comm.clock.op_span())
                    return
        finally:
            self.quiet -= 1


def byte_runs(view: torch.Tensor, offset: int) -> tuple[tuple[int, int], ...]:
    """The byte ranges `view` covers, relative to its first element at byte `offset`."""
    item = view.element_size()
    if view.is_contiguous():
        return ((offset, offset + view.numel() * item),)
    dims = [(n, s) for n, s in zip(view.shape, view.stride()) if n > 1]
    inner = 1
    while dims and dims[-1][1] == inner:     # trailing dims that are contiguous fold into one run
        n, _ = dims.pop()
        inner *= n
    runs = 1
    for n, _ in dims:
        runs *= n
    lo_el = sum((n - 1) * s for n, s in dims if s < 0)
    if runs > _MAX_RUNS:
        hi_el = sum((n - 1) * s for n, s in dims if s > 0)
        return ((offset + lo_el * item, offset + (hi_el + inner) * item),)
    starts = torch.zeros((), dtype=torch.int64)
    for n, s in dims:
        starts = (starts.unsqueeze(-1) + torch.arange(n, dtype=torch.int64) * s).flatten()
    out: list[tuple[int, int]] = []
    for st in sorted(int(x) for x in starts.flatten().tolist()):
        a, b = offset + st * item, offset + (st + inner) * item
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)


# ---- watched window views --------------------------------------------------------------------------

_META = frozenset({
    "size", "stride", "dim", "numel", "element_size", "data_ptr", "storage_offset", "is_contiguous",
    "untyped_storage", "__len__", "is_shared", "nelement", "ndimension", "is_floating_point", "is_complex",
    "__repr__", "__format__", "__hash__", "__eq__", "__bool__", "__get__", "__set__", "has_names",
    "_is_view", "is_pinned", "get_device", "type", "__reduce_ex__", "__deepcopy__", "share_memory_",
    "_typed_storage", "storage", "__dlpack__", "__array__", "is_set_to", "__index__",
})


def _is_write(name: str, i: int) -> bool:
    """Argument `i` of torch function `name` is written: the self of an in-place op (`add_`, `copy_`)."""
    return i == 0 and name.endswith("_") and not name.endswith("__")


class WatchedWindow(torch.Tensor):
    """A rank's view of its own window copy in weak mode: every torch operation on it (or on views
    of it) reports the bytes it reads or writes to the rank's `WeakMemory`; results that are not
    views of the window are plain tensors. Metadata (shape, strides, pointers) is not an access."""

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
        if name in _META or not _ACTIVE:
            return out
        mem = _ACTIVE[0]
        if mem.quiet:
            return _rewrap(out, args)
        for i, a in enumerate(args):
            if not isinstance(a, WatchedWindow):
                continue
            plain = a.as_subclass(torch.Tensor)
            if name == "__setitem__" and i == 0:
                with torch._C.DisableTorchFunctionSubclass():
                    mem.local(plain[args[1]], "write")
            elif _is_write(name, i):
                mem.local(plain, "write")
            elif not _views_of(out, plain):
                mem.local(plain, "read")
        o = kwargs.get("out")
        if isinstance(o, WatchedWindow):
            mem.local(o.as_subclass(torch.Tensor), "write")
        return _rewrap(out, args)


def _views_of(out: Any, base: torch.Tensor) -> bool:
    """Whether `out` is a tensor viewing `base`'s memory (a view op: no access)."""
    if not isinstance(out, torch.Tensor):
        return False
    try:
        return out.untyped_storage().data_ptr() == base.untyped_storage().data_ptr() and out is not base
    except RuntimeError:
        return False


def _rewrap(out: Any, args: tuple) -> Any:
    """Views of a watched window stay watched; everything else is a plain tensor."""
    if isinstance(out, torch.Tensor):
        src = next((a for a in args if isinstance(a, WatchedWindow)), None)
        same = src is not None and _views_of(out, src.as_subclass(torch.Tensor))
        if same or (src is not None and out is src):
            return out if isinstance(out, WatchedWindow) else out.as_subclass(WatchedWindow)
        return out.as_subclass(torch.Tensor) if isinstance(out, WatchedWindow) else out
    if isinstance(out, (tuple, list)):
        return type(out)(_rewrap(o, args) for o in out)
    return out


def watch(view: torch.Tensor) -> torch.Tensor:
    """`view` (a rank's window view) as a `WatchedWindow`."""
    return view.as_subclass(WatchedWindow)


# ---- host side: the check --------------------------------------------------------------------------

def _overlap(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> tuple[int, int] | None:
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo < hi:
            return lo, hi
        if a[i][1] <= b[j][1]:
            i += 1
        else:
            j += 1
    return None


def _before(x: Access, y: Access) -> bool:
    """x happens before y: an earlier host phase, or y's clock covers x's epoch."""
    if x.phase != y.phase:
        return x.phase < y.phase
    return x.vc[x.rank] <= y.vc[x.rank]


def find_races(events: Iterable[Any], limit: int = 20) -> list[Race]:
    """The unordered conflicting pairs among `events` (`Access` / `Release` records of one call;
    other objects are ignored), at most `limit`, one per pair of source lines."""
    accesses = [e for e in events if isinstance(e, Access)]
    releases = [e for e in events if isinstance(e, Release)]
    groups: dict[tuple[int, int], list[Access]] = {}
    for a in accesses:
        groups.setdefault((a.owner, a.wid), []).append(a)
    races: list[Race] = []
    seen: set[tuple] = set()
    for group in groups.values():
        for i, x in enumerate(group):
            for y in group[i + 1:]:
                if x.rank == y.rank or (x.op == "read" and y.op == "read") or (x.op == "add" and y.op == "add"):
                    continue
                if _before(x, y) or _before(y, x) or _overlap(x.runs, y.runs) is None:
                    continue
                w, r = (x, y) if x.op != "read" or y.op == "read" else (y, x)
                if w.op != "read" and r.op != "read" and w.rank > r.rank:
                    w, r = r, w
                key = (w.rank, _line(w), r.rank, _line(r))
                if key in seen:
                    continue
                seen.add(key)
                races.append(Race(w, r, _why(w, r, releases)))
                if len(races) >= limit:
                    return races
    return races


def _line(a: Access) -> Any:
    return (a.span.filename, a.span.begin_line) if a.span is not None else (a.kernel, a.what)


def _why(w: Access, r: Access, releases: list[Release]) -> str:
    knew = r.vc[w.rank]
    if r.op != "read":
        return ("nothing orders the two writes: neither rank waited for a notify the other sent after its "
                "write")
    if knew == 0:
        return (f"rank {r.rank} had not waited for any notify from rank {w.rank} (directly or through other "
                f"ranks) since the host's last sync when it read: a read without a wait")
    if knew >= w.epoch:     # the read came first and the write was not ordered after it
        return (f"the write is not ordered after the read: rank {w.rank} wrote without waiting for rank "
                f"{r.rank} to be done reading")
    rel = next((x for x in releases if x.rank == w.rank and x.epoch == knew and x.phase == w.phase), None)
    via = f" ({rel.where()})" if rel is not None else ""
    return (f"rank {r.rank} waited for rank {w.rank}'s notify{via}, but rank {w.rank} wrote the data after "
            f"that notify: no fence/notify between the write and the notify the reader waited on "
            f"(notify before data)")


def race_report(races: list[Race]) -> str:
    """The text of a `DistributedVisibilityError` for `races` (see docs/distributed.md)."""
    n = len(races)
    lines = [f"weak visibility: {n} race{'s' if n != 1 else ''} between ranks (accesses to the same window "
             f"bytes, one of them a write, that no notify -> wait chain orders)"]
    for race in races:
        w, r = race.first, race.second
        lines.append(f"  rank {w.rank}: {w.what} in {w.where()} wrote {w.region()}")
        verb = "read" if r.op == "read" else "wrote"
        lines.append(f"  rank {r.rank}: {r.what} in {r.where()} {verb} {r.region()}")
        lines.append(f"    why: {race.why}")
    return "\n".join(lines)


def check_records(records: Iterable[Any]) -> None:
    """The weak-mode check of one call's `DispatchRecord`s (each with `.phase` and `.events`).

    Raises:
        DistributedVisibilityError: some accesses race (the report lists them).
    """
    events = []
    for rec in records:
        phase = getattr(rec, "phase", 0)
        for e in rec.events:
            if isinstance(e, (Access, Release)):
                e.phase = phase
                events.append(e)
    races = find_races(events)
    if races:
        span = races[0].second.span
        raise DistributedVisibilityError(race_report(races), span, races)


def weak_mode(config: Any) -> bool:
    """Whether RunConfig `config` asks for weak visibility."""
    dist = getattr(config, "distributed_config", None)
    return getattr(dist, "visibility", "sc") == "weak"


def flush_rank(comm: Any) -> None:
    """Run on a rank at a host sync (a "call" message): its buffered remote writes land."""
    if comm.weak is not None:
        comm.weak.flush()


# ---- the world's hooks (host side) -----------------------------------------------------------------

def world_start(world: Any) -> None:
    """The world starts: create the shared vector-clock table (weak mode only)."""
    if world.dist.visibility != "weak":
        return
    from .shm import Segment

    world._vc_seg = Segment.create(VClockTable.name(world.id), VClockTable.nbytes(world.nranks))


def world_close(world: Any) -> None:
    seg = getattr(world, "_vc_seg", None)
    if seg is not None:
        seg.unlink()
        seg.close()
        world._vc_seg = None


def world_begin_call(world: Any) -> None:
    """A host call begins: clocks and phases start again."""
    world._vis_phase = 0
    world.__dict__.pop("_credit_marks", None)   # checks.py: credit signals are marked per call
    seg = getattr(world, "_vc_seg", None)
    if seg is not None:
        seg.bytes.zero_()


def world_synced(world: Any) -> None:
    """A host sync finished (every outstanding dispatch is done): in weak mode the ranks' buffered
    writes land; the dispatches collected so far belong to the phase that ends here."""
    phase = getattr(world, "_vis_phase", 0)
    for rec in world.records:
        if not hasattr(rec, "phase"):
            rec.phase = phase
    world._vis_phase = phase + 1
    if world.dist.visibility == "weak" and world.procs:
        n = len(world.records)
        for r in range(world.nranks):
            world.send(r, "call", flush_rank, [])
        world._collect({})
        del world.records[n:]
