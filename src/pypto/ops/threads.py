"""Host threads for the simulator's large batched tile ops (issue 14 item 5: "use both cores").

The simulator runs tile ops on one torch intra-op thread: a single tile op is too small for a second
thread to pay (`runtime/sim/device.py`). A *batched* op of a replayed run (`runtime/sim/batch.py`)
can be large — a GEMM for 24 cube cores at once is 24 tile products — and torch splits it over its
intra-op threads with the GIL released. `SimDevice.run` gives `host_threads` the caller's intra-op
thread count capped by the cores idle at that moment (`runtime/sim/host_cores.py`); a batch form
whose call is at least `WIDE_MACS` multiply-accumulates runs it under `wide()` on that many threads.

Copies go wide the same way (`wide_copy`): a copy moves or exactly widens each element alone, so
its bytes cannot depend on how torch splits it.

The numbers must not depend on the thread count (issue 14: "every run's results identical whatever
the batching and thread count"): a batch form that goes wide compares, on the first call of each
shape and thread count, the wide call with the one-lane calls on one thread, byte for byte, and
computes lane by lane if any byte differs (`ops/matmul.py`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["WIDE_COPY", "WIDE_MACS", "host_threads", "one_torch_thread", "wide", "wide_copy", "wide_threads"]

WIDE_MACS = 1 << 18
"""Multiply-accumulates from which a batched GEMM runs on the host's threads: measured with torch
2.13 on a 2-core x86 machine, a second thread costs about 2 us of start-up and halves a batched
FP32 GEMM of 2^20 multiply-accumulates (14 -> 10 us) or more (24 x 128^3: 630 -> 310 us); below
2^18 the start-up outweighs the gain."""

WIDE_COPY = 1 << 16
"""Elements from which a batched copy (a stacked load or store, a move, an operand widened to FP32)
runs on the host's threads. Torch splits a copy into chunks of 32,768 elements; measured as above,
24 lanes of 128 x 128 FP16 -> FP32 take 166 us on one thread and 59 us on two."""

class _Host(threading.local):
    n = 1          # the threads `wide()` may use in this Python thread's run (1 outside a run)


_HOST = _Host()
_RUNS_LOCK = threading.RLock()   # also held by a block on several threads (`wide`)
_RUNS: list[int] = [0, 1]    # runs in progress (all Python threads), the caller's torch threads


@contextmanager
def one_torch_thread() -> Iterator[int]:
    """Within the block (a simulator run) torch uses one intra-op thread; yields the count the
    caller had set. Torch's setting is partly one for the process (OpenMP's count, which
    `torch.get_num_threads` reports) and partly each Python thread's own (MKL's, which its GEMMs
    use), so every run sets one thread in its own Python thread, and with runs in several threads
    at once the first to start saves the caller's count and the last to end puts it back (a run
    that ended first must not set it back under one still in progress; its thread keeps one MKL
    thread until it sets the count itself)."""
    with _RUNS_LOCK:
        if _RUNS[0] == 0:
            _RUNS[1] = torch.get_num_threads()
        torch.set_num_threads(1)
        _RUNS[0] += 1
        caller = _RUNS[1]
    try:
        yield caller
    finally:
        with _RUNS_LOCK:
            _RUNS[0] -= 1
            if _RUNS[0] == 0:
                torch.set_num_threads(_RUNS[1])


@contextmanager
def host_threads(n: int) -> Iterator[None]:
    """Within the block, `wide()` may use `n` intra-op threads (`SimDevice.run` passes the caller's
    `torch.get_num_threads()` capped by the idle cores). Per Python thread; nests; restores the
    previous count on exit."""
    old, _HOST.n = _HOST.n, max(1, int(n))
    try:
        yield
    finally:
        _HOST.n = old


def wide_threads() -> int:
    """The intra-op threads a large batched op may use now (1 outside a simulator run)."""
    return _HOST.n


class wide:
    """`with wide(threads) as n:` runs the block on `threads` torch intra-op threads, then goes back
    to the current count (the simulator's one thread during a run); `n` is the count torch uses in
    the block. Switching costs well under a microsecond (a class, not a generator context manager:
    it is entered for every large batched op).

    Torch's count is one setting for the process, so a block on more threads than one would also
    run the one-thread ops of simulator runs in other Python threads on them — and a GEMM with a
    long K rounds differently on two threads than on one. Such a block therefore holds the runs'
    lock (no run starts meanwhile) and stays on the current count, yielding it, while another run
    is in progress (`one_torch_thread`); callers whose numbers depend on the count (the batched
    GEMM's check, `ops/matmul.py`) use the count yielded."""

    __slots__ = ("threads", "old", "locked")

    def __init__(self, threads: int) -> None:
        self.threads = threads

    def __enter__(self) -> int:
        old = self.old = torch.get_num_threads()
        threads = self.threads
        self.locked = False
        if threads == old:
            return old
        _RUNS_LOCK.acquire()
        self.locked = True
        if threads > 1 and _RUNS[0] > 1:
            self.threads = old      # another run is in progress: stay on the current count
            return old
        torch.set_num_threads(threads)
        return threads

    def __exit__(self, *exc: object) -> None:
        if not self.locked:
            return
        try:
            if self.threads != self.old:
                torch.set_num_threads(self.old)
        finally:
            _RUNS_LOCK.release()


def wide_copy(dst: torch.Tensor, src: torch.Tensor) -> None:
    """`dst.copy_(src)`, on the host's threads when `dst` has at least `WIDE_COPY` elements. Only
    for copies whose every element is computed alone and exactly (the same dtype, or a widening
    such as FP16 -> FP32): their bytes do not depend on the split."""
    n = _HOST.n
    if n > 1 and dst.numel() >= WIDE_COPY:
        with wide(n):
            dst.copy_(src)
    else:
        dst.copy_(src)
