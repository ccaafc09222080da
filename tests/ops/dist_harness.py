"""A fake multi-rank world for the `pld.*` op tests: P ranks in one process, one thread each.

`FakeComm` implements the `pypto.ops.dist_comm.Comm` protocol over in-memory windows: every rank
holds the same list of window tensors (its copy of each window-bound argument); a local view is
mapped to the peer's copy by storage and offset. `run_ranks` runs a compiled program once per rank
(each on its own simulated chip, in its own thread, inside `comm_context`), with the rank's window
tensors passed as `DeviceTensor`s so the kernels work on them in place. A wait blocks on a condition
variable; a rank that waits longer than `TIMEOUT` seconds raises (a deadlock in a test).

The real runtime (`pypto.runtime.dist`, separate processes over shared memory) is tested elsewhere;
this harness checks the ops' semantics only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import torch

from pypto.core.errors import RuntimeSimError
from pypto.ops.dist_comm import comm_context
from pypto.runtime.device_tensor import DeviceTensor
from pypto.runtime.sim.device import SimDevice

TIMEOUT = 20.0


class World:
    """The shared state of P fake ranks: `windows[r][i]` is rank r's copy of window tensor i."""

    def __init__(self, windows: list[list[torch.Tensor]]) -> None:
        self.windows = windows
        self.cond = threading.Condition()
        self.log: list[tuple] = []   # (rank, what, peer, ...) in call order
        self.failed = False          # a rank raised: the waiting ranks give up at once

    def comm(self, rank: int) -> FakeComm:
        return FakeComm(self, rank)


class FakeComm:
    """`Comm` of rank `rank` of a `World` (see the module docstring)."""

    def __init__(self, world: World, rank: int) -> None:
        self.world, self.rank, self.nranks = world, rank, len(world.windows)

    def _index(self, local: torch.Tensor) -> int:
        ptr = local.untyped_storage().data_ptr()
        for i, w in enumerate(self.world.windows[self.rank]):
            if w.untyped_storage().data_ptr() == ptr:
                return i
        raise RuntimeSimError("the view does not lie in a window")

    def peer_view(self, local: torch.Tensor, peer: int, span: Any = None) -> torch.Tensor:
        if not 0 <= peer < self.nranks:
            raise RuntimeSimError(f"peer {peer} is not a rank of this {self.nranks}-rank world", span)
        base = self.world.windows[peer][self._index(local)]
        return torch.as_strided(base, local.shape, local.stride(), local.storage_offset())

    def notify(self, cell: torch.Tensor, peer: int, value: int, op: str, span: Any = None) -> None:
        with self.world.cond:
            v = self.peer_view(cell, peer)
            if op == "add":
                v.add_(value)
            else:
                v.fill_(value)
            self.world.log.append((self.rank, "notify", peer, op, value))
            self.world.cond.notify_all()

    def wait(self, cell: torch.Tensor, expected: int, cmp: str, span: Any = None) -> None:
        def ready() -> bool:
            if self.world.failed:
                return True
            v = int(cell.reshape(-1)[0])
            return v == expected if cmp == "eq" else v >= expected
        with self.world.cond:
            if not self.world.cond.wait_for(ready, TIMEOUT) or self.world.failed:
                raise RuntimeSimError(f"rank {self.rank}: deadlock waiting for {cmp} {expected}", span)
            self.world.log.append((self.rank, "wait", cmp, expected))

    def remote_write(self, local: torch.Tensor, peer: int, data: torch.Tensor, accumulate: bool,
                     span: Any = None) -> None:
        with self.world.cond:
            v = self.peer_view(local, peer)
            if accumulate:
                v.add_(data.to(v.dtype))
            else:
                v.copy_(data)
            self.world.log.append((self.rank, "write", peer, accumulate))

    def remote_read(self, local: torch.Tensor, peer: int, span: Any = None) -> torch.Tensor:
        with self.world.cond:
            self.world.log.append((self.rank, "read", peer))
            return self.peer_view(local, peer).clone()

    def fence(self, span: Any = None) -> None:
        self.world.log.append((self.rank, "fence"))


def run_ranks(compiled: Any, world: World, args_of: Callable[[int], list[Any]], window_params: list[int]) -> list:
    """Run `compiled` once per rank of `world` concurrently; `args_of(r)` gives rank r's arguments
    with the window tensors' positions `window_params` filled from `world.windows[r]` (in order).
    Returns each rank's result; re-raises the first rank error."""
    n = len(world.windows)
    results: list[Any] = [None] * n
    errors: list[BaseException | None] = [None] * n

    def one(r: int) -> None:
        args = list(args_of(r))
        for k, i in enumerate(window_params):
            args[i] = DeviceTensor(world.windows[r][k])
        try:
            with comm_context(world.comm(r)):
                results[r] = compiled.run_on(SimDevice(compiled.backend_type), tuple(args), None)
        except BaseException as e:   # noqa: BLE001  (handed to the main thread)
            errors[r] = e
            with world.cond:
                world.failed = True
                world.cond.notify_all()

    threads = [threading.Thread(target=one, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errors:
        if e is not None:
            raise e
    return results
