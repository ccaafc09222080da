"""`ChipWorker`: explicit dispatch with device-resident tensors (User Manual "Running on Device",
"JITFunction.compile()"; SPEC §7).

    worker = ChipWorker(config=RunConfig(platform="a2a3sim"))
    w_dev = worker.alloc_tensor(w.shape, w.dtype, init=w)     # resident weights
    handle = worker.register(my_kernel.compile(x, w, out))    # a callable handle
    for x, out in batches:
        handle(x, w_dev, out)                                 # host tensors copied, w_dev used in place
    worker.free_tensor(w_dev)
    worker.close()

A worker owns one simulated chip (`SimDevice`): every program it runs shares that chip's cores and
memories. `init()` opens it (implicitly on first use), `close()` frees every tensor it allocated;
both are idempotent and the worker is a context manager. After `close()` the worker refuses work
until `init()` is called again, and the tensors it had allocated stay unusable (using one says the
worker was closed; allocate them again after `init()`).

Mistakes in calls (wrong arguments, a freed tensor, a closed worker) raise `pypto.core.errors`
classes — `ArgumentTypeError` / `ArgumentValueError` / `DeviceStateError`, which are also TypeError /
ValueError / RuntimeError — whose traceback ends at the user's call, without PyPTO's own frames.
Real-NPU platforms (`a2a3`, `a5`) fail in `init()` with a RuntimeError naming what this machine
lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..core.dtype import FP4, DataType
from ..core.errors import ArgumentTypeError, ArgumentValueError, DeviceStateError, user_facing
from .binding import bind_call_args, check_on_cpu
from .compiled import CompiledProgram
from .config import RunConfig, backend_for_platform, is_simulator
from .device_tensor import DeviceTensor
from .sim.device import SimDevice
from .toolchain import require_npu_runtime

__all__ = ["ChipWorker", "KernelHandle"]


class KernelHandle:
    """A program registered on a worker: `handle(*args, **kwargs)` is
    `worker.run(compiled, *args, **kwargs)`; `worker.run(handle, ...)` accepts it in place of the
    program."""

    def __init__(self, worker: ChipWorker, compiled: CompiledProgram) -> None:
        self.worker = worker
        self.compiled = compiled

    @user_facing
    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:
        return self.worker.run(self.compiled, *args, **kwargs)

    def __repr__(self) -> str:
        return f"KernelHandle({self.compiled.program.name!r}, platform={self.worker.config.platform!r})"


def _torch_dtype(dtype: Any) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, DataType):
        return dtype.to_torch()   # TypeError for dtypes torch lacks
    raise ArgumentTypeError(f"dtype must be a torch dtype or a PyPTO DataType (pl.FP32), got {dtype!r}")


class ChipWorker:
    """One chip to run compiled programs on (see the module docstring).

    Args:
        config: platform, device id and the runtime switches used for every run (DFX outputs,
            sanitizer); default `RunConfig()` (the `a2a3sim` simulator).

    Raises:
        ArgumentTypeError (a TypeError): `config` is not a RunConfig.
    """

    @user_facing
    def __init__(self, config: RunConfig | None = None) -> None:
        if config is None:
            config = RunConfig()
        if not isinstance(config, RunConfig):
            raise ArgumentTypeError(f"ChipWorker(config=...) expects a RunConfig, got {type(config).__name__}")
        self.config = config
        self._device: SimDevice | None = None
        self._tensors: list[DeviceTensor] = []
        self._closed = False

    def __repr__(self) -> str:
        state = "open" if self._device is not None else ("closed" if self._closed else "not initialised")
        return f"ChipWorker(platform={self.config.platform!r}, device_id={self.config.device_id}, {state})"

    # ---- life cycle ----------------------------------------------------------------------------
    @user_facing
    def init(self) -> ChipWorker:
        """Open the chip (idempotent; reopens a closed worker).

        Raises:
            PlatformUnavailableError (a RuntimeError): a real-NPU platform on a machine without the
                toolkit/driver (the message names what is missing and the simulator platform to use
                instead).
        """
        if self._device is not None:
            return self
        if not is_simulator(self.config.platform):
            require_npu_runtime(self.config.platform)
        self._device = SimDevice(backend_for_platform(self.config.platform))
        self._closed = False
        return self

    def close(self) -> None:
        """Free every tensor this worker allocated and release the chip (idempotent)."""
        for t in self._tensors:
            t._release("closed")
        self._tensors = []
        if self._device is not None:
            self._device = None
            self._closed = True

    @property
    def is_open(self) -> bool:
        """True between `init()` (explicit or implicit) and `close()`."""
        return self._device is not None

    def __enter__(self) -> ChipWorker:
        return self.init()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def device(self) -> SimDevice:
        """The simulated chip (opens the worker on first use). Raises DeviceStateError (a
        RuntimeError) once closed."""
        if self._device is None:
            if self._closed:
                raise DeviceStateError("this ChipWorker is closed; call init() to open it again")
            self.init()
        return self._device  # type: ignore[return-value]

    # ---- device memory -------------------------------------------------------------------------
    @user_facing
    def alloc_tensor(self, shape: Sequence[int], dtype: Any, init: Any = None) -> DeviceTensor:
        """A new resident tensor of `shape` and `dtype` (torch dtype or `pl.FP32`-style DataType),
        zero-filled, or holding `init` (a tensor of the same shape, converted to `dtype`).

        Raises:
            ArgumentTypeError (a TypeError): a bad dtype (also FP4: packed types are not resident)
                or a non-tensor `init`.
            ArgumentValueError (a ValueError): a negative dimension, an `init` of another shape or
                not on the CPU. DeviceStateError (a RuntimeError): the worker is closed.
        """
        self.device  # noqa: B018  (opens the worker, or raises when closed)
        if (dtype.is_packed() if isinstance(dtype, DataType) else dtype == FP4.to_torch()):
            raise ArgumentTypeError(f"alloc_tensor: {dtype!r} tensors cannot be resident (the simulator "
                                    f"holds packed 4-bit values unpacked); pass them as host tensors, "
                                    f"which are copied in for each call")
        tdt = _torch_dtype(dtype)
        dims = tuple(int(d) for d in shape)
        if any(d < 0 for d in dims):
            raise ArgumentValueError(f"alloc_tensor: shape {list(dims)} has a negative dimension")
        buf = torch.zeros(dims, dtype=tdt)
        if init is not None:
            if not isinstance(init, torch.Tensor):
                raise ArgumentTypeError(f"alloc_tensor(init=...) expects a torch.Tensor, got "
                                        f"{type(init).__name__}")
            check_on_cpu("alloc_tensor(init=...)", init)
            if tuple(init.shape) != dims:
                raise ArgumentValueError(f"alloc_tensor: init has shape {list(init.shape)}, expected "
                                         f"{list(dims)}")
            buf.copy_(init.detach())
        t = DeviceTensor(buf, self)
        self._tensors.append(t)
        return t

    @user_facing
    def free_tensor(self, t: DeviceTensor) -> None:
        """Release `t`; any later use of it raises.

        Raises:
            ArgumentTypeError (a TypeError): not a DeviceTensor. ArgumentValueError (a ValueError):
                allocated by another worker, already freed, or released when the worker closed.
        """
        if not isinstance(t, DeviceTensor):
            raise ArgumentTypeError(f"free_tensor expects a DeviceTensor, got {type(t).__name__}")
        if t.worker is not self:
            raise ArgumentValueError(f"{t!r} was not allocated by this worker")
        if t.release_reason == "closed":
            raise ArgumentValueError(f"{t!r} was already released: its ChipWorker was closed")
        if t.freed:
            raise ArgumentValueError(f"{t!r} was already freed")
        t._release()
        self._tensors.remove(t)

    # ---- dispatch ------------------------------------------------------------------------------
    def _check_program(self, compiled: Any) -> CompiledProgram:
        if isinstance(compiled, KernelHandle):
            compiled = compiled.compiled
        if not isinstance(compiled, CompiledProgram):
            hint = (f"; get one with {compiled.__name__}.compile(*sample_args)"
                    if hasattr(compiled, "specialize") else "")
            raise ArgumentTypeError(f"expected a CompiledProgram or a KernelHandle, got "
                                    f"{type(compiled).__name__}{hint}")
        chip = backend_for_platform(self.config.platform)
        if compiled.backend_type is not chip:
            raise ArgumentValueError(f"'{compiled.program.name}' was compiled for "
                                     f"{compiled.backend_type.name}, but this worker runs platform "
                                     f"{self.config.platform!r} ({chip.name})")
        return compiled

    @user_facing
    def register(self, compiled: CompiledProgram | KernelHandle) -> KernelHandle:
        """A callable handle running `compiled` (a CompiledProgram, or a handle of any worker) on
        this worker.

        Raises:
            ArgumentTypeError (a TypeError): neither a CompiledProgram nor a KernelHandle.
            ArgumentValueError (a ValueError): compiled for another chip.
            DeviceStateError (a RuntimeError): the worker is closed.
        """
        self.device  # noqa: B018
        return KernelHandle(self, self._check_program(compiled))

    @user_facing
    def run(self, compiled: CompiledProgram | KernelHandle, /, *args: Any, **kwargs: Any) -> Any:
        """Run `compiled` (a CompiledProgram or a KernelHandle from `register`) with `args` on this
        chip; returns what calling it returns. Arguments may also be given by parameter name.

        Host tensors are copied in and Out/InOut results copied back; DeviceTensors are used in
        place and must belong to this worker. The worker's config selects the sanitizer and the
        DFX outputs; its compile-time fields (`dump_passes`, ...) warn, as they cannot apply.

        Raises:
            ArgumentTypeError / ArgumentValueError (TypeError / ValueError): bad arguments (missing
                or unknown names, a `config=` — the worker's own is used —, a DeviceTensor of
                another worker, a program for another chip...).
            DeviceStateError (a RuntimeError): a closed worker, a freed DeviceTensor.
            RuntimeSimError: an error while running.
        """
        device = self.device
        compiled = self._check_program(compiled)
        if "config" in kwargs and all(p.name != "config" for p in compiled.entry_function.params):
            raise ArgumentTypeError("a ChipWorker runs every program with its own RunConfig: pass it as "
                                    "ChipWorker(config=...); its handles and worker.run take no config= "
                                    "(a CompiledProgram called directly does)")
        args = bind_call_args(compiled.entry_function, args, kwargs)
        for p, a in zip(compiled.entry_function.params, args):
            if isinstance(a, DeviceTensor) and a.worker is not self:
                raise ArgumentValueError(f"argument '{p.name}': {a!r} belongs to another ChipWorker")
        return compiled.run_on(device, args, self.config)
