"""`World`: the rank processes of a distributed run and the host's side of their messages.

`World(programs, config, dist_config).start()` creates the control block (`control.Control`, a
`pypto_<pid>_<id>_ctl` shared segment), one lock and one bell (semaphore) per rank, one inbox per
rank and one shared outbox,
and starts one process per rank (`rank.rank_main`; `DistributedConfig.start_method`, default "fork"
where available). The host then:

- `alloc_window(nbytes)`: a window buffer — one shared segment with a zeroed copy per rank, each
  copy 64-byte aligned (`pypto_..._w<k>`);
- `send(rank, kind, what, args)`: queue a chip program run (or, for tests, a function call) on a
  rank; ranks run their messages one at a time, in order;
- `wait_all()`: wait for every outstanding message. The first failure sets the abort flag (ranks
  blocked in a wait stop), the others are collected, and the failing rank's error is raised with
  "rank r (device d)" in front. A rank process that dies (a crash, a kill) fails the call with a
  `RankProcessError` naming the rank and the signal. When every busy rank is blocked in a wait and
  no rank made progress for `deadlock_timeout` seconds, the call ends with a
  `DistributedDeadlockError` listing, per rank, the wait it is blocked in;
- `close()`: stop the processes (terminate them if they do not stop) and unlink every segment.

Simulated time: every host call starts at cycle 0 on every rank; a rank's clock continues across
its dispatches within the call, and `sync_clock()` (a host `sync`) lets the next dispatches start no
earlier than the latest rank's end.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import shutil
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...core.errors import PyPTOError, RuntimeSimError
from ..config import DistributedConfig, RunConfig
from ..dfx import DFX_DIR
from . import visibility
from .comm import BlockedWait, CommEvent
from .control import ABORT_CANCEL, ABORT_DEADLOCK, ABORT_ERROR, BLOCKED, Control
from .rank import TaskSpan, WindowSpec, rank_main
from .shm import Segment, new_world_id

__all__ = ["World", "DistributedDeadlockError", "RankProcessError", "DispatchRecord"]

_POLL = 0.02


class DistributedDeadlockError(RuntimeSimError):
    """Every busy rank is blocked in a wait that nothing can satisfy (SPEC §8 "typical failures").

    Attributes:
        blocked: one `BlockedWait` per blocked rank (kernel, source line, signal, cell, expected
            and current value, the ranks that notified the cell in this call).
        idle: ranks with nothing left to run.
    """

    def __init__(self, message: str, span: Any = None, blocked: list[BlockedWait] | None = None,
                 idle: list[int] | None = None) -> None:
        super().__init__(message, span)
        self.blocked = list(blocked or [])
        self.idle = list(idle or [])


class RankProcessError(RuntimeSimError):
    """A rank process died (crashed or was killed) during a call; `rank` and `signal` (name, or
    None for a non-zero exit) say which and how."""

    def __init__(self, message: str, rank: int = -1, signal_name: str | None = None) -> None:
        super().__init__(message)
        self.rank, self.signal = rank, signal_name


class DispatchRecord:
    """One finished dispatch: `rank`, `program`, its tasks on the world clock (`TaskSpan`), its
    cross-rank `events` (`CommEvent`), the rank's clock at its end (`end`, cycles) and the CPU time
    the rank process spent simulating it (`cpu_seconds`, `time.process_time`: wall-clock cost of
    the simulation, not simulated time)."""

    def __init__(self, rank: int, program: str, tasks: list[TaskSpan], events: list[CommEvent], end: int,
                 cpu_seconds: float = 0.0) -> None:
        self.rank, self.program, self.tasks, self.events, self.end = rank, program, tasks, events, end
        self.cpu_seconds = cpu_seconds

    def __repr__(self) -> str:
        return f"DispatchRecord(rank={self.rank}, program={self.program!r}, tasks={len(self.tasks)}, end={self.end})"


def _default_method() -> str:
    return "fork" if "fork" in mp.get_all_start_methods() and sys.platform != "darwin" else "spawn"


class World:
    """The processes and shared memory of one distributed worker (see the module docstring).

    Args:
        programs: chip program name -> `CompiledProgram`.
        config: the RunConfig the chip programs run with (sanitize, rings, ...).
        dist: the `DistributedConfig` (ranks, start method, deadlock timeout).
    """

    def __init__(self, programs: dict[str, Any], config: RunConfig | None, dist: DistributedConfig,
                 output_dir: str | os.PathLike | None = None) -> None:
        self.programs, self.config, self.dist = programs, config, dist
        self.output_dir = os.fspath(output_dir) if output_dir else None
        self._call = 0
        self.nranks = dist.world_size
        self.id = new_world_id()
        self.procs: list[Any] = []
        self.windows: dict[int, tuple[WindowSpec, Segment]] = {}
        self.records: list[DispatchRecord] = []
        self.broken: str | None = None
        self._next_wid = 0
        self._seq = 0
        self._pending: dict[int, tuple[int, str]] = {}   # seq -> (rank, what)
        self._clock = 0     # host clock: dispatches start no earlier (cycles)
        self._ends = [0] * self.nranks
        self._ctl: Control | None = None

    # ---- lifecycle -------------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return bool(self.procs)

    def start(self) -> World:
        """Create the control block and start the rank processes (idempotent)."""
        if self.procs:
            return self
        method = self.dist.start_method or _default_method()
        ctx = mp.get_context(method)
        self._ctl = Control.create(f"{self.id}_ctl", self.nranks)
        try:
            visibility.world_start(self)   # weak visibility: the shared vector-clock table
            self._locks = [ctx.Lock() for _ in range(self.nranks)]
            self._bells = [ctx.Semaphore(0) for _ in range(self.nranks)]
            self._inboxes = [ctx.Queue() for _ in range(self.nranks)]
            self._outbox = ctx.Queue()
            programs = self.programs if method == "fork" else _program_spec(self.programs)
            for r in range(self.nranks):
                p = ctx.Process(target=rank_main, name=f"pypto-rank{r}", daemon=True,
                                args=(r, self.nranks, self._ctl.seg.name, (self._locks, self._bells), programs,
                                      self.config,
                                      self.output_dir, self._inboxes[r], self._outbox))
                p.start()
                self.procs.append(p)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Stop the rank processes and unlink every segment of this world (idempotent)."""
        procs, self.procs = self.procs, []
        if procs and self._ctl is not None:
            self._ctl.set_abort(ABORT_CANCEL)
        for r in range(len(procs)):
            try:
                self._inboxes[r].put(("stop",))
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 2.0
        for p in procs:
            p.join(max(0.0, deadline - time.monotonic()))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(1.0)
        for q in getattr(self, "_inboxes", []) + ([self._outbox] if hasattr(self, "_outbox") else []):
            q.close()
            q.cancel_join_thread()
        for wid in list(self.windows):
            self.free_window(wid)
        visibility.world_close(self)
        if self._ctl is not None:
            self._ctl.seg.unlink()
            self._ctl.seg.close()
            self._ctl = None
        self._pending.clear()
        self._locks = self._bells = []   # (named semaphores under spawn: unlinked as they go)

    # ---- windows ---------------------------------------------------------------------------------
    def alloc_window(self, nbytes: int) -> WindowSpec:
        """A zeroed window buffer of `nbytes` bytes per rank. Raises ValueError for nbytes < 1."""
        nbytes = int(nbytes)
        if nbytes < 1:
            raise ValueError(f"a window buffer needs at least 1 byte, got {nbytes}")
        stride = -(-nbytes // 64) * 64
        wid = self._next_wid
        self._next_wid += 1
        seg = Segment.create(f"{self.id}_w{wid}", stride * self.nranks)
        spec = WindowSpec(wid, seg.name, nbytes, stride, seg.size)
        self.windows[wid] = (spec, seg)
        return spec

    def window_segment(self, wid: int) -> Segment:
        return self.windows[wid][1]

    def free_window(self, wid: int) -> None:
        spec, seg = self.windows.pop(wid)
        seg.unlink()
        seg.close()

    # ---- messages --------------------------------------------------------------------------------
    def begin_call(self) -> None:
        """Start of a host call: clear the abort flag and the signal sender masks."""
        self._check_usable()
        self.start()
        assert self._ctl is not None
        self._ctl.clear_abort()
        self._ctl.clear_stamps()
        self._clock, self._ends = 0, [0] * self.nranks
        self.records = []
        self._call += 1
        visibility.world_begin_call(self)
        if self.output_dir is not None:   # per-rank DFX outputs describe the last call only
            for old in Path(self.output_dir, DFX_DIR).glob("rank*"):
                shutil.rmtree(old, ignore_errors=True)
            Path(self.output_dir, DFX_DIR, "swimlane_merged.json").unlink(missing_ok=True)

    def send(self, rank: int, kind: str, what: Any, args: list[Any]) -> int:
        """Queue `("run", program)` or `("call", fn)` with `args` on `rank`; returns its sequence number."""
        self._check_usable()
        self.start()
        self._seq += 1
        specs = [spec for spec, _ in self.windows.values()]
        self._pending[self._seq] = (rank, what if isinstance(what, str) else getattr(what, "__name__", "call"))
        self._inboxes[rank].put((kind, self._seq, what, list(args), specs, self._clock, self._call))
        return self._seq

    def sync_clock(self) -> None:
        """A host-side sync: later dispatches start no earlier than the latest rank's clock."""
        self._clock = max([self._clock, *self._ends])

    def wait_all(self) -> dict[int, Any]:
        """Wait for every outstanding message; return {seq: result}. Raises the first failure (see
        the module docstring); a KeyboardInterrupt aborts the ranks, closes the world and propagates."""
        results: dict[int, Any] = {}
        try:
            self._collect(results)
            visibility.world_synced(self)   # phases; weak visibility: buffered writes land
        except KeyboardInterrupt:
            self.broken = "interrupted"
            self.close()
            raise
        return results

    def _collect(self, results: dict[int, Any]) -> None:
        ctl = self._ctl
        assert ctl is not None
        failure: BaseException | None = None
        blocked: list[BlockedWait] = []
        stuck_since, progress = time.monotonic(), ctl.progress()
        abort_at: float | None = None
        while self._pending:
            try:
                msg = self._outbox.get(timeout=_POLL)
            except queue.Empty:
                msg = None
            if msg is not None:
                status, rank, seq, payload, extra = msg
                _, what = self._pending.pop(seq, (rank, "?"))
                if status == "done":
                    end, events, cpu = extra
                    self._ends[rank] = max(self._ends[rank], end)
                    tasks = payload if isinstance(payload, list) and all(isinstance(t, TaskSpan) for t in payload) else []
                    self.records.append(DispatchRecord(rank, what, tasks, events, end, cpu))
                    results[seq] = payload
                elif status == "aborted":
                    if payload is not None:
                        blocked.append(payload)
                elif failure is None:
                    failure = _rank_error(payload, extra, rank, self.dist.device_ids[rank], what)
                    ctl.set_abort(ABORT_ERROR)
                    abort_at = time.monotonic()
                continue
            dead = self._dead_rank()
            if dead is not None:
                failure = failure or dead
                self.broken = str(dead)
                self.close()
                break
            now = time.monotonic()
            if abort_at is not None:
                if now - abort_at > self.dist.deadlock_timeout + 5.0:   # a rank ignores the abort
                    self.broken = "a rank did not stop after an abort"
                    self.close()
                    break
                continue
            cur = ctl.progress()
            busy = sorted({r for r, _ in self._pending.values()})
            if cur != progress or not busy or any(ctl.state(r) != BLOCKED for r in busy):
                stuck_since, progress = now, cur
            elif now - stuck_since >= self.dist.deadlock_timeout:
                ctl.set_abort(ABORT_DEADLOCK)
                abort_at = now
                failure = "deadlock"    # type: ignore[assignment]
        if failure == "deadlock":
            raise self._deadlock_error(blocked)
        if failure is not None:
            raise failure

    def _deadlock_error(self, blocked: list[BlockedWait]) -> DistributedDeadlockError:
        blocked = sorted(blocked, key=lambda b: b.rank)
        busy = {b.rank for b in blocked}
        idle = [r for r in range(self.nranks) if r not in busy]
        lines = [f"deadlock: every busy rank has been blocked in a wait for {self.dist.deadlock_timeout:g} s "
                 f"with nothing changing"]
        for b in blocked:
            lines.append("  " + b.describe())
            never = [r for r in range(self.nranks) if r not in b.senders and r != b.rank]
            if never:
                lines.append(f"    no notify reached this cell from rank{'s' if len(never) > 1 else ''} "
                             f"{', '.join(map(str, never))} in this call")
                done = [r for r in never if r in idle]   # they can no longer send it
                if done:
                    lines[-1] += (f"; rank{'s' if len(done) > 1 else ''} {', '.join(map(str, done))} "
                                  f"finished without notifying it: the likely missing sender"
                                  f"{'s' if len(done) > 1 else ''}")
        if idle:
            lines.append(f"  rank {idle[0]} has" if len(idle) == 1 else
                         f"  ranks {', '.join(map(str, idle))} have")
            lines[-1] += " nothing left to run (finished, or waiting for the host to dispatch)"
        span = blocked[0].span if blocked else None
        return DistributedDeadlockError("\n".join(lines), span, blocked, idle)

    def _dead_rank(self) -> RankProcessError | None:
        for r, p in enumerate(self.procs):
            if p.exitcode is not None:
                what = [w for rr, w in self._pending.values() if rr == r]
                doing = f" while running '{what[0]}'" if what else ""
                code = p.exitcode
                if code < 0:
                    try:
                        sig = signal.Signals(-code).name
                    except ValueError:
                        sig = f"signal {-code}"
                    return RankProcessError(f"rank {r} (device {self.dist.device_ids[r]}, pid {p.pid}) was "
                                            f"killed by {sig}{doing}", r, sig)
                return RankProcessError(f"rank {r} (device {self.dist.device_ids[r]}, pid {p.pid}) exited "
                                        f"with code {code}{doing}", r, None)
        return None

    def _check_usable(self) -> None:
        if self.broken is not None:
            raise RuntimeSimError(f"this distributed worker cannot run any more ({self.broken}); close it "
                                  f"and prepare a new one")


def _rank_error(exc: BaseException, tb: str, rank: int, device: int, what: str) -> BaseException:
    """The error a rank sent back, with "rank r (device d)" in front of its message."""
    where = f"rank {rank} (device {device}), running '{what}': "
    if isinstance(exc, PyPTOError):
        exc.message = where + exc.message
        exc.args = (exc.message,)
        exc.rank = rank   # type: ignore[attr-defined]
        return exc
    err = RuntimeSimError(f"{where}{type(exc).__name__}: {exc}\nrank {rank} traceback:\n{tb}")
    err.rank = rank   # type: ignore[attr-defined]
    return err


def _program_spec(programs: dict[str, Any]) -> list[tuple[str, tuple[str, Any]]]:
    """How spawned ranks get the chip programs: pickled, else reloaded from their build folders."""
    import pickle

    out = []
    for name, cp in programs.items():
        try:
            out.append((name, ("pickle", pickle.dumps(cp))))
        except Exception:   # noqa: BLE001
            if not cp.output_dir or not os.path.isdir(cp.output_dir):
                raise RuntimeError(f"chip program {name!r} cannot be sent to a spawned rank process: it does "
                                   f"not pickle and has no build folder; use start_method='fork'") from None
            out.append((name, ("dir", (cp.output_dir, cp.platform))))
    return out


def call_on_ranks(world: World, fn: Callable[..., Any], args_per_rank: list[list[Any]]) -> list[Any]:
    """Test entry point: run `fn(comm, *args)` on every rank at once (Comm installed); returns the
    results in rank order. Raises as `World.wait_all`."""
    world.begin_call()
    seqs = [world.send(r, "call", fn, a) for r, a in enumerate(args_per_rank)]
    res = world.wait_all()
    return [res[s] for s in seqs]
