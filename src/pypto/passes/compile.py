"""`ir.compile`: run the pass pipeline and write the build folder (SPEC §5).

Output folder (default `$PYPTO_PROG_BUILD_DIR` or `build_output`, then `<program>_<timestamp>`):
```
passes_dump/00_frontend.py, 01_after_<Pass>.py, ...   (when dump_passes)
report/memory_usage.json                               (bytes per memory space per kernel)
report/error.log                                       (only when compilation failed)
compiled_meta.json                                     (written last: marks a complete build)
```
A failed compile writes the error into `report/error.log` and no `compiled_meta.json`, so nothing
that looks like a complete build is left behind.
"""

from __future__ import annotations

import datetime
import json
import os
import traceback
from pathlib import Path
from typing import Any

from ..backend import BackendType
from ..core.errors import user_facing
from ..ir.function import Program
from ..ir.printer import python_print
from .base import PassContext
from .manager import PassManager, VerificationLevel
from .pipeline import OptimizationStrategy, passes_for

__all__ = ["compile", "OptimizationStrategy", "VerificationLevel", "default_output_dir"]


def default_output_dir(program_name: str) -> Path:
    base = os.environ.get("PYPTO_PROG_BUILD_DIR") or "build_output"
    stamp = datetime.datetime.now().strftime("%Y%m%d_%H%M%S")
    path = Path(base) / f"{program_name}_{stamp}"
    k = 1
    while path.exists():
        path = Path(base) / f"{program_name}_{stamp}_{k}"
        k += 1
    return path


def _meta(program: Program, backend: BackendType, platform: str) -> dict[str, Any]:
    funcs = []
    for f in program.functions:
        funcs.append({
            "name": f.name,
            "type": f.func_type.name,
            "params": [{"name": p.name, "type": python_print(p.type), "direction": d.name}
                       for p, d in zip(f.params, f.param_directions)],
        })
    return {"program": program.name, "backend": backend.name, "platform": platform, "functions": funcs}


def _warn_unwritten_outputs(program: Program) -> None:
    import warnings

    from .analysis import unwritten_outputs

    for func, param in unwritten_outputs(program):
        msg = (f"Out parameter '{param.name}' of '{func.name}' is never written: the caller's tensor "
               f"keeps its old contents. Write it with {param.name}[...] = value, pl.assemble or "
               f"pl.store; '{param.name} = value' only rebinds the name")
        warnings.warn_explicit(msg, UserWarning, param.span.filename, param.span.begin_line)


@user_facing
def compile(program: Program, output_dir: str | os.PathLike | None = None,
            strategy: OptimizationStrategy = OptimizationStrategy.Default, dump_passes: bool = True,
            backend_type: BackendType = BackendType.Ascend910B, skip_ptoas: bool = False,
            verification_level: VerificationLevel | None = None, platform: str | None = None) -> Any:
    """Compile `program` for `backend_type`; returns a CompiledProgram whose `str()` is the folder.

    Raises:
        ValueError: unknown `strategy` or `$PYPTO_VERIFY_LEVEL`.
        CompileError (MemoryCapacityError, VerificationError, ...): the program cannot be compiled;
            the message is also written to `report/error.log`.
    """
    from ..runtime.compiled import CompiledProgram

    if not isinstance(program, Program):
        hint = ""
        if hasattr(program, "specialize"):
            hint = (f"; a @pl.jit kernel compiles with {program.__name__}.compile(*sample_args), "
                    f"or get its Program with {program.__name__}.specialize(*sample_args)")
        raise TypeError(f"ir.compile expects an ir.Program, got {type(program).__name__}{hint}")
    passes = passes_for(strategy)
    level = verification_level if verification_level is not None else VerificationLevel.from_env()
    out = Path(output_dir) if output_dir is not None else default_output_dir(program.name)
    out.mkdir(parents=True, exist_ok=True)
    report = out / "report"
    meta_path = out / "compiled_meta.json"
    if meta_path.exists():
        meta_path.unlink()  # an earlier build in this folder is no longer the current one
    platform = platform or ("a2a3sim" if backend_type is BackendType.Ascend910B else "a5sim")
    ctx = PassContext(backend_type)
    pm = PassManager(passes, level, out / "passes_dump" if dump_passes else None)
    try:
        lowered = pm.run(program, ctx)
    except Exception as e:
        report.mkdir(parents=True, exist_ok=True)
        (report / "error.log").write_text(f"{type(e).__name__}: {e}\n\n{traceback.format_exc()}",
                                          encoding="utf-8")
        raise
    report.mkdir(parents=True, exist_ok=True)
    _warn_unwritten_outputs(lowered)
    (report / "memory_usage.json").write_text(json.dumps(ctx.records.get("memory", {}), indent=2),
                                              encoding="utf-8")
    (report / "pass_timings.json").write_text(json.dumps(dict(pm.timings), indent=2), encoding="utf-8")
    meta_path.write_text(json.dumps(_meta(lowered, backend_type, platform), indent=2), encoding="utf-8")
    return CompiledProgram(lowered, str(out), backend_type, platform=platform)

