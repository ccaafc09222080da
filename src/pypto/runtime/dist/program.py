"""Compiling and calling distributed programs (SPEC §8; docs/distributed.md "Host orchestrator").

`ir.compile` of a program with a HOST orchestrator (and `host_orch.compile(...)` of a
`@pl.jit.host` function) ends here (`compile_distributed`). The program is split by level:

- the HOST orchestrator becomes the host driver, Python code written to `orchestration/host_orch.py`
  (`pypto.codegen.host`), which the distributed runtime runs in the calling process;
- every chip orchestration function it dispatches (`f(..., device=r)`) becomes a complete chip build
  under `next_levels/<f>/`: `ir.compile` of the sub-Program holding `f` and every function it calls;
- each host-level collective becomes a builtin chip program (`pypto.runtime.dist.builtin`) compiled
  the same way and dispatched to every rank;
- each HOST SubWorker is described in `sub_workers/<name>.json` (it is bound to a Python callback at
  run time).

Build folder::

    host_program.msgpack          the host-level functions (HOST orchestrator, SubWorkers), serialized
    orchestration/host_orch.py    the host driver
    next_levels/<program>/        one complete chip build per chip program (its compiled_meta.json)
    sub_workers/<name>.json       name and parameters of each SubWorker
    report/error.log              only when compilation failed
    distributed_meta.json         written last: marks a complete build (host params, platform,
                                  backend, distributed config, chip programs, sub workers)

There is no top-level `kernel_config.py`. A failed compile leaves no complete-looking folder: an
earlier build's `distributed_meta.json` is removed first (then its artifacts), a failure removes
every artifact this compile made (chip builds included; `report/error.log` says why), and
`distributed_meta.json` is written last.

`DistributedCompiledProgram` is the result: call it (`compiled(*args, config=cfg)`, one run), or
`prepare(...)` a reusable worker; `from_dir(path)` reloads a build. Both delegate to the multi-rank
runtime (`pypto.runtime.dist.run` / `DistributedWorker`) with the `DistributedBuild` of `.build`.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...core.dtype import dtype_from_torch
from ...core.enums import FunctionType
from ...core.errors import ArgumentTypeError, ArgumentValueError, CompileError, user_facing
from ...ir.expr import Call, GlobalVar
from ...ir.function import Function, Program
from ...ir.structural import structural_equal
from ...ir.visitor import IRVisitor
from ...ops import get_op
from ...ops.distributed_host import dispatch_device
from .build import DistributedBuild, HostParam

__all__ = ["DistributedCompiledProgram", "compile_distributed", "is_distributed", "host_orchestrator",
           "bind_host_args", "dispatch_all", "signal_window", "DIST_META_FILE", "DIST_META_FORMAT", "HOST_IR_FILE"]

DIST_META_FILE = "distributed_meta.json"
DIST_META_FORMAT = "pypto-dist-build-1"
HOST_IR_FILE = "host_program.msgpack"
_ARTIFACTS = ("orchestration", "next_levels", "sub_workers", HOST_IR_FILE)
_COLLECTIVE_TRAIT = "collective"  # host-level collectives (pypto.ops.distributed_collectives)
_loaded = itertools.count()


# ---- the program's levels ---------------------------------------------------------------------
def _is_host_orch(f: Function) -> bool:
    from ...language.parser.host import is_host_orchestrator

    return is_host_orchestrator(f.level, f.role, f.func_type) and f.func_type is not FunctionType.InCore


def _is_sub_worker(f: Function) -> bool:
    from ...language.parser.host import is_sub_worker

    return is_sub_worker(f.level, f.role)


def is_distributed(program: Program) -> bool:
    """Whether `program` has a HOST orchestrator (SPEC §8), so `ir.compile` builds it here."""
    return any(_is_host_orch(f) for f in program.functions)


def host_orchestrator(program: Program) -> Function:
    """The HOST orchestrator of `program`. Raises CompileError (located) when there are several."""
    hosts = [f for f in program.functions if _is_host_orch(f)]
    if len(hosts) != 1:
        raise CompileError(f"program '{program.name}' has {len(hosts)} HOST orchestrators "
                           f"({', '.join(f.name for f in hosts)}); a distributed program has exactly one",
                           hosts[1].span if len(hosts) > 1 else None)
    return hosts[0]


class _HostCalls(IRVisitor):
    """The chip programs a host function dispatches and its host-level collective calls, in order."""

    def __init__(self) -> None:
        self.chips: dict[str, None] = {}
        self.collectives: list[Call] = []

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar) and dispatch_device(e) is not None:
            self.chips[e.op.name] = None
        elif isinstance(e.op, str) and get_op(e.op).has_trait(_COLLECTIVE_TRAIT):
            self.collectives.append(e)
        super().visit_Call(e)


class _Callees(IRVisitor):
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar) and e.op.name not in self.names:
            self.names.append(e.op.name)
        super().visit_Call(e)


def chip_subprogram(program: Program, name: str) -> Program:
    """The sub-Program of chip orchestration function `name`: it and every function it calls."""
    todo, seen = [name], {}
    while todo:
        f = program.get_function(todo.pop())
        if f is None or f.name in seen:
            continue
        seen[f.name] = f
        c = _Callees()
        c.visit_function(f)
        todo += c.names
    return Program(name, tuple(seen.values()), span=seen[name].span)


def _builtin_programs(calls: list[Call]) -> tuple[dict[int, Program], set[int]]:
    """The builtin chip program of every host-level collective call (by id of the call), and the
    ids of the calls that left out their signal (the driver allocates one: `signal_window`).

    Raises CompileError (located at the call) when the builtin collectives are not available."""
    if not calls:
        return {}, set()
    try:
        from . import builtin  # the collectives' chip programs
    except ImportError:
        raise CompileError(f"host-level collective '{calls[0].op}' needs the builtin collective chip "
                           f"programs (pypto.runtime.dist.builtin), which this installation lacks; call "
                           f"the collective inside a chip kernel instead", calls[0].span) from None
    out: dict[int, Program] = {}
    made: list[tuple[Call, Program]] = []
    for c in calls:
        same = next((p for d, p in made if d.op == c.op and d.kwargs == c.kwargs and all(
            structural_equal(a.type, b.type) for a, b in zip(d.args, c.args)) and len(d.args) == len(c.args)),
            None)
        if same is None:
            same = builtin.builtin_program(c.op, [a.type for a in c.args], dict(c.kwargs))
            made.append((c, same))
        out[id(c)] = same
    implicit = getattr(builtin, "implicit_signal", None)
    unsignalled = {id(c) for c in calls if implicit is not None and implicit(c.op, [a.type for a in c.args])}
    return out, unsignalled


# ---- the build folder -------------------------------------------------------------------------
def _clear_previous(out: Path) -> None:
    """Remove an earlier distributed build in `out` (its meta first). Artifacts not from a
    complete distributed build are refused (FileExistsError), never deleted."""
    meta = out / DIST_META_FILE
    ours = meta.is_file()
    meta.unlink(missing_ok=True)
    for name in _ARTIFACTS:
        p = out / name
        if not p.exists():
            continue
        if not ours:
            raise FileExistsError(f"output folder {os.fspath(out)!r} already has '{name}', which is not from "
                                  f"a complete PyPTO distributed build; choose an empty output_dir or remove it")
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    (out / "report" / "error.log").unlink(missing_ok=True)


def _host_params(f: Function) -> list[HostParam]:
    return [HostParam(p.name, d.name, p.type) for p, d in zip(f.params, f.param_directions)]


def _meta(program: Program, host: Function, subs: list[Function], chips: list[str], backend: Any,
          platform: str, distributed_config: Any) -> dict[str, Any]:
    from ...ir.printer import python_print

    def params(f: Function) -> list[dict[str, str]]:
        return [{"name": p.name, "type": python_print(p.type), "direction": d.name}
                for p, d in zip(f.params, f.param_directions)]

    dc = distributed_config
    if dc is not None and hasattr(dc, "__dataclass_fields__"):
        from dataclasses import asdict

        dc = asdict(dc)
    return {"format": DIST_META_FORMAT, "program": program.name, "host": host.name,
            "host_driver": "orchestration/host_orch.py", "host_ir": HOST_IR_FILE,
            "host_params": params(host), "platform": platform, "backend": backend.name,
            "distributed_config": dc, "chip_programs": chips,
            "sub_workers": [{"name": f.name, "params": params(f)} for f in subs]}


def load_host_driver(path: Path, name: str) -> Any:
    """The host function `name` of the generated driver file `path`."""
    spec = importlib.util.spec_from_file_location(f"pypto_host_orch_{next(_loaded)}", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def compile_distributed(program: Program, output_dir: str | os.PathLike, *, chip_compile: Any,
                        distributed_config: Any = None, **chip_options: Any) -> DistributedCompiledProgram:
    """Build distributed `program` into `output_dir` (module doc); returns its
    `DistributedCompiledProgram`. `chip_compile` is `ir.compile` (`pypto.compiler.compile`, handed in
    by it: the compiler sits above the runtime), called for every chip build with `chip_options`
    (strategy, dump_passes, backend_type, skip_ptoas, verification_level, platform,
    diagnostic_phase, disabled_diagnostics), and with `quiet_hints=True` for the builtin programs
    of host-level collectives (no hint summary line for code the user did not write);
    `distributed_config` is recorded in
    `distributed_meta.json`.

    Raises:
        CompileError: several HOST orchestrators, a host-level collective without the builtin
            programs, or any error of a chip build (also written to `report/error.log`).
        FileExistsError: `output_dir` holds build artifacts that are not from a complete build.
    """
    from ...backend import BackendType
    from ...codegen.host import HOST_DRIVER_FILE, render_host_driver
    from ...ir.serialize import serialize

    host = host_orchestrator(program)
    subs = [f for f in program.functions if _is_sub_worker(f)]
    backend = chip_options.get("backend_type", BackendType.Ascend910B)
    platform = chip_options.get("platform") or ("a2a3sim" if backend is BackendType.Ascend910B else "a5sim")
    chip_options = {**chip_options, "backend_type": backend, "platform": platform}
    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    _clear_previous(out)
    try:
        calls = _HostCalls()
        calls.visit_function(host)
        builtins, unsignalled = _builtin_programs(calls.collectives)
        subprograms = [chip_subprogram(program, n) for n in calls.chips]
        ours = list({id(p): p for p in builtins.values()}.values())
        chips: dict[str, Any] = {}
        for sub, quiet in [*((s, False) for s in subprograms), *((s, True) for s in ours)]:
            extra = {"quiet_hints": True} if quiet else {}  # a builtin's hints: in its log only, not the user's code
            chips[sub.name] = chip_compile(sub, output_dir=out / "next_levels" / sub.name, **chip_options, **extra)
        driver = render_host_driver(program, host.name, {k: p.name for k, p in builtins.items()}, unsignalled)
        (out / HOST_DRIVER_FILE).parent.mkdir(parents=True, exist_ok=True)
        (out / HOST_DRIVER_FILE).write_text(driver, encoding="utf-8")
        (out / HOST_IR_FILE).write_bytes(serialize(Program(program.name, (host, *subs), span=program.span)))
        (out / "sub_workers").mkdir()
        meta = _meta(program, host, subs, list(chips), backend, platform, distributed_config)
        for s in meta["sub_workers"]:
            (out / "sub_workers" / f"{s['name']}.json").write_text(json.dumps(s, indent=2), encoding="utf-8")
    except Exception as e:  # nothing half-made stays: the chip builds of this compile go too
        for name in _ARTIFACTS:
            p = out / name
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
        report = out / "report"
        report.mkdir(parents=True, exist_ok=True)
        (report / "error.log").write_text(f"{type(e).__name__}: {e}\n\n{traceback.format_exc()}", encoding="utf-8")
        raise
    tmp = out / (DIST_META_FILE + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2), encoding="utf-8")
    os.replace(tmp, out / DIST_META_FILE)
    build = DistributedBuild(host.name, load_host_driver(out / HOST_DRIVER_FILE, host.name), _host_params(host),
                             chips, [f.name for f in subs], out, platform, meta)
    return DistributedCompiledProgram(build, program)


# ---- helpers the generated driver calls -------------------------------------------------------
def bind_host_args(rt: Any, host: str, specs: Sequence[tuple], world_dims: Sequence[str],
                   world_shaped: Sequence[str] = ()) -> dict[str, int]:
    """Check the host arguments and bind the dynamic dimensions (called first by the host driver).

    `specs`: per tensor parameter (name, value, shape, dtype name) — `shape` a list of ints (static),
    dimension names (dynamic) and None (an expression, left to the chip builds). The dimensions in
    `world_dims` (the dynamic
    leading dimension of world-shaped tensors, SPEC §8) are the world size `rt.world_size()`.
    The parameters in `world_shaped` are indexed by rank (`x[r]`): their leading dimension must be
    the world size too. Returns the size of every dynamic dimension by name.

    Raises:
        ArgumentTypeError: a tensor parameter given something else than a torch.Tensor, or a tensor of
            another dtype.
        ArgumentValueError: wrong rank or static size, a dynamic dimension of two sizes, or a
            world-shaped tensor whose leading dimension is not the world size.
    """
    import torch

    world = int(rt.world_size())
    dims: dict[str, int] = {n: world for n in world_dims}
    for name, value, shape, dtype in specs:
        t = getattr(value, "tensor", value)
        if not isinstance(t, torch.Tensor):
            raise ArgumentTypeError(f"parameter '{name}' of '{host}' expects a torch.Tensor, got "
                                    f"{type(value).__name__}")
        try:
            got = dtype_from_torch(t.dtype).name
        except TypeError:
            got = str(t.dtype)
        if got != dtype:
            raise ArgumentTypeError(f"parameter '{name}' of '{host}' expects dtype {dtype}, got {got}")
        if t.dim() != len(shape):
            raise ArgumentValueError(f"parameter '{name}' of '{host}' expects a {len(shape)}-D tensor "
                                     f"{_shape_text(shape)}, got shape {list(t.shape)}")
        for axis, (d, n) in enumerate(zip(shape, t.shape)):
            if isinstance(d, int) and d != n:
                raise ArgumentValueError(f"parameter '{name}' of '{host}' expects shape {_shape_text(shape)}, "
                                         f"got {list(t.shape)}")
            if isinstance(d, str) and dims.setdefault(d, int(n)) != n:
                why = (f"the world size ({world} ranks)" if d in world_dims
                       else f"{dims[d]}, its size in an earlier parameter")
                raise ArgumentValueError(f"parameter '{name}' of '{host}': dimension {axis} ('{d}') is {n}, "
                                         f"but '{d}' is {why}" + (_world_hint(n) if d in world_dims else ""))
        if name in world_shaped and t.shape[0] != world:
            raise ArgumentValueError(f"parameter '{name}' of '{host}' is indexed by rank ({name}[r]), so its leading "
                                     f"dimension must be the world size ({world} ranks), got shape {list(t.shape)}"
                                     + _world_hint(t.shape[0]))
    return dims


def _world_hint(n: int) -> str:
    """How to ask for `n` ranks: the world size comes from the run's DistributedConfig (SPEC §8)."""
    ids = ", ".join(str(i) for i in range(min(int(n), 4))) + (", ..." if n > 4 else "")
    return (f"; the world size is the number of devices of the run: for {n} ranks pass "
            f"config=RunConfig(distributed_config=DistributedConfig(device_ids=[{ids}]))")


