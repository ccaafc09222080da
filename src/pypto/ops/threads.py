"""Host threads for the simulator's large batched tile ops (issue 14 item 5: "use both cores").

The simulator runs tile ops on one torch intra-op thread: a single tile op is too small for a second
thread to pay (`runtime/sim/device.py`). A *batched* op of a replayed run (`runtime/sim/batch.py`)
can be large — a GEMM for 24 cube cores at once is 24 tile products — and torch splits it over its
intra-op threads with the GIL released. `SimDevice.run` gives `host_threads` the caller's intra-op
thread count (`torch.get_num_threads()` when the run starts) capped by the cores idle at that moment
(`available_threads`); a batch form whose call is at least `WIDE_MACS` multiply-accumulates runs it
under `wide()` on that many threads.

Idle cores only: torch's OpenMP threads wait for each other at the end of every op, so on a machine
whose cores are all busy (a `pytest -n 2` run, other jobs) a thread that loses its core stalls the
op — measured here, a replayed run of 256 batched tasks took 340 ms on two threads against 18 ms on
one while two other processes ran. `available_threads` reads the 1-minute load average less this
process's own recent CPU use, so a machine that just became busy may still get two threads for
some seconds; `PYPTO_SIM_THREADS=N` fixes the count (1: never more than one thread).

Copies go wide the same way (`wide_copy`): a copy moves or exactly widens each element alone, so
its bytes cannot depend on how torch splits it.

The numbers must not depend on the thread count (issue 14: "every run's results identical whatever
the batching and thread count"): a batch form that goes wide compares, on the first call of each
shape and thread count, the wide call with the one-lane calls on one thread, byte for byte, and
computes lane by lane if any byte differs (`ops/matmul.py`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["ENV_VAR", "WIDE_COPY", "WIDE_MACS", "available_threads", "host_threads", "wide", "wide_copy",
           "wide_threads"]

ENV_VAR = "PYPTO_SIM_THREADS"

WIDE_MACS = 1 << 18
"""Multiply-accumulates from which a batched GEMM runs on the host's threads: measured with torch
2.13 on a 2-core x86 machine, a second thread costs about 2 us of start-up and halves a batched
FP32 GEMM of 2^20 multiply-accumulates (14 -> 10 us) or more (24 x 128^3: 630 -> 310 us); below
2^18 the start-up outweighs the gain."""

WIDE_COPY = 1 << 16
"""Elements from which a batched copy (a stacked load or store, a move, an operand widened to FP32)
runs on the host's threads. Torch splits a copy into chunks of 32,768 elements; measured as above,
24 lanes of 128 x 128 FP16 -> FP32 take 166 us on one thread and 59 us on two."""

_HOST = [1]


_SAMPLES: list[tuple[float, float]] = []   # (wall, process CPU) seconds at recent calls, oldest first


def own_load(now: float | None = None, cpu: float | None = None) -> float:
    """This process's share of the 1-minute load average, estimated as its CPU seconds per second
    (all threads) since the oldest of its recent samples, at most a minute back; 0 while the
    samples span less than a second (a process that just started has not entered the average)."""
    now = time.monotonic() if now is None else now
    cpu = time.process_time() if cpu is None else cpu
    while len(_SAMPLES) > 1 and now - _SAMPLES[1][0] >= 60.0:
        _SAMPLES.pop(0)
    if not _SAMPLES or now - _SAMPLES[-1][0] >= 1.0:
        _SAMPLES.append((now, cpu))
    w0, c0 = _SAMPLES[0]
    return 0.0 if now - w0 < 1.0 else max(0.0, (cpu - c0) / (now - w0))


def available_threads(requested: int) -> int:
    """The threads a run's large batched ops may use: `PYPTO_SIM_THREADS` when set (an integer >= 1),
    else `requested` (the caller's torch intra-op threads) capped by the cores idle now — the CPUs
    this process may run on, less the 1-minute load average without this process's own share
    (`own_load`) — and at least 1."""
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            pass
    if requested <= 1:
        return 1
    try:
        load = os.getloadavg()[0]
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    except (OSError, AttributeError):
        return 1
    idle = cpus - max(0.0, load - own_load())
    return max(1, min(requested, int(idle + 0.5)))


@contextmanager
def host_threads(n: int) -> Iterator[None]:
    """Within the block, `wide()` may use `n` intra-op threads (`SimDevice.run` passes the caller's
    `torch.get_num_threads()`). Nests; restores the previous count on exit."""
    old, _HOST[0] = _HOST[0], max(1, int(n))
    try:
        yield
    finally:
        _HOST[0] = old


def wide_threads() -> int:
    """The intra-op threads a large batched op may use now (1 outside a simulator run)."""
    return _HOST[0]


@contextmanager
def wide(threads: int) -> Iterator[None]:
    """Run the block on `threads` torch intra-op threads, then go back to the current count (the
    simulator's one thread during a run). Switching costs well under a microsecond."""
    old = torch.get_num_threads()
    if threads == old:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def wide_copy(dst: torch.Tensor, src: torch.Tensor) -> None:
    """`dst.copy_(src)`, on the host's threads when `dst` has at least `WIDE_COPY` elements. Only
    for copies whose every element is computed alone and exactly (the same dtype, or a widening
    such as FP16 -> FP32): their bytes do not depend on the split."""
    n = _HOST[0]
    if n > 1 and dst.numel() >= WIDE_COPY:
        old = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            dst.copy_(src)
        finally:
            torch.set_num_threads(old)
    else:
        dst.copy_(src)
