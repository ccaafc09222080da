"""`validate_ir`: find the first compiler pass whose numbers diverge (User Manual "Torch Codegen
Debug Guide", the accuracy workflow).

For each IR snapshot in `<output_dir>/passes_dump/` (`00_frontend.py`, `NN_after_<Pass>.py`; compile
with `dump_passes=True`), the program is re-parsed, turned into a PyTorch script by `torch_codegen`
and run on copies of the inputs; its outputs (the entry's Out/InOut tensors) are compared with the
expected ones. A last stage, `simulator`, runs the compiled program itself on the simulator, where
tiles live at their planned addresses: a divergence only there points at memory planning or the
runtime rather than at a pass's meaning.

Programs with mixed kernels validate like any other: in the script a Group call runs its AIC and AIV
kernels together on FIFO pipe rings (the AIV kernel as vector subblocks 0 and 1 under `pl.split`),
as the simulator does (`torch_cluster`); a deadlock or a tile never popped makes the stage an error.

The report lists every stage with its status — "ok", "mismatch" (numbers differ beyond tolerance),
"error" (the stage's script or run raised, e.g. a pipe deadlock) or "skipped" (no script can be
written: `torch_codegen` raised NotImplementedError, e.g. for a dtype without a torch equivalent) —
and names the first stage that is a mismatch or an error. When that stage is `00_frontend` (the
program as parsed, before any pass) no pass diverged: the source program already disagrees with
`expected`, and the report says so (`source_disagrees`).

The inputs are checked against the entry's parameters before any stage runs (count, tensor or
scalar, dtype, shape, CPU device), and each expected tensor against its output's shape, so a call
mistake is one clear error instead of the same failure in every stage.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..core import packed
from ..core.dtype import FP4
from ..core.errors import ArgumentTypeError, ArgumentValueError, user_facing
from ..ir.entry import select_entry
from ..runtime.binding import check_host_args
from .torch_codegen import torch_codegen

__all__ = ["validate_ir", "ValidationReport", "StageResult", "DEFAULT_TOLERANCES"]

#  dtype            (rtol, atol)  — loose enough for reassociated sums, tight enough for real bugs
DEFAULT_TOLERANCES: dict[torch.dtype, tuple[float, float]] = {
    torch.float32: (1e-4, 1e-4),
    torch.float64: (1e-7, 1e-7),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (5e-2, 5e-2),
}


@dataclass
class StageResult:
    """One stage: `stage` (dump file stem or "simulator"), `pass_name`, `status`, the largest
    absolute error per output (None where not computed), and the error text of a failed stage."""

    stage: str
    pass_name: str
    status: str
    max_abs_errors: list[float | None] = field(default_factory=list)
    message: str = ""


FRONTEND = "frontend"   # pass name of the 00_frontend stage: the program before any pass


@dataclass
class ValidationReport:
    """Results per stage in pipeline order; `first_divergent` is the first stage's pass name whose
    status is "mismatch" or "error" (None when every stage matches; "frontend" when the source
    program itself, before any pass, already disagrees — see `source_disagrees`)."""

    stages: list[StageResult]

    @property
    def first_divergent(self) -> str | None:
        """Pass name of the first stage that is a mismatch or an error (None if there is none)."""
        for s in self.stages:
            if s.status in ("mismatch", "error"):
                return s.pass_name
        return None

    @property
    def ok(self) -> bool:
        """True when every stage matches (skipped stages aside)."""
        return self.first_divergent is None

    @property
    def source_disagrees(self) -> bool:
        """True when the first divergent stage is the frontend one: the program as written (before
        any compiler pass) already gives other numbers than `expected` (or its reference failed)."""
        return self.first_divergent == FRONTEND

    @property
    def verdict(self) -> str:
        """One line: which pass diverged first, that the source already disagrees, or that every
        stage matches."""
        first = self.first_divergent
        if first is None:
            return "every stage matches the expected outputs"
        if first != FRONTEND:
            return f"first divergent pass: {first}"
        stage = next(s for s in self.stages if s.pass_name == FRONTEND)
        if stage.status == "mismatch":
            return ("the source program (00_frontend, before any compiler pass) already disagrees with "
                    "the expected values: check `expected` and the kernel source; no pass diverged")
        return ("the source program (00_frontend, before any compiler pass) could not be run as a "
                f"PyTorch reference ({(stage.message.splitlines() or [''])[0]}); no pass diverged")

    def __str__(self) -> str:
        rows = [f"{'stage':<40} {'status':<9} max |error|"]
        for s in self.stages:
            errs = ", ".join("-" if e is None else f"{e:.3g}" for e in s.max_abs_errors)
            rows.append(f"{s.stage:<40} {s.status:<9} {errs}" + (f"  ({s.message})" if s.message else ""))
        rows.append(self.verdict)
        return "\n".join(rows)


def _pass_name(stem: str) -> str:
    m = re.match(r"\d+_after_(.+)$", stem)
    if m:
        return m.group(1)
    return re.sub(r"^\d+_", "", stem)


def _clone(args: Sequence[Any]) -> list[Any]:
    out = []
    for a in args:
        t = getattr(a, "tensor", a)
        out.append(t.clone() if isinstance(t, torch.Tensor) else a)
    return out


def _check_inputs(compiled: Any, inputs: Sequence[Any]) -> list[Any]:
    entry = compiled.entry_function
    if isinstance(inputs, (torch.Tensor, Mapping)) or not isinstance(inputs, Sequence):
        raise ArgumentTypeError(f"validate_ir: inputs must be a list of the arguments of "
                                f"'{entry.name}' ({', '.join(p.name for p in entry.params)}), got "
                                f"{type(inputs).__name__}")
    inputs = list(inputs)
    if len(inputs) != len(entry.params):
        raise ArgumentTypeError(f"validate_ir: '{entry.name}' takes {len(entry.params)} arguments "
                                f"({', '.join(p.name for p in entry.params)}), got {len(inputs)} "
                                f"input(s); pass every argument in order, Out/InOut tensors included")
    check_host_args(entry, inputs)
    return inputs


def _expected(compiled: Any, expected: Any, inputs: list[Any]) -> list[torch.Tensor]:
    idx = compiled.output_indices
    if isinstance(expected, torch.Tensor):
        expected = [expected]
    if isinstance(expected, Mapping):
        params = compiled.entry_function.params
        missing = [params[i].name for i in idx if params[i].name not in expected]
        if missing:
            raise ArgumentValueError(f"expected values lack output(s) {', '.join(map(repr, missing))}")
        expected = [expected[params[i].name] for i in idx]
    expected = list(expected)
    if len(expected) != len(idx):
        raise ArgumentValueError(f"'{compiled.entry}' has {len(idx)} Out/InOut parameter(s), got "
                                 f"{len(expected)} expected tensor(s)")
    params = compiled.entry_function.params
    for i, w in zip(idx, expected):
        name = params[i].name
        if not isinstance(w, torch.Tensor):
            raise ArgumentTypeError(f"validate_ir: the expected value of output '{name}' must be a "
                                    f"torch.Tensor, got {type(w).__name__}")
        have = tuple(getattr(inputs[i], "shape", ()))
        if tuple(w.shape) != have:
            raise ArgumentValueError(f"validate_ir: the expected value of output '{name}' has shape "
                                     f"{list(w.shape)}, but argument '{name}' has shape {list(have)}")
    return expected


def _values(t: torch.Tensor) -> torch.Tensor:
    """`t`'s values as float64 (a packed host tensor, FP4, unpacked first)."""
    if t.dtype == FP4.to_torch():
        return packed.decode(t, FP4).double()
    return t.double()


