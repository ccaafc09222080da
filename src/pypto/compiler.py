"""`ir.compile`: run the pass pipeline, generate code and write the build folder (SPEC §5).

Output folder (default `$PYPTO_PROG_BUILD_DIR` or `build_output`, then `<program>_<timestamp>`):
```
passes_dump/00_frontend.py, 01_after_<Pass>.py, ...   (when dump_passes)
kernels/aiv/<kernel>.pto, kernels/aic/<kernel>.pto    (PTO MLIR per kernel; <kernel>.cpp when ptoas ran)
orchestration/<orch>.cpp                              (host code per Orchestration function)
kernel_config.py                                      (runtime, orchestration and kernel table)
program.msgpack                                       (the lowered program, for CompiledProgram.from_dir)
report/memory_usage.json                              (peak bytes per memory space per kernel)
report/task_dependencies.json                         (RAW/WAR/WAW/explicit edges between task submissions)
report/diagnostics.log                                (compile-time warnings W001-W004)
report/perf_hints.log                                 (performance hints, PH001...)
report/perf_hints_run.log                             (run-time hints PH004-PH007 of the last run)
report/pass_timings.json, report/compile_time.json    (ms per pass; ms per stage and pass, below)
report/error.log                                      (only when compilation failed)
compiled_meta.json                                    (written last: marks a complete build)
```
Nothing that looks like a complete build is left by a failed compile: artifacts of an earlier complete
build in the folder are removed first (other files under those names are refused, never deleted), code is generated into a hidden staging folder and moved into
place only when every step succeeded, and `compiled_meta.json` is written last. The error of a
failed compile is in `report/error.log`.

`report/compile_time.json` (wall milliseconds): `passes_ms` (the pass pipeline, with its
verification), `verify_ms` (of which the verification after each pass), `codegen_ms` (PTO,
orchestration, kernel config and the serialized program, written into the staging folder),
`reports_ms` (perf hints, warnings, the report files and moving the build into place), `total_ms`
and `per_pass_ms` ([pass name, ms] in pipeline order, verification excluded).
"""

from __future__ import annotations

import datetime
import logging
import os
import shutil
import tempfile
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .backend import BackendType, get_soc
from .core.enums import member_named
from .core.errors import user_facing
from .core.json_text import dumps_indented
from .ir.function import Program
from .ir.printer import python_print
from .language.parser.entry import parse_text
from .passes.base import PassContext
from .passes.manager import PassManager, VerificationLevel
from .passes.pipeline import OptimizationStrategy, check_strategy, passes_for

if TYPE_CHECKING:
    from .core.diagnostics import Diagnostic

__all__ = ["compile", "lower", "OptimizationStrategy", "VerificationLevel", "default_output_dir"]

_log = logging.getLogger("pypto.diagnostics")

# What a build writes outside report/ and passes_dump/ (removed before a new build in the folder).
_ARTIFACTS = ("kernels", "orchestration", "kernel_config.py", "program.msgpack")
_REPORTS = ("error.log", "diagnostics.log", "perf_hints.log", "perf_hints_run.log", "memory_usage.json", "pass_timings.json", "compile_time.json",
            "task_dependencies.json")


