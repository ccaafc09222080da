"""Chip-wide system ops `pl.system.*` (SPEC §13 "More ops and options"): the all-core barrier, cache
invalidation, the memory fence, cross-core flags and the chip's core counts.

- `syncall()`: all-core barrier of a launch — every core of the running kernel's launch waits until
  all of them reached it (hardware: a handshake through DDR, far slower than a pipe flag).
- `cacheinvalid(tensor)`: invalidate the core's cached lines of DDR tensor `tensor`, so that later
  reads fetch what other cores (or the host) wrote; it counts as a read of the tensor.
- `fence()`: memory fence — the core's DDR accesses before it complete before any after it start.
- `sync_set(set_pipe, event_id)`: set cross-core flag `event_id` (0..15) once pipe `set_pipe` has
  finished its earlier work — the cross-core counterpart of `sync_src` (which records an event for
  another pipe of the same core); a kernel on another core waits for the flag.
- `available_aiv_count()` / `available_cluster_count()`: INDEX scalars — the chip's vector cores and
  clusters (one cube core and two vector cores each): 48 / 24 on Ascend910B, 72 / 36 on Ascend950
  (`SoCModel.num_aiv` / `num_aic`).

In the simulator every task runs to completion before the tasks that depend on it start, and a
kernel's ops run one after another on a memory without caches, so `syncall`, `cacheinvalid`,
`fence` and `sync_set` change no data: their compute is a no-op and they count only in the cycle
model (scalar pipe; `syncall` as `SYNCALL_FACTOR` scalar instructions). `syncall` does not make the
cores of a launch wait for each other: code that relies on it to order one core's DDR writes
before another core's reads runs as if the cores ran one after another. The core counts come from
the `ChipContext` current in the running thread: `SimDevice.run` sets the running chip's with
`chip_context(...)`; outside any run they are Ascend910B's.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..ir.expr import Expr
from ..ir.types import TupleType, Type
from .cost import Cost, scalar
from .registry import OpSpec, register
from .system import PIPE_NAMES
from .typing_rules import ANY, attr_choice, attr_int, expect_tensor, index_rule, no_data, unit_rule

__all__ = ["ChipContext", "current_chip", "chip_context", "SYNCALL_FACTOR", "CROSS_CORE_FLAGS"]

SYNCALL_FACTOR = 64.0     # an all-core barrier, in scalar instructions (a DDR round trip per core)
CROSS_CORE_FLAGS = 16     # cross-core flag ids 0..15


@dataclass(frozen=True)
class ChipContext:
    """The running chip's core counts: `aiv_count` vector cores in `cluster_count` clusters."""

    aiv_count: int = 48
    cluster_count: int = 24


_OUTSIDE = ChipContext()
_CURRENT: contextvars.ContextVar[ChipContext | None] = contextvars.ContextVar("pypto_chip", default=None)


def current_chip() -> ChipContext:
    """The core counts of the chip running the current kernel (Ascend910B's outside any run)."""
    return _CURRENT.get() or _OUTSIDE


@contextmanager
def chip_context(aiv_count: int, cluster_count: int) -> Iterator[ChipContext]:
    """Run the enclosed code on a chip with `aiv_count` vector cores in `cluster_count` clusters.

    Raises ValueError unless both are positive."""
    if aiv_count <= 0 or cluster_count <= 0:
        raise ValueError(f"a chip needs cores: {aiv_count} vector cores, {cluster_count} clusters")
    token = _CURRENT.set(ChipContext(aiv_count, cluster_count))
    try:
        yield current_chip()
    finally:
        _CURRENT.reset(token)


def _tensor_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    expect_tensor(args, 0, "tensor")
    return TupleType(())


def _flag_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    attr_choice(attrs, "set_pipe", PIPE_NAMES)
    attr_int(attrs, "event_id", 0, CROSS_CORE_FLAGS - 1)
    return TupleType(())


_SYS = frozenset({"system"})
_OPS = [  # name, params, rule, compute, attrs, reads, pto, cost, dtypes, doc
    ("syncall", (), unit_rule, no_data, {}, (), "pto.sync_all", Cost("scalar", "S", "one", SYNCALL_FACTOR), "",
     "All-core barrier of a launch: every core waits until all cores of the launch reach it. The "
     "simulator runs tasks to completion, so it changes no data (a cost only)."),
    ("cacheinvalid", ("tensor",), _tensor_rule, no_data, {}, (0,), "pto.dcci", scalar(), ANY.text,
     "Invalidate the core's cached lines of DDR tensor `tensor` (a read of it); no data effect in the "
     "simulator, which models no data cache."),
    ("fence", (), unit_rule, no_data, {}, (), "pto.fence", scalar(), "",
     "Memory fence: the core's DDR accesses before it complete before any after it start (no data "
     "effect in the simulator, whose ops run in order)."),
    ("sync_set", (), _flag_rule, no_data, {"set_pipe": "V", "event_id": 0}, (), "pto.sync_set", scalar(), "",
     "Set cross-core flag `event_id` (0..15) once pipe `set_pipe` has finished its earlier work, for a "
     "kernel on another core to wait on (no data effect in the simulator)."),
]

for _name, _params, _rule, _fn, _attrs, _reads, _pto, _cost, _dtypes, _doc in _OPS:
    register(OpSpec(f"system.{_name}", _params, _rule, _fn, attrs=dict(_attrs), reads=_reads, traits=_SYS,
                    pto=_pto, cost=_cost, family="chip", dtypes=_dtypes, doc=_doc))

for _name, _field, _what in (("available_aiv_count", "aiv_count", "vector cores (AIV)"),
                             ("available_cluster_count", "cluster_count", "clusters (1 AIC + 2 AIV each)")):
    register(OpSpec(f"system.{_name}", (), index_rule, (lambda f: lambda: getattr(current_chip(), f))(_field),
                    traits=_SYS, pto=f"pto.{_name}", cost=scalar(), family="chip", dtypes="INDEX result",
                    doc=f"The running chip's number of {_what}, as an INDEX scalar: "
                        f"{'48 / 72' if _field == 'aiv_count' else '24 / 36'} on Ascend910B / Ascend950."))
