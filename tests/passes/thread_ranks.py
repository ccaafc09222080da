"""A small in-process multi-rank harness for kernel-level collectives (not the real runtime).

One thread per rank, each with its own `SimDevice`, runs a compiled chip program inside
`comm_context(ThreadComm(...))`. `ThreadComm` implements the `pypto.ops.dist_comm.Comm` protocol
over per-rank torch byte buffers (the ranks' windows, same layout on every rank) guarded by one
`threading.Condition`: every access is atomic and sequentially consistent, a `wait` sleeps on the
condition until a notify wakes it, and a wait that sees no progress for `timeout` seconds raises
(so a broken protocol fails the test instead of hanging it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import torch

from pypto.core.errors import RuntimeSimError
from pypto.ops.dist_comm import comm_context
from pypto.runtime.binding import bind_host_args
from pypto.runtime.device_tensor import DeviceTensor
from pypto.runtime.sim.device import SimDevice


class ThreadWorld:
    """`nranks` windows of `nbytes` bytes each; `alloc` hands out the same slot on every rank."""

    def __init__(self, nranks: int, nbytes: int = 1 << 20, timeout: float = 20.0) -> None:
        self.nranks = nranks
        self.bufs = [torch.zeros(nbytes, dtype=torch.uint8) for _ in range(nranks)]
        self.cv = threading.Condition()
        self.timeout = timeout
        self.top = 0
        self.failed = False

    def alloc(self, shape: Sequence[int], dtype: torch.dtype) -> list[torch.Tensor]:
        """One window tensor per rank, at the same 32-byte aligned offset of every window."""
        n = 1
        for d in shape:
            n *= d
        nbytes = n * torch.empty((), dtype=dtype).element_size()
        off = self.top
        self.top = (off + nbytes + 31) // 32 * 32
        assert self.top <= self.bufs[0].numel(), "window full"
        return [b[off:off + nbytes].view(dtype).view(*shape) for b in self.bufs]


class ThreadComm:
    """The `Comm` of rank `rank` of a `ThreadWorld` (see the module docstring)."""

    def __init__(self, world: ThreadWorld, rank: int) -> None:
        self.world = world
        self.rank = rank
        self.nranks = world.nranks
        self.notifies = 0

    def peer_view(self, local: torch.Tensor, peer: int, span: Any = None) -> torch.Tensor:
        if not 0 <= peer < self.nranks:
            raise RuntimeSimError(f"peer {peer} is not a rank of {self.nranks}", span)
        own = self.world.bufs[self.rank]
        off = local.data_ptr() - own.data_ptr()
        if not 0 <= off < own.numel():
            raise RuntimeSimError("the region does not lie in a window", span)
        size = local.element_size()
        base = self.world.bufs[peer].view(local.dtype)
        return base.as_strided(local.shape, local.stride(), off // size)

    def notify(self, cell: torch.Tensor, peer: int, value: int, op: str, span: Any = None) -> None:
        with self.world.cv:
            v = self.peer_view(cell, peer, span)
            if op == "add":
                v.add_(value)
            else:
                v.fill_(value)
            self.notifies += 1
            self.world.cv.notify_all()

    def wait(self, cell: torch.Tensor, expected: int, cmp: str, span: Any = None) -> None:
        def ready() -> bool:
            v = int(cell.reshape(-1)[0])
            return v == expected if cmp == "eq" else v >= expected

        with self.world.cv:
            while not ready():
                if self.world.failed:
                    raise RuntimeSimError(f"rank {self.rank}: another rank failed", span)
                if not self.world.cv.wait(self.world.timeout):
                    self.world.failed = True
                    self.world.cv.notify_all()
                    raise RuntimeSimError(f"rank {self.rank}: deadlock: cell is {int(cell.reshape(-1)[0])}, "
                                          f"waiting for {cmp} {expected}", span)

    def remote_write(self, local: torch.Tensor, peer: int, data: torch.Tensor, accumulate: bool,
                     span: Any = None) -> None:
        with self.world.cv:
            v = self.peer_view(local, peer, span)
            if accumulate:
                v.add_(data.to(v.dtype))
            else:
                v.copy_(data)

    def remote_read(self, local: torch.Tensor, peer: int, span: Any = None) -> torch.Tensor:
        with self.world.cv:
            return self.peer_view(local, peer, span).clone()

    def fence(self, span: Any = None) -> None:
        return None


def on_ranks(world: ThreadWorld, fn: Callable[[int], Any]) -> list[Any]:
    """Call `fn(r)` for every rank r of `world` at once, one thread each, inside that rank's
    `comm_context`; return the results. Re-raises the first rank's error (a rank that failed because
    another did comes last)."""
    results: list[Any] = [None] * world.nranks
    errors: list[BaseException | None] = [None] * world.nranks

    def one(r: int) -> None:
        try:
            with comm_context(ThreadComm(world, r)):
                results[r] = fn(r)
        except BaseException as e:  # noqa: BLE001  (reported to the test below)
            errors[r] = e
            with world.cv:
                world.failed = True
                world.cv.notify_all()

    threads = [threading.Thread(target=one, args=(r,)) for r in range(world.nranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first = next((e for e in errors if e is not None and "another rank failed" not in str(e)), None) \
        or next((e for e in errors if e is not None), None)
    if first is not None:
        raise first
    return results


def run_ranks(compiled: Any, world: ThreadWorld, args_of_rank: Callable[[int], Sequence[Any]]) -> list[Any]:
    """Run `compiled`'s entry on every rank of `world` at once, each on its own SimDevice, with the
    arguments `args_of_rank(r)` (window tensors are passed in place); return each rank's result."""
    def one(r: int) -> Any:
        args = [DeviceTensor(a) if isinstance(a, torch.Tensor) else a for a in args_of_rank(r)]
        dev_args = bind_host_args(compiled.entry_function, args)
        return SimDevice(compiled.backend_type).run(compiled.program, compiled.entry_function, dev_args)

    return on_ranks(world, one)
