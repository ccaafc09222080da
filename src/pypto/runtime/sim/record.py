"""What one simulated run leaves behind: tasks with their schedule, runtime scopes, findings.

The DFX writers (`pypto.runtime.dfx`) and tests read a `RunRecord`; nothing in it refers back to
the device, so it stays valid after the next run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...core.enums import ScopeMode
from ...core.span import Span

if TYPE_CHECKING:
    from .rings import RingSizes
    from .sanitizer import Finding
    from .task import Task

__all__ = ["ScopeInfo", "RunRecord", "OrchEvent"]


@dataclass(frozen=True)
class OrchEvent:
    """A span of orchestrator time that is not a submission: `kind` "stall" (a runtime ring was
    full: `args` names the ring depth, the full rings and the task waiting) or "wait" (the
    orchestrator waited for every submitted task: a host op reading task data, the end of the
    run). `start` / `end` in cycles."""

    kind: str
    name: str
    start: int
    end: int
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ScopeInfo:
    """One runtime scope instance: `name` (the orchestration function's name for its body, or
    `scope@<line>` for a `pl.scope()` block), its parent instance id (None for the entry), and its
    source location, and its mode (AUTO or MANUAL, SPEC §13). Its `path` joins the names from the entry down, e.g. `main/scope@12`."""

    scope_id: int
    name: str
    parent: int | None
    span: Span | None = None
    mode: ScopeMode = ScopeMode.AUTO

    def path(self, scopes: list[ScopeInfo]) -> str:
        """Names from the outermost scope to this one, joined with '/'."""
        parts = [self.name]
        p = self.parent
        while p is not None:
            parts.append(scopes[p].name)
            p = scopes[p].parent
        return "/".join(reversed(parts))


@dataclass
class RunRecord:
    """One program invocation on the simulator.

    Attributes:
        program / entry: names. backend: chip name. num_aic / num_aiv: cores of the chip.
        tasks: every task in submission order (each with core, start/end cycles, cost, deps).
        scopes: runtime scope instances by id.
        makespan_cycles: cycle at which the last task (or the orchestrator) finished.
        orchestrator_cycles: cycles the orchestrator spent submitting.
        auto_deps: whether dependencies were derived from overlapping DDR regions.
        findings: sanitizer findings (empty when not sanitizing or nothing was found).
        rings: the ring sizes of the run; ring_peaks: {kind: peak occupancy per ring}.
        orch_events: orchestrator stalls and waits (`OrchEvent`), in time order.
        scope_events: one dict per runtime scope begin / end with the occupancy of its ring
            (`scope_stats.jsonl`, written by `pypto.runtime.dfx.scope_stats`).
        created: (DDR buffer key, bytes, span) per tensor the orchestration created.
        inputs: (parameter name, DDR buffer key) per tensor argument of the entry.
        arg_dumps: task argument snapshots (`enable_dump_args`, `argdump.py`).
        kernel_envs: of a replayed run, per task its (arguments, bound kernel environment), which
            the next replay with the same argument objects runs again (`replay.py`).
        derived: of a replayed run, a cache shared by all replays of one plan (their records are
            alike but for the tensors) for results computed from the record alone; else None.
        replayed: whether the run replayed the schedule an earlier run recorded
            (docs/performance.md "Replayed runs") instead of being simulated in full.
    """

    program: str
    entry: str
    backend: str
    num_aic: int
    num_aiv: int
    auto_deps: bool = True
    sanitize: bool = False
    tasks: list[Task] = field(default_factory=list)
    scopes: list[ScopeInfo] = field(default_factory=list)
    makespan_cycles: int = 0
    orchestrator_cycles: int = 0
    findings: list[Finding] = field(default_factory=list)
    rings: RingSizes | None = None
    ring_peaks: dict[str, list[int]] = field(default_factory=dict)
    orch_events: list[OrchEvent] = field(default_factory=list)
    scope_events: list[dict[str, Any]] = field(default_factory=list)
    created: list[tuple[int, int, Span | None]] = field(default_factory=list)
    arg_dumps: list[dict[str, Any]] = field(default_factory=list)
    inputs: list[tuple[str, int]] = field(default_factory=list)
    # a replayed run's bound kernel environments per task (`replay.py`; None: a group or not bound)
    kernel_envs: list[Any] | None = field(default=None, repr=False, compare=False)
    # of a replayed run: a dict shared by every replay of its plan, whose records are all alike, for
    # what is derived from the record alone (run-time hints, `run_hints.update_run_hints`)
    derived: dict[Any, Any] | None = field(default=None, repr=False, compare=False)
    replayed: bool = field(default=False, compare=False)
