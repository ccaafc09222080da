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

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["WIDE_COPY", "WIDE_MACS", "host_threads", "wide", "wide_copy", "wide_threads"]

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


@contextmanager
def host_threads(n: int) -> Iterator[None]:
    """Within the block, `wide()` may use `n` intra-op threads (`SimDevice.run` passes the caller's
    `torch.get_num_threads()` capped by the idle cores). Nests; restores the previous count on exit."""
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
        with wide(n):
            dst.copy_(src)
    else:
        dst.copy_(src)
