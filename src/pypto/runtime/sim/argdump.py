"""Task argument snapshots for `RunConfig.enable_dump_args` (SPEC §12 runtime DFX).

Level 2 records every tensor argument of every task; level 1 only the tensor arguments whose DDR
region overlaps a tensor the orchestration tagged with `pl.dump_tag(t)` before it submitted the
task (a tag applies to the tasks submitted after it, in program order). An In argument is recorded as it was when the task started (`before`), an Out
argument as the task left it (`after`), an InOut argument both. The snapshots are copies: later
tasks do not change them. `pypto.runtime.dfx.argdump` writes them out.
"""

from __future__ import annotations

from typing import Any

import torch

from ...core.enums import ParamDirection
from .regions import Region, region_of

__all__ = ["ArgDumper"]

_BEFORE = (ParamDirection.In, ParamDirection.InOut)
_AFTER = (ParamDirection.Out, ParamDirection.InOut)


class ArgDumper:
    """Collects argument snapshots into `out` (a list of dicts, one per dumped task):
    `{"task_id", "kernel", "core", "args": [{"index", "name", "direction", "dtype", "shape",
    "before", "after"}]}` with `before` / `after` a torch tensor copy or None."""

    def __init__(self, level: int, out: list[dict[str, Any]]) -> None:
        self.level, self.out = level, out
        self._tags: list[Region] = []
        self._wanted: dict[int, list[int]] = {}

    def tag(self, region: Region) -> None:
        """Mark the DDR region of a `pl.dump_tag` tensor."""
        self._tags.append(region)

    def submitted(self, task: Any) -> None:
        """Decide which arguments of `task` (just submitted) to dump, from the tags so far."""
        idx = [i for i, a in enumerate(task.args) if isinstance(a, torch.Tensor)]
        if self.level < 2:
            idx = [i for i in idx if any(region_of(task.args[i]).overlaps(r) for r in self._tags)]
        if idx:
            self._wanted[task.task_id] = idx

    def before(self, task: Any) -> list[tuple[int, torch.Tensor | None]] | None:
        """Snapshot the wanted In/InOut arguments of `task` (about to run); None: nothing wanted."""
        idx = self._wanted.pop(task.task_id, None)
        if not idx:
            return None
        return [(i, task.args[i].detach().clone() if task.directions[i] in _BEFORE else None) for i in idx]

    def after(self, task: Any, snap: list[tuple[int, torch.Tensor | None]] | None) -> None:
        """Record `task` (it has just run) with the snapshot `before` returned."""
        if snap is None:
            return
        params = task.executor.func.params
        args = []
        for i, before in snap:
            a, d = task.args[i], task.directions[i]
            dtype = getattr(params[i].type, "dtype", None)
            args.append({"index": i, "name": params[i].name, "direction": d.name,
                         "dtype": dtype.name if dtype is not None else str(a.dtype).replace("torch.", ""),
                         "torch_dtype": str(a.dtype).replace("torch.", ""), "shape": list(a.shape),
                         "before": before, "after": a.detach().clone() if d in _AFTER else None})
        self.out.append({"task_id": task.task_id, "kernel": task.kernel, "core": task.core, "args": args})
