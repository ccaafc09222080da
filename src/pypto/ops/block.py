"""Block identity: which block (core) of a launch a kernel instance is (SPEC §3 "Block identity").

`get_block_idx()`, `get_block_num()` and `get_subblock_idx()` return INDEX scalars. A kernel
launched over several blocks (SPMD) reads them to pick its share of the work; the subblock index
tells the two vector cores of a cluster apart (0 or 1).

In the simulator the values come from the `BlockContext` current in the running thread: the
runtime sets it with `block_context(...)` around each kernel instance it executes; outside any
launch a kernel is block 0 of 1, subblock 0 of 1.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from .cost import scalar
from .registry import OpSpec, register, register_unified
from .typing_rules import index_rule

__all__ = ["BlockContext", "current_block", "block_context", "single_block"]


@dataclass(frozen=True)
class BlockContext:
    """Identity of the running kernel instance: block `block_idx` of `block_num`, vector subblock
    `subblock_idx` of `subblock_num` (1 or 2 per cluster)."""

    block_idx: int = 0
    block_num: int = 1
    subblock_idx: int = 0
    subblock_num: int = 1


_OUTSIDE = BlockContext()
_CURRENT: contextvars.ContextVar[BlockContext | None] = contextvars.ContextVar("pypto_block", default=None)


def current_block() -> BlockContext:
    """The identity of the running kernel instance (block 0 of 1 outside any launch)."""
    return _CURRENT.get() or _OUTSIDE


class block_context:  # noqa: N801  (used as a function: `with block_context(...)`)
    """Run the enclosed kernel code as the given block (`with block_context(b, n): ...` gives the
    `BlockContext`). Raises ValueError for an index out of range.

    A class rather than a generator-based context manager: the simulator enters one around every
    task it records and runs, so its cost is per task; the contexts are shared (they are frozen).
    """

    __slots__ = ("_ctx", "_token")

    def __init__(self, block_idx: int = 0, block_num: int = 1, subblock_idx: int = 0,
                 subblock_num: int = 1) -> None:
        key = (block_idx, block_num, subblock_idx, subblock_num)
        ctx = _CONTEXTS.get(key)
        if ctx is None:
            if not (0 <= block_idx < block_num and 0 <= subblock_idx < subblock_num):
                raise ValueError(f"block {block_idx} of {block_num}, subblock {subblock_idx} of "
                                 f"{subblock_num} is out of range")
            ctx = BlockContext(*key)
            if len(_CONTEXTS) < 4096:
                _CONTEXTS[key] = ctx
        self._ctx = ctx

    def __enter__(self) -> BlockContext:
        self._token = _CURRENT.set(self._ctx)
        return self._ctx

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


_CONTEXTS: dict[tuple[int, int, int, int], BlockContext] = {(0, 1, 0, 1): _OUTSIDE}


def single_block() -> bool:
    """Whether the running code is block 0 of 1, subblock 0 of 1: outside any launch, or within
    `block_context(0, 1)` (which sets the very context `current_block()` gives outside one)."""
    c = _CURRENT.get()
    return c is None or c is _OUTSIDE or c == _OUTSIDE


for _name, _field, _what, _range in (
        ("get_block_idx", "block_idx", "index of the running block (0-based)", None),
        ("get_block_num", "block_num", "number of blocks of the launch", None),
        ("get_subblock_idx", "subblock_idx", "index of the running vector core within its cluster (0 or 1)",
         (0, 1))):
    register(OpSpec(f"tile.{_name}", (), index_rule, (lambda f: lambda: getattr(current_block(), f))(_field),
                    traits=frozenset({"block"}), scalar_range=_range, pto=f"pto.{_name}", cost=scalar(), family="block",
                    dtypes="INDEX result", doc=f"The {_what}, as an INDEX scalar."))
    register_unified(_name, "tile", None, f"tile.{_name}")
