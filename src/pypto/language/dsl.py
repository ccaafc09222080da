"""DSL helpers recognised by the parser: loops, yields, scopes, directives (SPEC §2.3).

These objects are markers. Inside a `@pl.function` body the parser sees the call
(`pl.range(...)`, `pl.yield_(...)`, `with pl.at(...)`) and builds IR; calling them as ordinary
Python raises a RuntimeError, because kernel bodies are parsed, never executed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.enums import SplitMode

__all__ = [
    "DSLBuiltin", "range", "parallel", "unroll", "pipeline", "while_", "cond", "yield_", "at",
    "scope", "static_print", "static_assert", "const", "min", "max", "split", "cross_core_slot",
    "Optimization", "func_attr", "manual_scope", "submit", "spmd", "spmd_submit", "cluster", "split_aiv",
]


class DSLBuiltin:
    """A DSL construct handled by the parser; `name` selects its handler."""

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"pl.{self.name}(...) can only be used inside a @pl.function / @pl.jit body; "
                           f"kernel bodies are parsed into IR, not executed by Python")

    def __repr__(self) -> str:
        return f"pl.{self.name}"


range = DSLBuiltin("range", "pl.range(stop | start, stop[, step], init_values=(...)): sequential loop.")
parallel = DSLBuiltin("parallel", "pl.parallel(...): loop whose iterations are independent.")
unroll = DSLBuiltin("unroll", "pl.unroll(...): loop unrolled at compile time.")
pipeline = DSLBuiltin("pipeline", "pl.pipeline(...): software-pipelined loop.")
while_ = DSLBuiltin("while_", "pl.while_(init_values=(...)): loop while the first-statement pl.cond holds.")
cond = DSLBuiltin("cond", "pl.cond(expr): the condition of the enclosing pl.while_ loop.")
yield_ = DSLBuiltin("yield_", "pl.yield_(*values): carry values out of a loop iteration or if branch.")
at = DSLBuiltin("at", "with pl.at(level=..., optimizations=[...], deps=[...]): an InCore region.")
scope = DSLBuiltin("scope", "with pl.scope(mode=pl.ScopeMode.AUTO | MANUAL): a runtime scope placed by "
                   "hand; MANUAL derives no task order (SPEC §13).")
manual_scope = DSLBuiltin("manual_scope", "with pl.manual_scope(): pl.scope(mode=pl.ScopeMode.MANUAL).")
submit = DSLBuiltin("submit", "outs..., tid = pl.submit(kernel, *args, deps=[...]): submit a kernel call and "
                    "get its outputs and its pl.TaskId (SPEC §13).")
spmd = DSLBuiltin("spmd", "with pl.spmd(core_num=N, sync_start=False): / for b in pl.spmd(N): the tasks of the "
                  "body run once per block 0..N-1 (pl.get_block_idx() inside the kernel).")
spmd_submit = DSLBuiltin("spmd_submit", "outs..., tid = pl.spmd_submit(kernel, *args, core_num=N): "
                         "pl.submit of N blocks of one kernel.")
cluster = DSLBuiltin("cluster", "with pl.cluster(): the kernels called inside run together on one cluster "
                     "(a cube core and its two vector cores), as a Group function.")
static_print = DSLBuiltin("static_print", "pl.static_print(x): print x's IR type at parse time.")
static_assert = DSLBuiltin("static_assert", "pl.static_assert(cond, msg): check a compile-time condition.")
const = DSLBuiltin("const", "pl.const(value, dtype): a typed scalar constant.")
func_attr = DSLBuiltin("func_attr", "pl.func_attr({...}): the function's attributes (its first statement).")
min = DSLBuiltin("min", "pl.min(a, b): scalar minimum.")
max = DSLBuiltin("max", "pl.max(a, b): scalar maximum.")


@dataclass(frozen=True)
class Optimization:
    """One entry of `pl.at(optimizations=[...])`: a name and its parameters."""

    name: str
    params: tuple[tuple[str, Any], ...]


def split(mode: SplitMode) -> Optimization:
    """`pl.split(pl.SplitMode.UP_DOWN)`: cross-core split hint for ExpandMixedKernel."""
    if not isinstance(mode, SplitMode):
        raise TypeError(f"pl.split expects a pl.SplitMode, got {mode!r}")
    return Optimization("split", (("mode", mode),))


def split_aiv(num: int = 2, mode: SplitMode = SplitMode.UP_DOWN) -> Optimization:
    """`pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN)`: the explicit form of a vector split inside a
    mixed kernel (SPEC §13) — the AIV half runs on both vector cores of the cluster, each on half
    of the rows (UP_DOWN) or columns (LEFT_RIGHT). The same optimization as `pl.split(mode)`.

    Raises:
        ValueError: `num` is not 2 (a cluster has two vector cores, SPEC §6).
        TypeError: `mode` is not a pl.SplitMode.
    """
    if num != 2 or isinstance(num, bool):
        raise ValueError(f"pl.split_aiv splits over the 2 vector cores of a cluster; got {num!r}")
    return split(mode)


def cross_core_slot(slot_num: int) -> Optimization:
    """`pl.cross_core_slot(slot_num=N)`: ring depth of the automatic cross-core pipe."""
    if not isinstance(slot_num, int) or isinstance(slot_num, bool) or slot_num <= 0:
        raise ValueError(f"slot_num must be a positive int, got {slot_num!r}")
    return Optimization("cross_core_slot", (("slot_num", slot_num),))
