"""`import pypto.language.distributed as pld`: the distributed (multi-card, "L3") language (SPEC §8).

- Annotations: `pld.DistributedTensor[[shape], dtype]` (a window-bound DDR tensor; bare
  `pld.DistributedTensor` under `@pl.jit`), `pld.CommCtx`.
- Enums: `pld.NotifyOp`, `pld.WaitCmp`, `pld.AtomicType`, `pld.ReduceOp`.
- Ops, generated from the op registry (`pypto.ops.distributed` and the other `pld.*` families):
  `pld.system.*` (notify, wait, defer_wait, fence), `pld.tile.*` (remote_load, remote_store),
  `pld.tensor.*` (remote_store, put, get), top-level ops (`pld.get_comm_ctx`, `pld.rank`,
  `pld.nranks`, the collectives and host ops) and the short forms `pld.notify`, `pld.wait`,
  `pld.defer_wait`, `pld.fence`, `pld.remote_load`, `pld.remote_store`, `pld.put`, `pld.get`.
"""

from __future__ import annotations

from ...core.enums import AtomicType, NotifyOp, ReduceOp, WaitCmp
from . import system, tensor, tile
from ._namespace import ops_under, short_forms
from .host import WindowBuffer
from .types import CommCtx, DistributedTensor

globals().update(ops_under("pld."))
globals().update(short_forms())

__all__ = ["DistributedTensor", "CommCtx", "WindowBuffer", "NotifyOp", "WaitCmp", "AtomicType", "ReduceOp", "system", "tile",
           "tensor", *sorted(ops_under("pld.")), *sorted(short_forms())]
