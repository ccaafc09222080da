"""The seam between the distributed ops (`pld.*`, SPEC §8) and the multi-rank runtime.

The compute functions of `pypto.ops.distributed` run inside a rank's simulated chip. They reach the
other ranks only through the `Comm` installed for the running rank (`comm_context`), so the ops
layer never imports the runtime (DESIGN "layers"): `pypto.runtime.dist` implements `Comm` over
shared memory, and tests may install their own.

Regions are named by *local views*: `local` is a torch view of this rank's copy of a window-bound
tensor (a `pld.DistributedTensor` argument, or a slice of it). Every rank's window has the same
layout, so the same view names the same bytes on every peer; the runtime maps `local`'s address
to its window and offset. Signal cells are one-element views.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import torch

from ..core.errors import RuntimeSimError
from ..core.span import Span

__all__ = ["Comm", "current_comm", "comm_context", "active_comm"]


class Comm(Protocol):
    """What one rank can do to the others (SPEC §8 primitives). Ranks are logical, in [0, nranks).

    Errors: every method raises `RuntimeSimError` (with `span`) for a peer outside [0, nranks) or a
    `local` view that does not lie inside a window; `wait` raises the runtime's deadlock error when
    the run is aborted while it blocks.

    Optional: `remote_read_into(local, peer, out, span=None)` — `remote_read` written into tensor
    `out` (same shape) and returning it; `pld.tile.remote_load` uses it when present to skip a copy.
    """

    rank: int
    nranks: int

    def peer_view(self, local: torch.Tensor, peer: int, span: Span | None = None) -> torch.Tensor:
        """A view, same shape and strides, of PEER's copy of the window region `local` views."""
        ...

    def notify(self, cell: torch.Tensor, peer: int, value: int, op: str, span: Span | None = None) -> None:
        """Atomically add (`op="add"`) or set (`op="set"`) `value` in PEER's copy of the one-element
        signal `cell` (INT32/INT64 window element). Remote writes issued before it are visible to
        PEER before the new value (a fence precedes every notify)."""
        ...

    def wait(self, cell: torch.Tensor, expected: int, cmp: str, span: Span | None = None) -> None:
        """Block until this rank's own `cell` is == (`cmp="eq"`) or >= (`cmp="ge"`) `expected`."""
        ...

    def remote_write(self, local: torch.Tensor, peer: int, data: torch.Tensor, accumulate: bool,
                     span: Span | None = None) -> None:
        """Write (or atomically add, `accumulate=True`) `data` (shape of `local`) into PEER's copy of
        the region `local` views."""
        ...

    def remote_read(self, local: torch.Tensor, peer: int, span: Span | None = None) -> torch.Tensor:
        """A copy of PEER's copy of the region `local` views (shape and dtype of `local`)."""
        ...

    def fence(self, span: Span | None = None) -> None:
        """Make this rank's earlier remote writes visible to their peers."""
        ...


_CURRENT: contextvars.ContextVar[Any] = contextvars.ContextVar("pypto_comm", default=None)


def active_comm() -> Comm | None:
    """The `Comm` of the running rank, or None outside a distributed run."""
    return _CURRENT.get()


def current_comm(op: str, span: Span | None = None) -> Comm:
    """The running rank's `Comm`, for the compute of op `op`.

    Raises:
        RuntimeSimError: no distributed run is active (the op is named, with `span`).
    """
    comm = _CURRENT.get()
    if comm is None:
        raise RuntimeSimError(f"'{op}' talks to other ranks: it runs only inside a distributed program "
                              f"(a @pl.jit.host orchestrator dispatching chip programs with device=r)", span)
    return comm


@contextmanager
def comm_context(comm: Comm | None) -> Iterator[None]:
    """Install `comm` as the running rank's communicator for the duration of the block."""
    token = _CURRENT.set(comm)
    try:
        yield
    finally:
        _CURRENT.reset(token)