def default_output_dir(program_name: str) -> Path:
    """`$PYPTO_PROG_BUILD_DIR` (else `build_output`) / `<program>_<YYYYmmdd_HHMMSS>`, created here.

    The folder is claimed with an exclusive mkdir (suffix `_1`, `_2`, ... when taken), so compiles
    running at the same time in several processes never share a folder.
    """
    base = Path(os.environ.get("PYPTO_PROG_BUILD_DIR") or "build_output")
    base.mkdir(parents=True, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    k = 0
    while True:
        path = base / (f"{program_name}_{stamp}" + (f"_{k}" if k else ""))
        try:
            path.mkdir()
            return path
        except FileExistsError:
            k += 1


def _abi(entry: Any) -> list[dict[str, Any]]:
    """The orchestration argument slots of `entry`: its parameters, then its dynamic dimensions."""
    from .codegen.orchestration import entry_dynamic_dims
    from .ir.expr import ConstInt
    from .ir.types import ScalarType, TensorType

    out = []
    for p, d in zip(entry.params, entry.param_directions):
        t = p.type
        if isinstance(t, TensorType):
            shape = [x.value if isinstance(x, ConstInt) else getattr(x, "name", "?") for x in t.shape]
            out.append({"name": p.name, "kind": "tensor", "direction": d.name, "dtype": t.dtype.name,
                        "shape": shape})
        elif isinstance(t, ScalarType):
            out.append({"name": p.name, "kind": "scalar", "direction": d.name, "dtype": t.dtype.name})
    out += [{"name": v.name, "kind": "dim", "direction": "In", "dtype": "INDEX"}
            for v in entry_dynamic_dims(entry)]
    return out


def _meta(program: Program, compiled: Any, strategy: OptimizationStrategy, kernels: list[Any],
          ptoas: str | None) -> dict[str, Any]:
    from dataclasses import asdict

    from .codegen import orchestration_table, runtime_settings
    from .runtime.compiled import META_FORMAT, PROGRAM_IR_FILE

    funcs = [{"name": f.name, "type": f.func_type.name,
              "params": [{"name": p.name, "type": python_print(p.type), "direction": d.name}
                         for p, d in zip(f.params, f.param_directions)],
              **({"attrs": f.attrs_json()} if f.attrs else {})} for f in program.functions]
    return {"format": META_FORMAT, "program": program.name, "backend": compiled.backend_type.name,
            "platform": compiled.platform, "strategy": strategy.name, "entry": compiled.entry,
            "program_ir": PROGRAM_IR_FILE, "orchestration_args": _abi(compiled.entry_function),
            "output_indices": compiled.output_indices,
            "runtime": runtime_settings(compiled.backend_type, compiled.platform),
            "ptoas": {"ran": ptoas is not None, "path": ptoas},
            "kernels": [k.as_dict() for k in kernels],
            "orchestrations": [asdict(o) for o in orchestration_table(program, compiled.entry)],
            "functions": funcs}


def _never_written(program: Program) -> list[Any]:
    """W004 per Out parameter that no path writes."""
    from .core.diagnostics import Diagnostic
    from .passes.analysis import unwritten_outputs

    return [Diagnostic("W004", func.name,  # type: ignore[attr-defined]
                       f"Out parameter '{param.name}' of '{func.name}' is never written: the caller's "  # type: ignore[attr-defined]
                       f"tensor keeps its old contents. Write it with {param.name}[...] = value, "
                       f"pl.assemble or pl.store; '{param.name} = value' only rebinds the name", param.span)
            for func, param in unwritten_outputs(program)]


def _check_level(level: Any) -> VerificationLevel:
    """`level` as a VerificationLevel (a member, or its name in any case); None reads the environment.
    Raises ValueError naming the value and the allowed ones."""
    if level is None:
        return VerificationLevel.from_env()
    found = member_named(VerificationLevel, level, any_case=True)
    if found is not None:
        return found   # type: ignore[return-value]
    raise ValueError(f"unknown verification_level {level!r}; allowed: "
                     f"{', '.join('ir.VerificationLevel.' + m for m in VerificationLevel.__members__)} "
                     f"(or their names as strings)")


WARNING_CODES = ("W001", "W002", "W003", "W004")


def _hint_places(hints: list[Diagnostic], shown: int = 3) -> str:
    """The codes and user lines of the first `shown` hints, for the one summary line on stderr:
    `PH009 at k.py:14, PH001 at k.py:20, 2 more`."""
    def place(h: Diagnostic) -> str:
        s = h.span
        return f"{h.code} at {os.path.basename(s.filename)}:{s.begin_line}" if s.is_known() else h.code
    more = len(hints) - shown
    return ", ".join([place(h) for h in hints[:shown]] + ([f"{more} more"] if more > 0 else []))


def _compile_warnings(ssa: list[Program], lowered: Program, diag: Any) -> list[Any]:
    """The enabled compile-time warnings: W001-W003 on the SSA program, W004 on the lowered one."""
    from .passes.value_warnings import value_warnings

    if not diag.runs("compile"):
        return []
    found = value_warnings(ssa[0]) if ssa else []
    return diag.keep(found + _never_written(lowered))


def _clear_previous_build(out: Path) -> None:
    """Remove what an earlier build left in `out` (compiled_meta.json first, so it never looks
    complete). Artifacts are removed only when `out` holds a complete PyPTO build (its
    compiled_meta.json); anything else under those names is refused, never deleted.

    Raises:
        FileExistsError: `out` has a `kernels`, `orchestration`, `kernel_config.py` or
            `program.msgpack` that is not from a complete PyPTO build.
    """
    present = set(os.listdir(out))  # one directory read: a fresh folder needs nothing more
    meta = out / "compiled_meta.json"
    ours = "compiled_meta.json" in present and meta.is_file()
    if "compiled_meta.json" in present:
        meta.unlink(missing_ok=True)
    for name in _ARTIFACTS:
        p = out / name
        if name not in present or not p.exists():
            continue
        if not ours:
            raise FileExistsError(f"output folder {os.fspath(out)!r} already has '{name}', which is not "
                                  f"from a complete PyPTO build; choose an empty output_dir or remove it")
        if p.is_dir():
            shutil.rmtree(p)
        else:
            p.unlink()
    if "report" in present:
        for name in _REPORTS:
            (out / "report" / name).unlink(missing_ok=True)
    dumps = out / "passes_dump"
    if "passes_dump" in present and dumps.is_dir():
        for f in dumps.glob("[0-9][0-9]_*.py"):
            f.unlink()


def _build(lowered: Program, stage: Path, compiled: Any, skip_ptoas: bool) -> tuple[list[Any], str | None]:
    """Generate every artifact into `stage`; returns the kernel table and the ptoas used (or None)."""
    from dataclasses import replace

    from .codegen import generate, kernel_table, render_kernel_config
    from .ir.serialize import serialize
    from .runtime.compiled import PROGRAM_IR_FILE
    from .runtime.sim.cost_model import op_cost
    from .runtime.toolchain import find_ptoas, note_ptoas_missing, run_ptoas

    soc = get_soc(compiled.backend_type)
    pipe_of = lambda spec, call: op_cost(spec, call, soc).pipe   # noqa: E731  (the simulator's pipes)
    for rel, text in generate(lowered, compiled.entry, compiled.backend_type, pipe_of).items():
        path = stage / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    kernels = kernel_table(lowered)
    ptoas = None if skip_ptoas else find_ptoas()
    if ptoas is None and not skip_ptoas:
        note_ptoas_missing()
    if compiled.platform.endswith("sim"):  # hand-written kernels run as host code: build them now
        from .runtime.extern import build_library

        for k in kernels:
            if k.external:
                build_library(lowered.get_function(k.name))
    if ptoas is not None:
        for i, k in enumerate(kernels):
            if k.external or k.pto is None:  # hand-written C++: nothing to assemble (SPEC §10)
                continue
            cpp = k.pto[: -len(".pto")] + ".cpp"
            run_ptoas(ptoas, stage / k.pto, stage / cpp)
            kernels[i] = replace(k, source=cpp)
    (stage / "kernel_config.py").write_text(
        render_kernel_config(lowered, kernels, compiled.backend_type, compiled.platform, compiled.entry),
        encoding="utf-8")
    (stage / PROGRAM_IR_FILE).write_bytes(serialize(lowered))
    return kernels, ptoas


def _write_json(path: Path, data: Any, atomic: bool = False) -> None:
    """`data` as indented JSON (the text of `json.dumps(data, indent=2)`). `atomic`: written to a
    temporary name and renamed, so that the file is either absent or complete."""
    text = dumps_indented(data)
    if not atomic:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


@user_facing
def lower(program: Program, strategy: OptimizationStrategy = OptimizationStrategy.Default,
          backend_type: BackendType = BackendType.Ascend910B,
          verification_level: VerificationLevel | None = None) -> Program:
    """The pass pipeline of `strategy` run on `program` for `backend_type`, with no build folder,
    codegen or files: the lowered `ir.Program` (what `ir.compile` generates code from). Used by
    `JITFunction.lower` (SPEC §13).

    Raises:
        ValueError: unknown `strategy`, `backend_type` or `$PYPTO_VERIFY_LEVEL`.
        CompileError: a pass rejects the program.
    """
    level = verification_level if verification_level is not None else VerificationLevel.from_env()
    return PassManager(passes_for(strategy), level, None, reparse=parse_text).run(
        program, PassContext(BackendType.of(backend_type)))


@user_facing
def compile(program: Program, output_dir: str | os.PathLike | None = None,
            strategy: OptimizationStrategy = OptimizationStrategy.Default, dump_passes: bool = True,
            backend_type: BackendType = BackendType.Ascend910B, skip_ptoas: bool = False,
            verification_level: VerificationLevel | None = None, platform: str | None = None,
            diagnostic_phase: str | None = None, disabled_diagnostics: Any = None,
            distributed_config: Any = None, *, quiet_hints: bool = False) -> Any:
    """Compile `program` for `backend_type`; returns a CompiledProgram whose `str()` is the folder
    (a `DistributedCompiledProgram` for a program with a HOST orchestrator: SPEC §8,
    `pypto.runtime.dist.program`).

    Args:
        output_dir: build folder; None uses `default_output_dir(program.name)`.
        strategy: `OptimizationStrategy.Default` or `DebugTileOptimization` (or their names as strings).
        dump_passes: write `passes_dump/00_frontend.py` and `NN_after_<Pass>.py`.
        skip_ptoas: do not run ptoas even when it is found (kernels stay `.pto`).
        verification_level: NONE, BASIC or ROUNDTRIP (or their names as strings); None reads
            `$PYPTO_VERIFY_LEVEL` (else BASIC).
        platform: run platform of the result (default `a2a3sim` / `a5sim` for the backend).
        diagnostic_phase: which diagnostics run (`pypto.core.diagnostics`): "none", "compile"
            (warnings W001-W004 as `DiagnosticWarning`s and in `report/diagnostics.log`; hints
            PH001-PH003, PH008 in `report/perf_hints.log`), "run" (hints PH004-PH007 after each simulator
            run, in `report/perf_hints_run.log`) or "all" (None: the default, "all").
        disabled_diagnostics: codes or names (e.g. {"W001", "TaskTooSmall"}) to leave out.
        distributed_config: for a distributed program, the `DistributedConfig` recorded in
            `distributed_meta.json` (the ranks it was built for; a run may use others).
        quiet_hints: leave out the one-line performance-hint summary on stderr (the hints are still
            in `report/perf_hints.log`). Used for the builtin chip programs of host-level collectives
            (`pypto.runtime.dist.program`): they are the library's code, a user cannot act on them.

    Raises:
        ValueError: unknown `strategy`, `backend_type`, `verification_level`, `$PYPTO_VERIFY_LEVEL`,
            `diagnostic_phase` or `disabled_diagnostics` entry (the message lists the allowed
            values), or a platform for another chip.
        CompileError: a tensor-level program (a `pl.at` region, a tensor op in a kernel) with
            `strategy=DebugTileOptimization`, which skips the tensor-level passes (checked first).
        FileExistsError: `output_dir` holds files named like build artifacts that are not from a
            complete PyPTO build (they are never deleted).
        CompileError (MemoryCapacityError, VerificationError, CodegenError, ...): the program cannot
            be compiled; the message is also written to `report/error.log`.
    """
    from .core.diagnostics import emit_warnings, render_diagnostics
    from .runtime.compiled import CompiledProgram

    if not isinstance(program, Program):
        hint = ""
        if hasattr(program, "specialize"):
            hint = (f"; a @pl.jit kernel compiles with {program.__name__}.compile(*sample_args), "
                    f"or get its Program with {program.__name__}.specialize(*sample_args)")
        raise TypeError(f"ir.compile expects an ir.Program, got {type(program).__name__}{hint}")
    from .core.diagnostics import diagnostic_options
    from .runtime.dist.program import compile_distributed, is_distributed

    backend_type = BackendType.of(backend_type)
    strategy = OptimizationStrategy.of(strategy)
    if is_distributed(program):  # a HOST orchestrator: host driver + one chip build per chip program
        return compile_distributed(program, Path(output_dir) if output_dir is not None else
                                   default_output_dir(program.name), chip_compile=compile, strategy=strategy,
                                   dump_passes=dump_passes, backend_type=backend_type, skip_ptoas=skip_ptoas,
                                   verification_level=verification_level, platform=platform,
                                   diagnostic_phase=diagnostic_phase, disabled_diagnostics=disabled_diagnostics,
                                   distributed_config=distributed_config)
    passes = passes_for(strategy)
    check_strategy(program, strategy)
    level = _check_level(verification_level)
    diag = diagnostic_options(diagnostic_phase, disabled_diagnostics)
    platform = platform or ("a2a3sim" if backend_type is BackendType.Ascend910B else "a5sim")
    out = Path(output_dir) if output_dir is not None else default_output_dir(program.name)
    out.mkdir(parents=True, exist_ok=True)
    _clear_previous_build(out)
    report = out / "report"
    ctx = PassContext(backend_type)
    ssa: list[Program] = []
    pm = PassManager(passes, level, out / "passes_dump" if dump_passes else None,
                     observers={"ConvertToSSA": ssa.append} if diag.runs("compile") else None,
                     reparse=parse_text)
    stage: Path | None = None
    stages: dict[str, float] = {}
    try:
        t0 = time.perf_counter()
        lowered = pm.run(program, ctx)
        t1 = time.perf_counter()
        compiled = CompiledProgram(lowered, str(out), backend_type, platform=platform)
        stage = Path(tempfile.mkdtemp(prefix=".build_", dir=out))
        kernels, ptoas = _build(lowered, stage, compiled, skip_ptoas)
        t2 = time.perf_counter()
        from .passes.convert_tensor_to_tile_ops import TRANSFERS
        from .tools.perf_hints import perf_hints, render_perf_hints, transfers_to_json

        generated = ctx.records.get(TRANSFERS, set())
        hint_list = diag.keep(ctx.records.get("perf_hints", []) + perf_hints(lowered, backend_type, generated)) \
            if diag.runs("compile") else []
        hints = render_perf_hints(hint_list, lowered, backend_type, diag)
        warned = _compile_warnings(ssa, lowered, diag)
        stages = {"passes_ms": (t1 - t0) * 1e3, "verify_ms": pm.verify_ms, "codegen_ms": (t2 - t1) * 1e3}
    except Exception as e:
        report.mkdir(parents=True, exist_ok=True)
        (report / "error.log").write_text(f"{type(e).__name__}: {e}\n\n{traceback.format_exc()}",
                                          encoding="utf-8")
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        raise
    report.mkdir(parents=True, exist_ok=True)
    emit_warnings(warned)
    (report / "diagnostics.log").write_text(
        render_diagnostics(f"Compile-time warnings for program '{lowered.name}'", warned, diag, "compile",
                           WARNING_CODES, "no warnings"), encoding="utf-8")
    (report / "perf_hints.log").write_text(hints, encoding="utf-8")
    if hint_list and not quiet_hints:   # one summary line on stderr (SPEC §12), the hints themselves are in the log
        _log.warning("%d performance hint(s) for program '%s' (%s): see %s", len(hint_list), lowered.name,
                     _hint_places(hint_list), os.fspath(report / "perf_hints.log"))
    _write_json(report / "memory_usage.json", ctx.records.get("memory", {}))
    _write_json(report / "task_dependencies.json", ctx.records.get("task_dependencies", {}))
    _write_json(report / "pass_timings.json", dict(pm.timings))
    for name in sorted(os.listdir(stage)):
        os.replace(stage / name, out / name)
    stage.rmdir()
    t3 = time.perf_counter()
    stages["reports_ms"] = (t3 - t2) * 1e3
    stages["total_ms"] = (t3 - t0) * 1e3
    _write_json(report / "compile_time.json", {**stages, "per_pass_ms": pm.timings})
    compiled.diagnostics = diag
    meta = _meta(lowered, compiled, strategy, kernels, ptoas)
    meta["diagnostics"] = diag.to_json()
    meta["tensor_transfers"] = transfers_to_json(generated)   # PH001's wording, for the command line
    _write_json(out / "compiled_meta.json", meta, atomic=True)
    return compiled