def _compare(got: list[Any], want: list[torch.Tensor], rtol: float | None,
             atol: float | None) -> tuple[bool, list[float | None], str]:
    ok, errs, notes = True, [], []
    for k, (g, w) in enumerate(zip(got, want)):
        if not isinstance(g, torch.Tensor) or tuple(g.shape) != tuple(w.shape):
            ok = False
            errs.append(None)
            notes.append(f"output {k}: shape {tuple(getattr(g, 'shape', ()))} != {tuple(w.shape)}")
            continue
        r, a = DEFAULT_TOLERANCES.get(w.dtype, (0.0, 0.0))
        r, a = rtol if rtol is not None else r, atol if atol is not None else a
        gd, wd = _values(g), _values(w)
        diff = (gd - wd).abs()
        finite = torch.isfinite(gd) == torch.isfinite(wd)
        errs.append(float(diff[torch.isfinite(diff)].max()) if diff.numel() and torch.isfinite(diff).any() else 0.0)
        good = bool(finite.all()) and bool(torch.isclose(gd, wd, rtol=r, atol=a, equal_nan=True).all())
        if not good:
            ok = False
            notes.append(f"output {k} differs")
    return ok, errs, "; ".join(notes)


def _run_stage(program: Any, entry_name: str, inputs: Sequence[Any]) -> list[Any]:
    script = torch_codegen(program, entry=entry_name if program.get_function(entry_name) else None)
    ns: dict[str, Any] = {"__name__": "pypto_torch_reference"}
    exec(compile(script, f"<torch reference of {program.name}>", "exec"), ns)  # noqa: S102
    args = _clone(inputs)
    ns["run"](*args)
    entry = select_entry(program, entry_name if program.get_function(entry_name) else None)
    return [args[i] for i, d in enumerate(entry.param_directions) if d.name in ("Out", "InOut")]


