"""Task records: one per kernel call submitted by an Orchestration function (SPEC §1, §5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...core.enums import ParamDirection

__all__ = ["Task"]


@dataclass(eq=False)
class Task:
    """One submitted kernel invocation.

    Attributes:
        task_id: submission index within the run, from 0.
        kernel: name of the InCore/AIC/AIV function.
        core_type: "AIC" (cube core) or "AIV" (vector core).
        args: argument values: torch tensors (DDR buffers, possibly views) and Python numbers.
        directions: In/Out/InOut per argument, from the kernel's parameter directions.
        core_index: index of the core (within `core_type`) the scheduler placed it on; None until
            scheduled.
        executor: the prepared `KernelExecutor`.
    """

    task_id: int
    kernel: str
    core_type: str
    args: tuple[Any, ...]
    directions: tuple[ParamDirection, ...]
    core_index: int | None = None
    executor: Any = field(default=None, repr=False)

    def __repr__(self) -> str:
        def brief(a: Any) -> str:
            shape = getattr(a, "shape", None)
            return f"{str(a.dtype).replace('torch.', '')}{list(shape)}" if shape is not None else repr(a)
        args = ", ".join(f"{d.name}:{brief(a)}" for a, d in zip(self.args, self.directions))
        return f"Task({self.task_id}, {self.kernel}, {self.core or self.core_type}, ({args}))"

    @property
    def core(self) -> str:
        """The core as one name, e.g. `AIV3` (empty before scheduling)."""
        return "" if self.core_index is None else f"{self.core_type}{self.core_index}"

    def args_with(self, *directions: ParamDirection) -> tuple[Any, ...]:
        """The arguments whose direction is one of `directions`."""
        return tuple(a for a, d in zip(self.args, self.directions) if d in directions)
