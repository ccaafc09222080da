"""A sequential, in-process stand-in for the multi-rank runtime (tests only).

It implements the host runtime API the generated host driver uses (`rt.world_size`,
`alloc_window_buffer`, `window`, `dispatch`, `call_sub_worker`, `sync`) by running every dispatch
at once, one after another, each rank on its own `SimDevice`. Windows are per-rank byte buffers.
There is no `Comm`, so it serves programs without cross-rank communication (a chip program that
only reads its inputs and writes its outputs); the real runtime is `pypto.runtime.dist`.
"""

from __future__ import annotations

from typing import Any

import torch

from pypto.core.dtype import dtype_from_name
from pypto.runtime.sim.device import SimDevice


class Buffer:
    def __init__(self, nbytes: int, world: int) -> None:
        self.nbytes = nbytes
        self.data = [torch.zeros((nbytes + 31) // 32 * 32, dtype=torch.uint8) for _ in range(world)]


class Window:
    def __init__(self, buf: Buffer, shape: list[int], dtype: str) -> None:
        self.buf, self.shape, self.dtype = buf, list(shape), dtype

    def view(self, rank: int) -> torch.Tensor:
        dt = dtype_from_name(self.dtype).to_torch()
        n = 1
        for d in self.shape:
            n *= d
        nbytes = n * dt.itemsize
        assert nbytes <= self.buf.nbytes, "window larger than its buffer"
        return self.buf.data[rank][:nbytes].view(dt).reshape(self.shape)


class SequentialRuntime:
    """`rt` of the host driver, running each dispatch immediately on rank r's own SimDevice."""

    def __init__(self, build: Any, world: int, callbacks: dict[str, Any] | None = None) -> None:
        self.build, self.world = build, world
        self.callbacks = callbacks or {}
        backend = next(iter(build.chip_programs.values())).backend_type if build.chip_programs else None
        self.devices = [SimDevice(backend) for _ in range(world)] if backend is not None else []
        self.windows: list[Buffer] = []
        self.log: list[tuple[str, int]] = []

    def world_size(self) -> int:
        return self.world

    def alloc_window_buffer(self, nbytes: int) -> Buffer:
        b = Buffer(nbytes, self.world)
        self.windows.append(b)
        return b

    def window(self, buf: Buffer, shape: list[int], dtype: str) -> Window:
        return Window(buf, shape, dtype)

    def dispatch(self, program: str, rank: int, args: list[Any]) -> None:
        assert 0 <= rank < self.world
        self.log.append((program, rank))
        vals = tuple(a.view(rank) if isinstance(a, Window) else a for a in args)
        self.build.chip_programs[program].run_on(self.devices[rank], vals, None)

    def call_sub_worker(self, name: str, args: list[Any]) -> None:
        self.log.append((name, -1))
        self.callbacks[name](*args)

    def sync(self) -> None:
        pass


def install(monkeypatch: Any, world: int) -> list[SequentialRuntime]:
    """Make `pypto.runtime.dist.run` the sequential runtime with `world` ranks; returns the list
    the runtimes of the following runs are appended to."""
    import pypto.runtime.dist as dist

    made: list[SequentialRuntime] = []

    def run(build: Any, args: tuple, config: Any, callbacks: dict[str, Any] | None = None) -> Any:
        rt = SequentialRuntime(build, world, callbacks)
        made.append(rt)
        return build.host_fn(rt, *args)

    monkeypatch.setattr(dist, "run", run, raising=False)
    return made

