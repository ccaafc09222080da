"""`HostRuntime`: the `rt` object a host driver (`orchestration/host_orch.py`) runs against.

The generated driver `def <host>(rt, *params)` uses only (docs: "Running distributed programs"):

- `rt.world_size() -> int`: the number of ranks;
- `rt.alloc_window_buffer(nbytes) -> WindowBuffer`: a zeroed window buffer, one copy per rank in
  shared memory (each slot 32-byte aligned, in fact 64); it lives for this host call, or for the
  worker's life when the worker is persistent (then the k-th allocation of every call returns the
  k-th buffer again, contents kept);
- `rt.window(buf, shape, dtype) -> WindowTensor`: a tensor of `shape` and `dtype` ("FP32", a
  DataType or a torch dtype) at the start of `buf`; passed to a dispatch it becomes that rank's view
  of its own copy;
- `rt.dispatch(program, rank, args)`: run chip program `program` on rank `rank` asynchronously;
  `args` are shared-memory torch tensors (or views such as `x[r]`), WindowTensors and numbers;
- `rt.call_sub_worker(name, args)`: run the Python callback bound to SubWorker `name` after the
  dispatches before it have finished (inline, or on one of `num_sub_workers` host threads);
- `rt.sync()`: wait for every outstanding dispatch and SubWorker call.

Errors from ranks surface at the next `sync` (the driver always ends with one).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch

from ...core.dtype import DataType, dtype_from_name
from ...core.errors import ArgumentTypeError, ArgumentValueError
from ..device_tensor import DeviceTensor
from . import checks
from .rank import WindowArg
from .world import World

__all__ = ["HostRuntime", "WindowBuffer", "WindowTensor"]


class WindowBuffer:
    """A window buffer: `nbytes` bytes on every rank (`wid` names it in the world)."""

    def __init__(self, wid: int, nbytes: int, world: World) -> None:
        self.wid, self.nbytes, self._world = wid, nbytes, world

    def __repr__(self) -> str:
        return f"WindowBuffer({self.nbytes} bytes per rank)"

    def rank_copy(self, rank: int) -> torch.Tensor:
        """Rank `rank`'s copy of the buffer as uint8 (host-side inspection)."""
        spec, seg = self._world.windows[self.wid]
        return seg.bytes[rank * spec.stride: rank * spec.stride + spec.nbytes]


