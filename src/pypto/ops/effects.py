"""Which buffers an op call reads and writes, and when two buffers conflict: the one analysis behind
the simulator's overlapping pipes (`runtime.sim.pipes`) and the set_flag / wait_flag pairs of the
PTO codegen (`codegen.pto.sync`) (issue 14 item 1).

A buffer is whatever key the caller gives a Var (`key_of`): an on-chip extent of a tile (an object
with an `overlaps(other)` method: bytes of one memory space) or a DDR tensor's key. The operands an
op reads and writes are its `OpSpec.reads` / `OpSpec.writes` positions; the result tile is written.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from ..ir.expr import Call, Var
from .registry import OpSpec

__all__ = ["call_buffers", "conflict"]


def call_buffers(spec: OpSpec, call: Call, dst: Var | None,
                 key_of: Callable[[Var], Hashable | None]) -> tuple[tuple, tuple]:
    """(buffers read, buffers written) by `call` of op `spec` whose result is bound to `dst` (None:
    evaluated for its effect); Vars whose `key_of` is None are not buffers (scalars, ...)."""
    n = len(call.args)

    def keys(indices) -> list:  # type: ignore[no-untyped-def]
        out = []
        for i in indices:
            a = call.args[i] if i < n else None
            if isinstance(a, Var):
                k = key_of(a)
                if k is not None:
                    out.append(k)
        return out

    reads, writes = keys(spec.reads), keys(spec.writes)
    if dst is not None:
        k = key_of(dst)
        if k is not None:
            writes.append(k)
    return tuple(reads), tuple(writes)


def conflict(a: Hashable, b: Hashable) -> bool:
    """Do buffers `a` and `b` share storage: the same key, or extents that overlap."""
    if a == b:
        return True
    ov = getattr(a, "overlaps", None)
    return ov is not None and hasattr(b, "overlaps") and bool(ov(b))
