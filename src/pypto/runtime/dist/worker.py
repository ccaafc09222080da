"""Running a `DistributedBuild`: the one-shot `run` and the reusable `DistributedWorker` (SPEC §8
"Running").

    with DistributedWorker(build, RunConfig(distributed_config=DistributedConfig(device_ids=[0, 1]))) as rt:
        x.share_memory_(); out.share_memory_()
        rt(x, out)                       # a host call: the host driver runs here, chip programs on the ranks
        h = rt.submit(x, out); h.result(timeout=10)

A call binds the host arguments to the host orchestrator's parameters, stages the Out / InOut
tensors in fresh shared memory (and, for the one-shot `run`, every host tensor), runs the host driver
`build.host_fn(rt, *args)` with a `HostRuntime`, and copies the staged outputs back into the caller's
tensors only when the whole call succeeded: a failed call never changes them. A prepared worker
passes In tensors to the ranks without copying, so they must be in shared memory
(`tensor.share_memory_()`), else the call raises a TypeError that says so.

The world (rank processes, shared segments) starts on the first call and lives until `close()`; one
call runs at a time (`submit` queues calls on a background thread). A call that failed because a
rank process died leaves the worker unusable: close it and prepare a new one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

from ...core.errors import ArgumentTypeError, ArgumentValueError, DeviceStateError, user_facing
from ..binding import check_on_cpu
from ..config import DistributedConfig, RunConfig, check_run_config
from ..device_tensor import DeviceTensor
from ..dfx import DFX_DIR
from ..toolchain import require_npu_runtime
from .build import DistributedBuild
from .control import ABORT_CANCEL
from .host import HostRuntime, WindowBuffer
from .timeline import MERGED_SWIMLANE, merged_swimlane
from .world import DispatchRecord, World

__all__ = ["DistributedWorker", "RunHandle", "run"]


class RunHandle:
    """A submitted call: `result(timeout=None)` waits for it and returns (or raises) what the call
    did; `done` tells whether it has finished."""

    def __init__(self, future: Future) -> None:
        self._future = future

    @property
    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: float | None = None) -> Any:
        """The call's result. Raises TimeoutError when it has not finished within `timeout` seconds,
        or the call's own error."""
        return self._future.result(timeout)