class WindowTensor:
    """`shape` elements of `dtype` (a DataType) at byte `offset` of window buffer `buffer`."""

    def __init__(self, buffer: WindowBuffer, shape: tuple[int, ...], dtype: DataType, offset: int = 0) -> None:
        self.buffer, self.shape, self.dtype, self.offset = buffer, shape, dtype, offset

    def __repr__(self) -> str:
        return f"WindowTensor({list(self.shape)}, {self.dtype.name})"

    def on_rank(self, rank: int) -> torch.Tensor:
        """Rank `rank`'s copy as a torch tensor (a view of shared memory)."""
        raw = self.buffer.rank_copy(rank)
        n = self.dtype.storage_bytes(_numel(self.shape))
        return raw[self.offset:self.offset + n].view(self.dtype.to_torch()).view(self.shape)


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def _as_int(v: Any) -> int | None:
    """`v` as an int (Python, numpy or 0-d torch integers), None for anything else (bool too)."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _dtype(dtype: Any) -> DataType:
    if isinstance(dtype, DataType):
        return dtype
    if isinstance(dtype, str):
        return dtype_from_name(dtype)
    if isinstance(dtype, torch.dtype):
        from ...core.dtype import dtype_from_torch

        return dtype_from_torch(dtype)
    raise ArgumentTypeError(f"window dtype must be a DataType name such as 'FP32', got {dtype!r}")


class HostRuntime:
    """The `rt` of one host call (see the module docstring).

    Args:
        world: the running `World`.
        callbacks: SubWorker name -> Python callable.
        num_sub_workers: 0 runs callbacks inline, else on that many threads.
        persistent: reuse the window buffers of `kept` (in allocation order) instead of new ones.
        kept: the persistent worker's buffers (appended to on first allocation).
    """

    def __init__(self, world: World, callbacks: dict[str, Callable[..., Any]] | None = None,
                 num_sub_workers: int = 0, persistent: bool = False,
                 kept: list[WindowBuffer] | None = None) -> None:
        self._world = world
        self._callbacks = dict(callbacks or {})
        self._pool = ThreadPoolExecutor(num_sub_workers, "pypto-subworker") if num_sub_workers else None
        self._futures: list[Future] = []
        self._persistent = persistent
        self._kept = kept if kept is not None else []
        self._nalloc = 0
        self.buffers: list[WindowBuffer] = []     # allocated in this call (freed at its end unless kept)
        self.results: dict[int, Any] = {}

    def world_size(self) -> int:
        """Number of ranks."""
        return self._world.nranks

    def alloc_window_buffer(self, nbytes: int) -> WindowBuffer:
        """A zeroed window buffer of `nbytes` bytes per rank.

        Raises ArgumentValueError: nbytes < 1, or a persistent worker's call asking for another size
        than the first call did at this position."""
        n = _as_int(nbytes)
        if n is None or n < 1:
            raise ArgumentValueError(f"alloc_window_buffer: nbytes must be an int >= 1, got {nbytes!r}")
        nbytes = n
        k = self._nalloc
        self._nalloc += 1
        if self._persistent and k < len(self._kept):
            buf = self._kept[k]
            if buf.nbytes != nbytes:
                raise ArgumentValueError(f"alloc_window_buffer: this persistent worker's window buffer {k} has "
                                         f"{buf.nbytes} bytes; this call asks for {nbytes}")
            return buf
        spec = self._world.alloc_window(nbytes)
        buf = WindowBuffer(spec.wid, nbytes, self._world)
        (self._kept if self._persistent else self.buffers).append(buf)
        return buf

    def window(self, buf: WindowBuffer, shape: Sequence[int], dtype: Any = "FP32") -> WindowTensor:
        """A window-bound tensor of `shape` and `dtype` at the start of `buf`.

        Raises ArgumentTypeError for a non-buffer or unknown dtype, ArgumentValueError when the
        tensor does not fit in the buffer."""
        if not isinstance(buf, WindowBuffer):
            raise ArgumentTypeError(f"window: expected a WindowBuffer from alloc_window_buffer, got "
                                    f"{type(buf).__name__}")
        dt = _dtype(dtype)
        shape = tuple(int(d) for d in shape)
        need = dt.storage_bytes(_numel(shape))
        if need > buf.nbytes:
            raise ArgumentValueError(f"window: {list(shape)} {dt.name} needs {need} bytes, the buffer has "
                                     f"{buf.nbytes}")
        return WindowTensor(buf, shape, dt)

    def dispatch(self, program: str, rank: int, args: Sequence[Any]) -> None:
        """Run chip program `program` on `rank` with `args` (asynchronous; errors surface at `sync`).

        Raises:
            ArgumentValueError: a rank outside [0, world_size) or an unknown program.
            ArgumentTypeError: a host tensor that is not in shared memory, or an argument of
                another kind than tensor / WindowTensor / number.
        """
        world = self._world
        r = _as_int(rank)
        if r is None or not 0 <= r < world.nranks:
            raise ArgumentValueError(f"dispatch of '{program}': rank {rank!r} is outside [0, {world.nranks})")
        rank = r
        if program not in world.programs:
            raise ArgumentValueError(f"dispatch: no chip program {program!r} in this build (it has "
                                     f"{', '.join(sorted(world.programs)) or 'none'})")
        self._drain_sub_workers()
        checks.on_dispatch(self, program, args)   # a builtin collective's signal is a credit signal
        world.send(rank, "run", program, [self._arg(program, i, a) for i, a in enumerate(args)])

    def _arg(self, program: str, i: int, a: Any) -> Any:
        if isinstance(a, WindowTensor):
            return WindowArg(a.buffer.wid, a.offset, a.shape, a.dtype.to_torch())
        if isinstance(a, DeviceTensor):
            a = a.tensor
        if isinstance(a, torch.Tensor):
            if not a.is_shared():
                raise ArgumentTypeError(f"dispatch of '{program}': argument {i} is a host tensor that is not in "
                                        f"shared memory; rank processes can only use tensors in shared memory "
                                        f"(call tensor.share_memory_() first)")
            return a
        if isinstance(a, (bool, int, float)):
            return a
        raise ArgumentTypeError(f"dispatch of '{program}': argument {i} is a {type(a).__name__}; pass tensors, "
                                f"window tensors or numbers")

    def call_sub_worker(self, name: str, args: Sequence[Any]) -> None:
        """Run the callback bound to SubWorker `name` with `args` once the dispatches before it have
        finished. Raises ArgumentValueError when no callback is bound to `name`."""
        fn = self._callbacks.get(name)
        if fn is None:
            raise ArgumentValueError(f"SubWorker '{name}' has no callback: pass callbacks={{'{name}': fn}} "
                                     f"when preparing the worker")
        self._wait_ranks()
        args = [a.tensor if isinstance(a, DeviceTensor) else a for a in args]
        if self._pool is None:
            fn(*args)
        else:
            self._futures.append(self._pool.submit(fn, *args))

    def _drain_sub_workers(self) -> None:
        futures, self._futures = self._futures, []
        for f in futures:
            f.result()

    def _wait_ranks(self) -> None:
        self.results.update(self._world.wait_all())
        self._world.sync_clock()

    def sync(self) -> None:
        """Wait for every outstanding dispatch and SubWorker call; raises the first failure."""
        try:
            self._wait_ranks()
        finally:
            self._drain_sub_workers()

    def finish(self) -> None:
        """End of the host call: wait for everything, then free this call's window buffers."""
        try:
            self.sync()
            checks.end_of_call(self._world)   # credit leaks, collective sequences, weak-mode races
        finally:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            for buf in self.buffers:
                if buf.wid in self._world.windows:
                    self._world.free_window(buf.wid)
            self.buffers = []