@user_facing
def validate_ir(compiled: Any, inputs: Sequence[Any], expected: Any, rtol: float | None = None,
                atol: float | None = None) -> ValidationReport:
    """Compare every pass dump of `compiled` (and the simulator run) against `expected`.

    Args:
        compiled: a CompiledProgram built with `dump_passes=True`.
        inputs: the entry's arguments, as for a call (they are copied, never modified).
        expected: the expected Out/InOut tensors, in parameter order (one tensor, a sequence, or a
            dict by parameter name).
        rtol / atol: tolerances; None uses `DEFAULT_TOLERANCES` for each output's dtype.

    Raises:
        ArgumentTypeError (a TypeError): `inputs` is not a list of the entry's arguments, has the
            wrong length, or an argument of the wrong kind or dtype (before any stage runs).
        ArgumentValueError (a ValueError): an argument of the wrong shape or not on the CPU, or
            `expected` that does not match the entry's outputs (count, shape).
        FileNotFoundError: the build has no pass dumps.
    """
    from ..language import loads

    inputs = _check_inputs(compiled, inputs)
    want = _expected(compiled, expected, inputs)
    dump = Path(compiled.output_dir) / "passes_dump"
    files = sorted(dump.glob("*.py")) if dump.is_dir() else []
    if not files:
        raise FileNotFoundError(f"no pass dumps under {str(dump)!r}: compile with dump_passes=True "
                                f"(ir.compile(..., dump_passes=True) or RunConfig(dump_passes=True))")
    stages: list[StageResult] = []
    for f in files:
        name = _pass_name(f.stem)
        try:
            program = loads(str(f))
            got = _run_stage(program, compiled.entry, inputs)
        except NotImplementedError as e:
            stages.append(StageResult(f.stem, name, "skipped", [], str(e)))
            continue
        except Exception as e:  # noqa: BLE001  (a failing stage is a result, not a crash)
            stages.append(StageResult(f.stem, name, "error", [], f"{type(e).__name__}: {e}"))
            continue
        ok, errs, note = _compare(got, want, rtol, atol)
        stages.append(StageResult(f.stem, name, "ok" if ok else "mismatch", errs, note))
    args = _clone(inputs)
    try:
        compiled(*args)
        got = [args[i] for i in compiled.output_indices]
        ok, errs, note = _compare(got, want, rtol, atol)
        stages.append(StageResult("simulator", "simulator", "ok" if ok else "mismatch", errs, note))
    except Exception as e:  # noqa: BLE001
        stages.append(StageResult("simulator", "simulator", "error", [], f"{type(e).__name__}: {e}"))
    return ValidationReport(stages)
