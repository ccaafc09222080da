"""Diagnostics: the catalogue of warning and performance-hint codes, the located warning class and
the options that choose which diagnostics run (SPEC §12; User Manual "Diagnostics").

Every diagnostic has a code, a name, the phase that finds it and the user's source location:

| code  | name                   | kind    | phase   | what it finds |
|-------|------------------------|---------|---------|---------------|
| W001  | UnusedVariable         | warning | compile | a value assigned and never used |
| W002  | UnusedControlFlowResult| warning | compile | a result (return var) of an if / for / while never used |
| W003  | OutParamWriteDropped   | warning | compile | a write into an Out/InOut parameter left out of the value the function returns for it |
| W004  | OutParamNeverWritten   | warning | compile | an Out parameter that no path writes |
| PH001 | NarrowDdrRows          | hint    | compile | innermost tile dimension below the chip's recommended DDR transfer size |
| PH002 | UnalignedL0Tile        | hint    | compile | an L0 tile off the 16-row fractal |
| PH003 | UnwrittenOutParam      | hint    | compile | an Out parameter that no path writes |
| PH004 | TaskTooSmall           | hint    | run     | tasks whose work is shorter than their launch overhead |
| PH005 | ComputePipeIdle        | hint    | run     | the cube (AIC) or vector (AIV) pipe idle most of a kernel's time |
| PH006 | DdrTransferBelowGranule| hint    | run     | DDR transfers moving rows narrower than the DDR access granule |
| PH007 | ReducedPipeDepth       | hint    | run     | a cross-core pipe ring below the default depth that filled up and stalled |
| PH008 | PoorBlockShape         | hint    | compile | a tensor-level region the compiler could only tile into narrow or short blocks |
| PH009 | PipelineStagesReduced  | hint    | compile | a `pl.pipeline` loop given fewer buffer stages than requested: for capacity, or no buffers of its own to rotate |
| PH010 | OrchestrationBound     | hint    | run     | task submission on the orchestrator taking most of the run |

Phases (`diagnostic_phase=` of `ir.compile`, `RunConfig`, `JITFunction.compile`):
"none" (nothing is checked), "compile" (warnings and compile-time hints), "run" (run-time hints
after each simulator run), "all" (both; the default). `disabled_diagnostics=` names codes or names
to leave out (e.g. `{"W001", "TaskTooSmall"}`).

Warnings are issued through Python's `warnings` as `DiagnosticWarning` (a UserWarning) located at
the user's file and line, so `warnings.filterwarnings` and `pytest.warns` work on them.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .span import Span

__all__ = ["DiagnosticInfo", "CATALOGUE", "PHASES", "DEFAULT_PHASE", "Diagnostic", "DiagnosticWarning",
           "DiagnosticOptions", "diagnostic_options", "emit_warnings", "render_diagnostics"]


@dataclass(frozen=True)
class DiagnosticInfo:
    """One catalogue row: `code`, `name`, `kind` ("warning" / "hint"), `phase` ("compile" / "run")
    and a one-line `summary`."""

    code: str
    name: str
    kind: str
    phase: str
    summary: str


_ROWS = (
    #            code     name                       kind       phase      summary
    DiagnosticInfo("W001", "UnusedVariable", "warning", "compile", "a value assigned and never used"),
    DiagnosticInfo("W002", "UnusedControlFlowResult", "warning", "compile",
                   "a result of an if / for / while that is never used"),
    DiagnosticInfo("W003", "OutParamWriteDropped", "warning", "compile",
                   "a write into an Out/InOut parameter left out of the value the function returns"),
    DiagnosticInfo("W004", "OutParamNeverWritten", "warning", "compile", "an Out parameter no path writes"),
    DiagnosticInfo("PH001", "NarrowDdrRows", "hint", "compile",
                   "innermost tile dimension below the recommended DDR transfer size"),
    DiagnosticInfo("PH002", "UnalignedL0Tile", "hint", "compile", "L0 tile not aligned to the fractal size"),
    DiagnosticInfo("PH003", "UnwrittenOutParam", "hint", "compile", "Out parameter never written"),
    DiagnosticInfo("PH004", "TaskTooSmall", "hint", "run", "tasks shorter than their launch overhead"),
    DiagnosticInfo("PH005", "ComputePipeIdle", "hint", "run",
                   "the cube / vector pipe idle most of a kernel's time"),
    DiagnosticInfo("PH006", "DdrTransferBelowGranule", "hint", "run",
                   "DDR transfers of rows narrower than the DDR access granule"),
    DiagnosticInfo("PH007", "ReducedPipeDepth", "hint", "run",
                   "a cross-core pipe ring below the default depth filled up and stalled"),
    DiagnosticInfo("PH008", "PoorBlockShape", "hint", "compile",
                   "a tensor-level region tiled into blocks narrower than the DDR granule or short"),
    DiagnosticInfo("PH009", "PipelineStagesReduced", "hint", "compile",
                   "pl.pipeline stages reduced: to fit the on-chip memory, or no buffers to rotate"),
    DiagnosticInfo("PH010", "OrchestrationBound", "hint", "run",
                   "the orchestrator's task submissions take most of the run: use fewer, larger tasks"),
)
CATALOGUE: dict[str, DiagnosticInfo] = {r.code: r for r in _ROWS}
_BY_NAME: dict[str, str] = {r.name: r.code for r in _ROWS}

#  phase      phases of diagnostics it runs
_PHASES: dict[str, frozenset[str]] = {
    "none": frozenset(),
    "compile": frozenset({"compile"}),
    "run": frozenset({"run"}),
    "all": frozenset({"compile", "run"}),
}
PHASES: tuple[str, ...] = tuple(_PHASES)
DEFAULT_PHASE = "all"


@dataclass(frozen=True)
class Diagnostic:
    """One finding: `code` (a `CATALOGUE` key), the `function` it is in, a `message` with the
    numbers it is based on, and the user's `span`."""

    code: str
    function: str
    message: str
    span: Span

    @property
    def name(self) -> str:
        return CATALOGUE[self.code].name

    def __str__(self) -> str:
        return f"{self.code} {self.span}: in '{self.function}': {self.message}"