def _shape_text(shape: Sequence[Any]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def signal_window(rt: Any, collective: str, attrs: dict[str, Any]) -> Any:
    """The signal window of host-level collective calls that left out their signal: zeroed INT32
    cells of the shape `pypto.runtime.dist.builtin.signal_shape` gives for this world size. The
    driver allocates one per builtin program and host call, before anything else; collective
    signals clear themselves, so it serves every such call of that host call."""
    import math

    from .builtin import signal_shape  # the collectives' chip programs

    shape = [int(d) for d in signal_shape(collective, attrs, int(rt.world_size()))]
    return rt.window(rt.alloc_window_buffer(4 * math.prod(shape)), shape, "INT32")


def dispatch_all(rt: Any, program: str, args: list[Any], result: Any) -> Any:
    """A host-level collective: builtin chip program `program` dispatched to every rank with `args`;
    returns `result` (the tensor the collective writes)."""
    for r in range(int(rt.world_size())):
        rt.dispatch(program, r, args)
    return result


# ---- the compiled program ---------------------------------------------------------------------
class DistributedCompiledProgram:
    """A compiled distributed program (SPEC §8; docs/distributed.md "Host orchestrator").

    Attributes:
        build: the `DistributedBuild` the runtime runs.
        program: the source `ir.Program` (None when reloaded with `from_dir`).
        output_dir: the build folder (`str(self)`).
        name, host_params, chip_programs, sub_workers: those of `build`.
    """

    def __init__(self, build: DistributedBuild, program: Program | None = None) -> None:
        self.build = build
        self.program = program
        self.output_dir = os.fspath(build.output_dir) if build.output_dir is not None else ""
        self._host_fn: Function | None = None

    # ---- the build's parts ---------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.build.name

    @property
    def host_params(self) -> list[HostParam]:
        return self.build.host_params

    @property
    def chip_programs(self) -> dict[str, Any]:
        return self.build.chip_programs

    @property
    def sub_workers(self) -> list[str]:
        return self.build.sub_workers

    @property
    def platform(self) -> str:
        return self.build.platform

    def __str__(self) -> str:
        return self.output_dir

    def __fspath__(self) -> str:
        return self.output_dir

    def __repr__(self) -> str:
        return (f"DistributedCompiledProgram({self.name!r}, chip_programs={list(self.chip_programs)}, "
                f"output_dir={self.output_dir!r})")

    # ---- running -------------------------------------------------------------------------
    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        names = [p.name for p in self.host_params]
        if len(args) > len(names) or (not kwargs and len(args) != len(names)):
            raise ArgumentTypeError(f"'{self.name}' takes {len(names)} arguments ({', '.join(names)}), "
                                    f"got {len(args)}")
        values = dict(zip(names, args))
        for k, v in kwargs.items():
            if k not in names:
                raise ArgumentTypeError(f"'{self.name}' got an unexpected keyword argument {k!r}; its "
                                        f"parameters are {', '.join(names)}")
            if k in values:
                raise ArgumentTypeError(f"'{self.name}' got multiple values for argument {k!r}")
            values[k] = v
        missing = [n for n in names if n not in values]
        if missing:
            raise ArgumentTypeError(f"'{self.name}' is missing argument {missing[0]!r}")
        return tuple(values[n] for n in names)

    @user_facing
    def __call__(self, /, *args: Any, config: Any = None, callbacks: dict[str, Any] | None = None,
                 **kwargs: Any) -> Any:
        """Run the program once on the ranks of `config.distributed_config` (SPEC §8 one-shot
        call): the host driver dispatches to one simulated chip per rank; Out/InOut host tensors
        are written in place; returns what the HOST orchestrator returns. `callbacks` binds the
        HOST SubWorkers by name.

        Raises ArgumentTypeError / ArgumentValueError for wrong arguments (before anything runs) and
        whatever the distributed runtime raises for a failed run.
        """
        from ..config import check_run_config

        config = check_run_config(config)
        args = self._bind(args, kwargs)
        self._check_callbacks(callbacks)
        from . import run

        return run(self.build, args, config, callbacks=callbacks)

    @user_facing
    def prepare(self, config: Any = None, persistent: bool = False, callbacks: dict[str, Any] | None = None) -> Any:
        """A reusable `DistributedWorker` for this build (SPEC §8): `with compiled.prepare(...) as rt:
        rt(*args)`, `rt.submit(*args)`, `rt.alloc_tensor`, `rt.free_tensor`, `rt.close()`.
        `persistent=True` keeps windows across calls; `callbacks` binds HOST SubWorkers by name."""
        from ..config import check_run_config
        from . import DistributedWorker

        self._check_callbacks(callbacks)
        return DistributedWorker(self.build, check_run_config(config), persistent, callbacks)

    def _check_callbacks(self, callbacks: dict[str, Any] | None) -> None:
        unknown = sorted(set(callbacks or ()) - set(self.sub_workers))
        if unknown:
            raise ArgumentValueError(f"callbacks {unknown} name no HOST SubWorker of '{self.name}' "
                                     f"(its SubWorkers: {', '.join(self.sub_workers) or 'none'})")

    # ---- reloading -----------------------------------------------------------------------
    @classmethod
    def from_dir(cls, path: str | os.PathLike, platform: str | None = None) -> DistributedCompiledProgram:
        """Reload the distributed build in folder `path` (module doc) without recompiling.

        Raises:
            FileNotFoundError: no such folder, or no `distributed_meta.json` (a failed or unfinished
                build; `report/error.log` says why), or a missing part.
            ValueError: a `distributed_meta.json` of another format.
        """
        from ...ir.serialize import deserialize
        from ..compiled import CompiledProgram

        root = Path(path)
        if not root.is_dir():
            raise FileNotFoundError(f"build folder {os.fspath(root)!r} does not exist")
        meta_path = root / DIST_META_FILE
        if not meta_path.is_file():
            err = root / "report" / "error.log"
            why = f"; the compile failed, see {os.fspath(err)}" if err.is_file() else \
                "; the compile failed or did not finish"
            raise FileNotFoundError(f"{os.fspath(root)!r} is not a complete PyPTO distributed build: it has "
                                    f"no {DIST_META_FILE}{why}")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or meta.get("format") != DIST_META_FORMAT:
            got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
            raise ValueError(f"{os.fspath(meta_path)} has format {got!r}; this PyPTO reads {DIST_META_FORMAT!r}")
        for rel in (meta["host_driver"], meta["host_ir"]):
            if not (root / rel).is_file():
                raise FileNotFoundError(f"{os.fspath(root)!r} is not a complete PyPTO distributed build: "
                                        f"{rel} is missing")
        host_prog = deserialize((root / meta["host_ir"]).read_bytes())
        host = host_prog.get_function(meta["host"])
        chips = {n: CompiledProgram.from_dir(root / "next_levels" / n, platform) for n in meta["chip_programs"]}
        build = DistributedBuild(meta["host"], load_host_driver(root / meta["host_driver"], meta["host"]),
                                 _host_params(host), chips, [s["name"] for s in meta["sub_workers"]], root,
                                 platform or meta["platform"], meta)
        return cls(build)
