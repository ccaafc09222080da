"""`CompiledProgram`: a lowered program plus where its artifacts are, callable like a function.

`ir.compile(...)` returns one (SPEC §5: `str(compiled)` is the output directory). Calling it runs the
entry function on the simulator:

1. match the arguments to the entry's parameters (positionally and/or by parameter name, as a Python
   call), check them and copy host tensors into fresh device tensors (`runtime.binding`), so a
   failed run never modifies the caller's tensors;
2. run the entry on a `SimDevice` for the target chip (orchestration → tasks → kernels);
3. copy every Out/InOut device tensor back into the caller's tensor in place;
4. return the entry's return value(s): the caller's own tensor where a returned value is a
   parameter's device tensor, other tensors (e.g. created by `tensor.create`) as they are.

Real-NPU platforms (`a2a3`, `a5`) raise a RuntimeError naming the missing toolkit/driver.

Argument mistakes raise `ArgumentTypeError` / `ArgumentValueError` (`pypto.core.errors`; also a
TypeError / ValueError) whose traceback stops at the user's call; the compile-time fields of a
RunConfig given at call time (`dump_passes`, `strategy`, `save_kernels`) cannot apply to a finished
build and warn once per field and program. Every run updates `<output_dir>/dfx_outputs/` (see
`pypto.runtime.dfx.update_dfx`): it holds the DFX files of the last run only.

`CompiledProgram.from_dir(path)` reloads a finished build (its `compiled_meta.json` and the
serialized lowered program) so it can run again without recompiling. The SPEC §7 extraction surface
(`chip_callable`, `runtime_name`, `runtime_config`, `build_orch_args`, `build_call_config`)
describes the build the way a chip-level runtime harness consumes it.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..backend.soc import BackendType
from ..core.diagnostics import Diagnostic, DiagnosticOptions, diagnostic_options
from ..core.enums import ParamDirection
from ..core.errors import ArgumentTypeError, ArgumentValueError, user_facing
from ..ir.entry import select_entry
from ..ir.function import Program
from .binding import _check_scalar, _check_tensor, bind_call_args, bind_host_args, to_host_storage
from .config import (
    COMPILE_TIME_FIELDS,
    RunConfig,
    backend_for_platform,
    check_platform,
    check_run_config,
    is_simulator,
)
from .device_tensor import DeviceTensor
from .dfx import update_dfx
from .sim.device import SimDevice
from .sim.record import RunRecord
from .sim.task import Task
from .toolchain import require_npu_runtime

__all__ = ["CompiledProgram", "select_entry", "ChipCallable", "OrchArg", "META_FORMAT", "META_FILE",
           "PROGRAM_IR_FILE"]

META_FORMAT = "pypto-build-1"       # "format" of compiled_meta.json
META_FILE = "compiled_meta.json"    # written last by ir.compile: its presence marks a complete build
PROGRAM_IR_FILE = "program.msgpack"  # the lowered program, ir.serialize'd


@dataclass(frozen=True)
class ChipCallable:
    """What a chip-level runtime loads to run a build (SPEC §7 `chip_callable`).

    Attributes:
        root: the build folder; paths below are relative to it.
        orchestration: the entry's host orchestration source (`orchestration/<entry>.cpp`), or
            None when the entry is a kernel.
        entry_symbol: the C symbol of the orchestration entry (`aicpu_orchestration_entry`).
        kernels: the kernel table (func_id, name, core type, `.pto` and source paths).
    """

    root: str
    orchestration: str | None
    entry_symbol: str
    kernels: tuple[Any, ...]


@dataclass(frozen=True)
class OrchArg:
    """One slot of the orchestration argument list (SPEC §7 `build_orch_args`).

    `kind` is "tensor" (value: the caller's torch tensor), "scalar" (value: a Python number) or
    "dim" (a dynamic dimension's size, after the parameters); `direction` In/Out/InOut; `dtype` the
    PyPTO dtype name; `shape` the tensor's shape (() for scalars and dims).
    """

    kind: str
    name: str
    direction: str
    value: Any
    dtype: str
    shape: tuple[int, ...]


class CompiledProgram:
    """A compiled program (see the module docstring).

    Args:
        program: the lowered `ir.Program`.
        output_dir: artifact directory (`str(self)` and `os.fspath(self)` give it).
        backend_type: target chip; None derives it from `platform`.
        platform: default platform for calls without a RunConfig ("a2a3sim").
        entry: name of the entry function (see `select_entry`).

    Attributes:
        program, output_dir (str), platform, backend_type, entry (name), entry_function,
        output_indices: indices of the entry's Out/InOut parameters,
        tasks: Task records of the last run.

    Raises:
        ValueError: unknown platform, a platform that does not target `backend_type`, or a bad entry.
    """

    def __init__(self, program: Program, output_dir: str | os.PathLike | None,
                 backend_type: BackendType | None, platform: str = "a2a3sim",
                 entry: str | None = None) -> None:
        check_platform(platform)
        derived = backend_for_platform(platform)
        if backend_type is None:
            backend_type = derived
        elif backend_type is not derived:
            raise ValueError(f"platform {platform!r} targets {derived.name}, but the program was "
                             f"compiled for {backend_type.name}")
        self.program = program
        self.output_dir = os.fspath(output_dir) if output_dir is not None else ""
        self.platform = platform
        self.backend_type = backend_type
        self.entry_function = select_entry(program, entry)
        self.entry = self.entry_function.name
        self.output_indices = [i for i, d in enumerate(self.entry_function.param_directions)
                               if d in (ParamDirection.Out, ParamDirection.InOut)]
        self.tasks: list[Task] = []
        self.meta: dict[str, Any] | None = None  # compiled_meta.json of a reloaded build
        self.last_run: RunRecord | None = None   # schedule, scopes and findings of the last run
        self.diagnostics = DiagnosticOptions()    # diagnostic_phase / disabled_diagnostics of the build
        self.run_hints: list[Diagnostic] = []     # run-time hints (PH004-PH007) of the last run
        self._device: SimDevice | None = None
        self._warned_fields: set[str] = set()   # compile-time RunConfig fields already warned about

    def __str__(self) -> str:
        return self.output_dir

    def __fspath__(self) -> str:
        return self.output_dir

    def __repr__(self) -> str:
        return (f"CompiledProgram({self.program.name!r}, entry={self.entry!r}, "
                f"platform={self.platform!r}, output_dir={self.output_dir!r})")

    @property
    def device(self) -> SimDevice:
        """The simulated device this program runs on (created on first use, then reused)."""
        if self._device is None:
            self._device = SimDevice(self.backend_type)
        return self._device

    @user_facing
    def __call__(self, /, *args: Any, config: RunConfig | None = None, **kwargs: Any) -> Any:
        """Run the entry with `args` (torch tensors, DeviceTensors, Python numbers); return its result.

        Arguments bind to the entry's parameters as in a Python call: positionally, by parameter
        name (`cp(a=x, c=y)`), or both; `config` is the RunConfig, so a parameter named `config`
        must be passed positionally. Out/InOut tensors are updated in place (DeviceTensors are used
        in place, never copied). Returns None when the entry returns nothing, the single value when
        it returns one, else a tuple. With `config.codegen_only` the arguments are checked but
        nothing runs (returns None). `config` also selects the sanitizer, dependency tracking and
        the DFX outputs written under `<output_dir>/dfx_outputs/` (see `RunConfig`); `last_run`
        holds the run's record. Compile-time fields of `config` warn (see the module docstring).

        Raises:
            ArgumentTypeError (a TypeError): wrong, unknown, missing or duplicate arguments, wrong
                dtypes, a `config` that is not a RunConfig (the message names the parameter).
            ArgumentValueError (a ValueError): wrong shapes, tensors not on the CPU, a config whose
                platform targets another chip than the program.
            DeviceStateError (a RuntimeError): a freed DeviceTensor or one of a closed worker.
            RuntimeError: a real-NPU platform (no toolkit/driver here).
            RuntimeSimError: the simulator found an error while running (SanitizerError with the
                sanitizer's findings).
        """
        config = check_run_config(config)
        return self.run_on(None, bind_call_args(self.entry_function, args, kwargs), config)

    def run_on(self, device: SimDevice | None, args: tuple[Any, ...], config: RunConfig | None, *,
               warn_compile_fields: bool = True) -> Any:
        """`self(*args, config=config)` on simulated chip `device` (None: this program's own), with
        `args` in parameter order. `warn_compile_fields=False` is for a caller that compiled with
        `config` itself (a `@pl.jit` call), so its compile-time fields did apply."""
        platform = config.platform if config is not None else self.platform
        backend = backend_for_platform(platform)
        if backend is not self.backend_type:
            raise ArgumentValueError(f"platform {platform!r} targets {backend.name}, but the program "
                                     f"was compiled for {self.backend_type.name}")
        if config is not None and warn_compile_fields:
            self._warn_compile_fields(config)
        dev_args = bind_host_args(self.entry_function, args)
        if config is not None and config.codegen_only:
            return None
        if not is_simulator(platform):
            require_npu_runtime(platform)
        device = device if device is not None else self.device
        device.pipe_timeline = bool(config is not None and config.enable_chip_swimlane >= 2)
        failed = True
        try:
            result = device.run(self.program, self.entry_function, dev_args,
                                sanitize=bool(config is not None and config.sanitize),
                                auto_deps=config.auto_deps if config is not None else True,
                                rings=config.rings() if config is not None else None,
                                dump_args=config.enable_dump_args if config is not None else 0,
                                replay=config.sim_replay if config is not None else True)
            failed = False
        finally:
            self.tasks = list(device.tasks)
            self.last_run = device.last_run
            if self.last_run is not None:
                _update_dfx(self.last_run, config, self.output_dir, failed)
        self._update_run_hints(config)
        params = self.entry_function.params
        for i in self.output_indices:
            if not isinstance(args[i], DeviceTensor):
                args[i].copy_(to_host_storage(dev_args[i], params[i].type.dtype))
        if result is None or len(result) == 0:
            return None
        rtypes = list(self.entry_function.return_types) + [None] * len(result)
        host = [self._to_host(v, dev_args, args, t) for v, t in zip(result, rtypes)]
        return host[0] if len(host) == 1 else tuple(host)

    def _update_run_hints(self, config: RunConfig | None) -> None:
        """Run-time hints of the last run (`pypto.runtime.run_hints`), with the build's diagnostic
        options overridden by `config`'s diagnostic_phase / disabled_diagnostics when set."""
        from .run_hints import update_run_hints

        options = self.diagnostics
        if config is not None:
            options = diagnostic_options(config.diagnostic_phase, config.disabled_diagnostics, base=options)
        self.run_hints = update_run_hints(self, options)

    def _warn_compile_fields(self, config: RunConfig) -> None:
        for name in config.compile_time_settings():
            if name in self._warned_fields:
                continue
            self._warned_fields.add(name)
            warnings.warn(f"RunConfig.{name}={getattr(config, name)!r} has no effect when running the "
                          f"already compiled program '{self.program.name}': it is a compile-time "
                          f"setting; {COMPILE_TIME_FIELDS[name][1]}", UserWarning,
                          stacklevel=_user_stacklevel())

    @user_facing
    def validate_ir(self, inputs: Any, expected: Any, rtol: float | None = None,
                    atol: float | None = None) -> Any:
        """Run the torch reference of every pass dump on `inputs` and compare with `expected`
        (User Manual "Torch Codegen Debug Guide"); see `pypto.debug.validate_ir`.

        Returns a `ValidationReport` naming the first pass whose numbers diverge (None if none;
        "frontend" when the source program already disagrees with `expected`).
        Raises ArgumentTypeError / ArgumentValueError for inputs that do not fit the entry.
        """
        from ..debug.validate import validate_ir

        return validate_ir(self, inputs, expected, rtol=rtol, atol=atol)

    @staticmethod
    def _to_host(v: Any, dev_args: list[Any], args: tuple[Any, ...], t: Any = None) -> Any:
        """The host value of result `v` of type `t`: the caller's tensor for a parameter, a
        tensor of a packed type packed (`to_host_storage`), else `v`."""
        if isinstance(v, tuple):
            return tuple(CompiledProgram._to_host(x, dev_args, args) for x in v)
        for d, a in zip(dev_args, args):
            if v is d:
                return a
        dtype = getattr(t, "dtype", None)
        if hasattr(v, "shape") and dtype is not None and dtype.is_packed():
            return to_host_storage(v, dtype)
        return v

    # ---- reloading a build ------------------------------------------------------------------
    @classmethod
    def from_dir(cls, path: str | os.PathLike, platform: str | None = None) -> Any:
        """Reload the build in folder `path` (written by `ir.compile`) to run it on the simulator.

        A distributed build (a folder with `distributed_meta.json`, SPEC §8) is reloaded as what
        `ir.compile` returned for it, a `DistributedCompiledProgram` (its `from_dir`).

        Args:
            path: the build folder (what `str(compiled)` was).
            platform: run platform; None keeps the one the build was made for.

        Raises:
            FileNotFoundError: `path` is not a folder, or has no `compiled_meta.json` (an incomplete
                or failed build; its `report/error.log` says why), or lacks the program file.
            ValueError: a `compiled_meta.json` of another format, or a platform for another chip.
        """
        from ..ir.serialize import deserialize

        root = Path(path)
        if not root.is_dir():
            raise FileNotFoundError(f"build folder {os.fspath(root)!r} does not exist")
        meta_path = root / META_FILE
        if not meta_path.is_file():
            from .dist.program import DIST_META_FILE, DistributedCompiledProgram

            if (root / DIST_META_FILE).is_file():
                return DistributedCompiledProgram.from_dir(root, platform)
            err = root / "report" / "error.log"
            why = (f"; the compile failed, see {os.fspath(err)}" if err.is_file()
                   else "; the compile failed or did not finish")
            raise FileNotFoundError(f"{os.fspath(root)!r} is not a complete PyPTO build: it has no "
                                    f"{META_FILE}{why}")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != META_FORMAT:
            got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            raise ValueError(f"{os.fspath(meta_path)} has format {got!r}; this PyPTO reads {META_FORMAT!r}")
        ir_path = root / meta.get("program_ir", PROGRAM_IR_FILE)
        if not ir_path.is_file():
            raise FileNotFoundError(f"{os.fspath(root)!r} is not a complete PyPTO build: "
                                    f"{ir_path.name} is missing")
        program = deserialize(ir_path.read_bytes())
        cp = cls(program, root, BackendType[meta["backend"]], platform=platform or meta["platform"],
                 entry=meta.get("entry"))
        cp.meta = meta
        saved = meta.get("diagnostics") or {}
        cp.diagnostics = diagnostic_options(saved.get("phase"), saved.get("disabled"))
        return cp

    # ---- SPEC §7 extraction surface ------------------------------------------------------------
    @property
    def runtime_name(self) -> str:
        """Name of the runtime the build targets (`tensormap_and_ringbuffer`, the PTO2 runtime)."""
        from ..codegen.kernel_config import RUNTIME_NAME

        return RUNTIME_NAME

    def _kernels(self) -> tuple[Any, ...]:
        from dataclasses import replace

        from ..codegen.kernel_config import kernel_table

        out = []
        for k in kernel_table(self.program):
            if k.pto is None:  # a hand-written kernel: its source is its own .cpp
                out.append(k)
                continue
            cpp = k.pto[: -len(".pto")] + ".cpp"
            built = self.output_dir and os.path.isfile(os.path.join(self.output_dir, cpp))
            out.append(replace(k, source=cpp) if built else k)
        return tuple(out)

    @property
    def chip_callable(self) -> ChipCallable:
        """The orchestration source, entry symbol and kernel table of this build."""
        from ..codegen.common import is_kernel
        from ..codegen.kernel_config import ENTRY_SYMBOL

        orch = None if is_kernel(self.entry_function) else f"orchestration/{self.entry}.cpp"
        return ChipCallable(self.output_dir, orch, ENTRY_SYMBOL, self._kernels())

    @property
    def runtime_config(self) -> dict[str, Any]:
        """Runtime name, platform, chip, block_dim (AIC cores), AICPU threads, entry and kernels."""
        from ..codegen.kernel_config import runtime_settings

        cfg = runtime_settings(self.backend_type, self.platform)
        cc = self.chip_callable
        cfg.update(entry=self.entry, orchestration=cc.orchestration,
                   kernels=[k.as_dict() for k in cc.kernels])
        return cfg

    @user_facing
    def build_orch_args(self, /, *args: Any, **kwargs: Any) -> list[OrchArg]:
        """The orchestration argument list for a call with `args` / `kwargs` (no copies are made).

        Order (the ABI in `compiled_meta.json`): one slot per entry parameter, then one per
        dynamic dimension of the parameter shapes.

        Raises:
            ArgumentTypeError / ArgumentValueError: arguments that do not match the entry (as for
                a call).
        """
        from ..ir.types import ScalarType, TensorType

        func = self.entry_function
        args = bind_call_args(func, args, kwargs)
        dims: dict[str, tuple[int, str]] = {}
        out: list[OrchArg] = []
        for p, d, a in zip(func.params, func.param_directions, args):
            t = p.type
            if isinstance(t, TensorType):
                a = getattr(a, "tensor", a)
                _check_tensor(func, p.name, t, a, dims)
                out.append(OrchArg("tensor", p.name, d.name, a, t.dtype.name, tuple(a.shape)))
            elif isinstance(t, ScalarType):
                out.append(OrchArg("scalar", p.name, d.name, _check_scalar(func, p.name, t.dtype, a),
                                   t.dtype.name, ()))
            else:
                raise ArgumentTypeError(f"parameter '{p.name}' of '{func.name}' cannot be passed from the "
                                        f"host")
        for name, (n, _) in dims.items():
            out.append(OrchArg("dim", name, "In", n, "INDEX", ()))
        return out

    def build_call_config(self, config: RunConfig | None = None) -> dict[str, Any]:
        """Launch settings of one call: platform, device, block_dim, AICPU threads and DFX switches.

        Raises:
            ValueError: a config whose platform targets another chip than this build.
        """
        from ..codegen.kernel_config import runtime_settings

        config = check_run_config(config) or RunConfig(platform=self.platform)
        if backend_for_platform(config.platform) is not self.backend_type:
            raise ArgumentValueError(f"platform {config.platform!r} targets "
                             f"{backend_for_platform(config.platform).name}, but the program was "
                             f"compiled for {self.backend_type.name}")
        rs = runtime_settings(self.backend_type, config.platform)
        return {"runtime": rs["name"], "platform": config.platform, "device_id": config.device_id,
                "block_dim": rs["block_dim"], "aicpu_thread_num": rs["aicpu_thread_num"],
                "enable_chip_swimlane": config.enable_chip_swimlane, "enable_dep_gen": config.enable_dep_gen,
                "enable_scope_stats": config.enable_scope_stats, "enable_pmu": config.enable_pmu,
                "enable_dump_args": config.enable_dump_args, **config.rings().as_dict()}


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _user_stacklevel() -> int:
    """`stacklevel` for a warning issued by this module's caller chain that points at the first frame
    outside the pypto package (the user's call)."""
    f, level = sys._getframe(1), 1
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(_PACKAGE_DIR):
        f, level = f.f_back, level + 1
    return level


def _update_dfx(record: RunRecord, config: Any, output_dir: str, failed: bool) -> None:
    """`update_dfx` after a run; after a failed run (its error is being raised) a DFX writer that
    fails too is reported as a warning, so that the run's own error reaches the user."""
    if not failed:
        update_dfx(record, config, output_dir)
        return
    try:
        update_dfx(record, config, output_dir)
    except Exception as e:   # noqa: BLE001 - never mask the run's error
        warnings.warn(f"the DFX outputs of the failed run were not written ({type(e).__name__}: {e})",
                      RuntimeWarning, stacklevel=_user_stacklevel())
