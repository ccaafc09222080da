"""Function and Program (SPEC §4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.enums import FunctionType, Level, ParamDirection, Role
from ..core.span import Span
from .expr import Var
from .stmt import SeqStmts
from .types import Type

__all__ = ["Function", "Program", "ExternalKernel"]

_NO_SPAN = Span.unknown()


@dataclass(frozen=True, slots=True)
class ExternalKernel:
    """A hand-written C++ kernel behind an AIV / AIC function (SPEC §10; docs/tools.md).

    `source`: absolute path of the `.cpp` file (one `extern "C" void kernel_entry(int64_t* args)`).
    `include_dirs`: absolute extra include directories. `cost`: simulated cycles of one task —
    an int, a Python expression over the parameter names (str), a `"callable:<token>"` naming a
    Python callable registered by `pypto.runtime.extern.cost`, or None for the default estimate.
    `core_num`: blocks each call launches (SPMD; the kernel reads its block index at run time).
    """

    source: str
    include_dirs: tuple[str, ...] = ()
    cost: int | str | None = None
    core_num: int = 1


@dataclass(frozen=True, slots=True, eq=False)
class Function:
    """A function: parameters with directions (In/Out/InOut), return types and a body.

    `strict_ssa` and `auto_scope` record the decorator options the parser used. `optimizations`
    holds the `pl.at(optimizations=[...])` entries of the scope an InCore function was outlined
    from (or `@pl.function(optimizations=[...])`), in the form of `ScopeStmt.optimizations`:
    (name, ((key, value), ...)) pairs such as `("split", (("mode", SplitMode.UP_DOWN),))`.
    ExpandMixedKernel reads them and leaves them on the Group function it makes.
    `external` marks a hand-written C++ kernel (SPEC §10): its body is empty and every pass leaves
    the function as it is.
    `attrs` holds the metadata of `pl.func_attr({...})` (SPEC §13): (key, value) pairs sorted by
    key, values JSON-able scalars (bool, int, float, str, None) or tuples of them (lists in the
    DSL). Keys with a meaning of their own (level, role, optimizations) are decorator options and
    never appear here. Passes keep them on the kernels they derive from a function (AIC / AIV
    kernels of a mixed kernel); codegen copies them into `kernel_config.py` and the build's
    `compiled_meta.json`.
    """

    name: str
    func_type: FunctionType
    params: tuple[Var, ...]
    param_directions: tuple[ParamDirection, ...]
    return_types: tuple[Type, ...]
    body: SeqStmts
    level: Level | None = None
    role: Role | None = None
    strict_ssa: bool = False
    auto_scope: bool = True
    optimizations: tuple[tuple[str, tuple[tuple[str, Any], ...]], ...] = ()
    external: ExternalKernel | None = None
    attrs: tuple[tuple[str, Any], ...] = ()
    span: Span = field(default=_NO_SPAN, kw_only=True, compare=False, repr=False)

    def attrs_json(self) -> dict[str, Any]:
        """`attrs` as a JSON-able dict (tuples become lists), for build files."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.attrs}


@dataclass(frozen=True, slots=True, eq=False)
class Program:
    """A named set of functions, kept sorted by name (SPEC §13: upstream's convention, so the order
    a program prints, serializes and compiles in does not depend on definition order)."""

    name: str
    functions: tuple[Function, ...]
    span: Span = field(default=_NO_SPAN, kw_only=True, compare=False, repr=False)

    def __post_init__(self) -> None:
        funcs = tuple(self.functions)
        if any(a.name > b.name for a, b in zip(funcs, funcs[1:])):
            funcs = tuple(sorted(funcs, key=lambda f: f.name))
        object.__setattr__(self, "functions", funcs)

    def get_function(self, name: str) -> Function | None:
        for f in self.functions:
            if f.name == name:
                return f
        return None

    @property
    def function_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.functions)
