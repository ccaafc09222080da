"""What one simulated run leaves behind: tasks with their schedule, runtime scopes, findings.

The DFX writers (`pypto.runtime.dfx`) and tests read a `RunRecord`; nothing in it refers back to
the device, so it stays valid after the next run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ...core.enums import ScopeMode
from ...core.span import Span

if TYPE_CHECKING:
    from .sanitizer import Finding
    from .task import Task

__all__ = ["ScopeInfo", "RunRecord"]


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
