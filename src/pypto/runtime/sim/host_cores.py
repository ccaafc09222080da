"""How many host threads a simulator run's large batched ops may use (`ops/threads.py`): the idle cores.

Torch's OpenMP threads wait for each other at the end of every op, so on a machine whose cores are
all busy (a `pytest -n 2` run, other jobs) a thread that loses its core stalls the op — measured
here, a replayed run of 256 batched tasks took 340 ms on two threads against 18 ms on one while two
other processes ran. `available_threads` reads the 1-minute load average less this process's own
recent CPU use, so a machine that just became busy may still get two threads for some seconds;
`PYPTO_SIM_THREADS=N` fixes the count (1: never more than one thread). See docs/performance.md,
"Host threads".
"""

from __future__ import annotations

import os
import time

__all__ = ["ENV_VAR", "available_threads", "own_load"]

ENV_VAR = "PYPTO_SIM_THREADS"

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