class DistributedWorker:
    """A reusable multi-rank worker for `build` (see the module docstring).

    Args:
        build: the `DistributedBuild`.
        config: RunConfig with `distributed_config` (None or no distributed_config: one rank, device 0).
        persistent: window buffers live across calls (the k-th allocation of each call returns the
            same buffer, contents kept) instead of for one call.
        callbacks: SubWorker name -> Python callable.

    Attributes:
        last_records: the `DispatchRecord`s of the last call (per-rank tasks and cross-rank events on
            the call's clock, which starts at cycle 0); `last_cycles` its simulated duration.

    Raises:
        ArgumentTypeError: a config that is not a RunConfig, a build that is not a DistributedBuild.
        ArgumentValueError: callbacks for unknown SubWorkers.
        PlatformUnavailableError (a RuntimeError), at a call: a real-NPU platform (a2a3, a5).
    """

    def __init__(self, build: DistributedBuild, config: RunConfig | None = None, persistent: bool = False,
                 callbacks: dict[str, Callable[..., Any]] | None = None, *, _stage_all: bool = False) -> None:
        if not isinstance(build, DistributedBuild):
            raise ArgumentTypeError(f"DistributedWorker expects a DistributedBuild, got {type(build).__name__}")
        config = check_run_config(config) or RunConfig(platform=build.platform)
        self.build, self.config, self.persistent = build, config, persistent
        self.dist = config.distributed_config or DistributedConfig()
        callbacks = dict(callbacks or {})
        unknown = [n for n in callbacks if build.sub_workers and n not in build.sub_workers]
        if unknown:
            raise ArgumentValueError(f"callbacks for unknown SubWorker(s) {', '.join(map(repr, unknown))}; "
                                     f"'{build.name}' has {', '.join(map(repr, build.sub_workers)) or 'none'}")
        self.callbacks = callbacks
        self._stage_all = _stage_all
        self._world: World | None = World(build.chip_programs, config, self.dist, build.output_dir)
        self._kept: list[WindowBuffer] = []
        self._tensors: list[DeviceTensor] = []
        self._lock = threading.Lock()
        self._submitter: ThreadPoolExecutor | None = None
        self.last_records: list[DispatchRecord] = []
        self._staging: dict[tuple, torch.Tensor] = {}

    def __repr__(self) -> str:
        state = "closed" if self._world is None else f"{self.dist.world_size} ranks"
        return f"DistributedWorker({self.build.name!r}, {state})"

    @property
    def world(self) -> World:
        if self._world is None:
            raise DeviceStateError(f"this DistributedWorker of '{self.build.name}' is closed")
        return self._world

    # ---- calls -----------------------------------------------------------------------------------
    @user_facing
    def __call__(self, *args: Any) -> Any:
        """Run one host call with `args` (host orchestrator parameters in order); returns what the
        host function returns. Raises what the call raised (see `DistributedWorker`)."""
        with self._lock:
            return self._call(args)

    def submit(self, *args: Any) -> RunHandle:
        """Queue a call with `args`; returns its `RunHandle` at once."""
        self.world  # noqa: B018  (raises when closed)
        if self._submitter is None:
            self._submitter = ThreadPoolExecutor(1, "pypto-dist-submit")
        return RunHandle(self._submitter.submit(self.__call__, *args))

    def _call(self, args: Sequence[Any]) -> Any:
        world = self.world
        if not self.config.is_simulator:
            require_npu_runtime(self.config.platform)
        params = self.build.host_params
        if params and len(args) != len(params):
            raise ArgumentTypeError(f"'{self.build.name}' takes {len(params)} argument(s) "
                                    f"({', '.join(p.name for p in params)}), got {len(args)}")
        staged, copy_back = self._stage(args)
        world.begin_call()
        rt = HostRuntime(world, self.callbacks, self.dist.num_sub_workers, self.persistent, self._kept)
        try:
            result = self.build.host_fn(rt, *staged)
            rt.finish()
        except BaseException:
            if world.started:
                world._ctl.set_abort(ABORT_CANCEL)  # type: ignore[union-attr]
            try:
                rt.finish()
            except BaseException:   # noqa: BLE001 - the first error is the one to report
                pass
            raise
        finally:
            self.last_records = list(world.records)
            self._write_swimlane()
        for user, st in copy_back:
            user.copy_(st)
        return _unstage(result, staged, args)

    @property
    def last_cycles(self) -> int:
        """Simulated duration of the last call: the latest end of a rank's dispatches (cycles of the
        AI-core clock; `cost_model.cycles_to_us` converts)."""
        return max((r.end for r in self.last_records), default=0)

    def merged_swimlane(self) -> dict[str, Any]:
        """The last call as one trace-event document, every rank on one timeline (`timeline.py`)."""
        return merged_swimlane(self.last_records, self.dist.device_ids)

    def _write_swimlane(self) -> None:
        out = self.build.output_dir
        if out is None or self.config.enable_chip_swimlane < 1:
            return
        path = Path(out) / DFX_DIR / MERGED_SWIMLANE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.merged_swimlane()), encoding="utf-8")

    def _stage(self, args: Sequence[Any]) -> tuple[list[Any], list[tuple[torch.Tensor, torch.Tensor]]]:
        """The host arguments as the ranks see them, and (user tensor, staged copy) pairs to copy back."""
        params = self.build.host_params
        out: list[Any] = []
        back: list[tuple[torch.Tensor, torch.Tensor]] = []
        for i, a in enumerate(args):
            p = params[i] if i < len(params) else None
            name = f"'{p.name}'" if p is not None else f"{i}"
            if isinstance(a, DeviceTensor):
                out.append(a.tensor)
                continue
            if not isinstance(a, torch.Tensor):
                out.append(a)
                continue
            check_on_cpu(f"argument {name} of '{self.build.name}'", a)
            writes = p is None or p.direction in ("Out", "InOut")
            if not self._stage_all and not a.is_shared():
                raise ArgumentTypeError(
                    f"argument {name} of '{self.build.name}' is not in shared memory: a prepared distributed "
                    f"worker hands host tensors to its rank processes without copying them; call "
                    f"tensor.share_memory_() on it first (or use the one-shot call)")
            if writes or self._stage_all:
                st = self._staging_for(i, a)
                st.copy_(a)
                out.append(st)
                if writes:
                    back.append((a, st))
            else:
                out.append(a)
        return out, back

    def _staging_for(self, i: int, a: torch.Tensor) -> torch.Tensor:
        """A shared-memory tensor like `a` for argument `i`, kept for the next calls (calls run one at
        a time, so one per argument and layout is enough)."""
        key = (i, tuple(a.shape), tuple(a.stride()), a.dtype)
        st = self._staging.get(key)
        if st is None:
            st = self._staging[key] = torch.empty_like(a).share_memory_()
        return st

    # ---- resident tensors ------------------------------------------------------------------------
    def alloc_tensor(self, shape: Sequence[int], dtype: Any, init: Any = None) -> DeviceTensor:
        """A resident tensor in shared memory, zero-filled or holding `init`; pass it to calls in
        place of a host tensor (used in place, never copied).

        Raises ArgumentValueError: a negative dimension or an `init` of another shape;
        ArgumentTypeError: a bad dtype; DeviceStateError: the worker is closed."""
        from ...core.dtype import DataType

        self.world  # noqa: B018
        tdt = dtype.to_torch() if isinstance(dtype, DataType) else dtype
        if not isinstance(tdt, torch.dtype):
            raise ArgumentTypeError(f"alloc_tensor: dtype must be a torch dtype or a DataType, got {dtype!r}")
        dims = tuple(int(d) for d in shape)
        if any(d < 0 for d in dims):
            raise ArgumentValueError(f"alloc_tensor: shape {list(dims)} has a negative dimension")
        buf = torch.zeros(dims, dtype=tdt).share_memory_()
        if init is not None:
            if not isinstance(init, torch.Tensor) or tuple(init.shape) != dims:
                raise ArgumentValueError(f"alloc_tensor: init must be a tensor of shape {list(dims)}")
            buf.copy_(init.detach())
        t = DeviceTensor(buf, self)
        self._tensors.append(t)
        return t

    def free_tensor(self, t: DeviceTensor) -> None:
        """Release resident tensor `t` (any later use raises). Raises ArgumentValueError for a
        tensor this worker did not allocate (or already freed)."""
        if not isinstance(t, DeviceTensor) or not any(x is t for x in self._tensors):
            raise ArgumentValueError("free_tensor: not a live tensor of this worker")
        self._tensors = [x for x in self._tensors if x is not t]
        t._release("freed")

    # ---- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the rank processes, free every window buffer and resident tensor (idempotent)."""
        if self._submitter is not None:
            self._submitter.shutdown(wait=True)
            self._submitter = None
        world, self._world = self._world, None
        if world is not None:
            world.close()
        for t in self._tensors:
            t._release("closed")
        self._tensors, self._kept, self._staging = [], [], {}

    def __enter__(self) -> DistributedWorker:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:   # noqa: BLE001
            pass


def _unstage(result: Any, staged: list[Any], args: Sequence[Any]) -> Any:
    """`result` with staged copies replaced by the caller's own tensors."""
    if isinstance(result, tuple):
        return tuple(_unstage(r, staged, args) for r in result)
    for s, a in zip(staged, args):
        if result is s and s is not a:
            return a.tensor if isinstance(a, DeviceTensor) else a
    return result


@user_facing
def run(build: DistributedBuild, args: Sequence[Any], config: RunConfig | None = None,
        callbacks: dict[str, Callable[..., Any]] | None = None) -> Any:
    """One-shot call of `build` with `args`: start the ranks, run, stop them (SPEC §8). Host
    tensors are copied into shared memory and Out / InOut results copied back on success;
    `callbacks` binds HOST SubWorkers by name.

    Raises what `DistributedWorker.__call__` raises."""
    with DistributedWorker(build, config, callbacks=callbacks, _stage_all=True) as w:
        return w(*args)