class DiagnosticWarning(UserWarning):
    """A compile-time warning (W001...) located at the user's source: `code`, `name`, `span`,
    `function` (and the `diagnostic`); `str()` is `"<code> <name>: in '<function>': <message>"`.

    Built from a `Diagnostic`; built from its text alone (as pickling and pytest-xdist do) the
    attributes are None, except `code` and `name` read back from the text.
    """

    def __init__(self, diagnostic: Diagnostic | str) -> None:
        if isinstance(diagnostic, Diagnostic):
            d = diagnostic
            text = f"{d.code} {d.name}: in '{d.function}': {d.message}"
            self.diagnostic: Diagnostic | None = d
            self.code, self.name, self.span, self.function = d.code, d.name, d.span, d.function
        else:
            text = str(diagnostic)
            head = text.split(":", 1)[0].split()
            self.diagnostic, self.span, self.function = None, None, None
            self.code = head[0] if head and head[0] in CATALOGUE else None
            self.name = CATALOGUE[self.code].name if self.code else None
        super().__init__(text)


@dataclass(frozen=True)
class DiagnosticOptions:
    """Which diagnostics run: `phase` (one of `PHASES`) and the `disabled` codes."""

    phase: str = DEFAULT_PHASE
    disabled: frozenset[str] = frozenset()

    def runs(self, phase: str) -> bool:
        """Whether diagnostics of `phase` ("compile" / "run") are checked at all."""
        return phase in _PHASES[self.phase]

    def enabled(self, code: str) -> bool:
        """Whether diagnostic `code` is reported: its phase runs and it is not disabled."""
        return self.runs(CATALOGUE[code].phase) and code not in self.disabled

    def keep(self, diags: Iterable[Diagnostic]) -> list[Diagnostic]:
        """The diagnostics of `diags` that are enabled, without repeats (same code, place, message)."""
        seen: set[tuple[str, Span, str]] = set()
        out = []
        for d in diags:
            key = (d.code, d.span, d.message)
            if self.enabled(d.code) and key not in seen:
                seen.add(key)
                out.append(d)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"phase": self.phase, "disabled": sorted(self.disabled)}


def diagnostic_options(phase: Any = None, disabled: Any = None,
                       base: DiagnosticOptions | None = None) -> DiagnosticOptions:
    """Checked options from `diagnostic_phase=` / `disabled_diagnostics=` values; None keeps the
    value of `base` (the defaults when `base` is None).

    `disabled` is a code or name, or an iterable of them (a set, list or tuple).

    Raises:
        ValueError: a phase not in `PHASES`, or an unknown code or name; the message names the
            value and lists the allowed ones.
    """
    base = base or DiagnosticOptions()
    if phase is None:
        phase = base.phase
    elif not isinstance(phase, str) or phase not in _PHASES:
        raise ValueError(f"unknown diagnostic_phase {phase!r}; allowed: {', '.join(map(repr, PHASES))}")
    if disabled is None:
        return DiagnosticOptions(phase, base.disabled)
    items = [disabled] if isinstance(disabled, str) else disabled
    try:
        items = list(items)
    except TypeError:
        raise ValueError(f"disabled_diagnostics must be a code or name or a set of them, got "
                         f"{disabled!r}") from None
    codes = set()
    for item in items:
        code = item if item in CATALOGUE else _BY_NAME.get(item) if isinstance(item, str) else None
        if code is None:
            allowed = ", ".join(f"{r.code} ({r.name})" for r in _ROWS)
            raise ValueError(f"unknown diagnostic {item!r} in disabled_diagnostics; allowed codes and "
                             f"names: {allowed}")
        codes.add(code)
    return DiagnosticOptions(phase, frozenset(codes))


def emit_warnings(diags: Iterable[Diagnostic]) -> None:
    """Issue each warning-kind diagnostic as a `DiagnosticWarning` at its span's file and line."""
    for d in diags:
        if CATALOGUE[d.code].kind != "warning":
            continue
        filename = d.span.filename if d.span.is_known() else "<pypto>"
        warnings.warn_explicit(DiagnosticWarning(d), DiagnosticWarning, filename, max(d.span.begin_line, 0),
                               module="pypto.diagnostics")


def render_diagnostics(title: str, diags: list[Diagnostic], options: DiagnosticOptions, phase: str,
                       codes: Iterable[str], empty: str) -> str:
    """A report file: `# title`, a line naming `codes` with their summaries, the options, then one
    line per diagnostic (`str(d)`), or `empty` when there is none, or a note when `phase` is off."""
    head = [f"# {title}", "# " + "; ".join(f"{c}: {CATALOGUE[c].summary}" for c in codes),
            f"# diagnostic_phase={options.phase!r}, disabled_diagnostics={sorted(options.disabled)}"]
    if not options.runs(phase):
        body = [f"not checked: diagnostic_phase={options.phase!r} leaves out the {phase} phase"]
    else:
        body = [str(d) for d in diags] or [empty]
    return "\n".join(head + body) + "\n"
