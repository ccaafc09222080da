"""The operator registry: one `OpSpec` per op (DESIGN "One registry, many readers").

Every consumer — the DSL wrappers and parser (argument schema, type inference), the printer,
ConvertTensorToTileOps (`tile_op`), InferTileMemorySpace (`operand_spaces`), the simulator and the
torch reference (`compute`), and PTO codegen (`pto`) — reads the OpSpec; nothing outside
`pypto.ops` holds knowledge about a specific op.

Type inference receives the argument *expressions* (so list arguments such as offsets and shapes
are visible as `MakeTuple`s of constants) and the attribute dict, and raises `OpTypeError` with a
message naming the offending argument; the parser re-raises it as a `ParserTypeError` at the
user's line, prefixed with the op name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.enums import MemorySpace
from ..ir.expr import Expr
from ..ir.types import Type

__all__ = ["OpSpec", "OpTypeError", "register", "get_op", "has_op", "all_ops", "UNIFIED",
           "register_unified"]


class OpTypeError(Exception):
    """Raised by a type rule; the caller attaches the op name and the source location."""


@dataclass(frozen=True, slots=True)
class OpSpec:
    """Everything PyPTO knows about one op.

    Attributes:
        name: IR name, `<namespace>.<op>` (`tile.add`).
        params: names of the positional arguments, in order.
        attrs: keyword attributes and their defaults, in printing order.
        infer: `(args, attrs) -> Type`; raises OpTypeError.
        compute: torch semantics `(*arg_values, **attrs) -> value`. Tensors/tiles arrive as torch
            tensors, list arguments as tuples of Python numbers, scalars as Python numbers.
            Ops in `writes` mutate that argument in place and return it.
        reads / writes: indices of the arguments the op reads / writes (SPEC §3).
        traits: properties passes query instead of names: "elementwise", "reduction", "memory",
            "creation", "cube" (runs on AIC), "vector" (runs on AIV), "orchestration" (allowed in an
            Orchestration function), "view".
        tile_op: for a tensor op, the tile op ConvertTensorToTileOps rewrites it to.
        operand_spaces: required memory space per tile argument index (InferTileMemorySpace).
        scratch: indices of scratch-tile arguments shaped like argument 0 (reduction `tmp_tile`);
            ConvertTensorToTileOps allocates them.
        pto: PTO MLIR instruction name (`pto.tadd`), None if the op is not a device instruction.
        doc: one-paragraph reference text (the operator reference page is generated from it).
    """

    name: str
    params: tuple[str, ...]
    infer: Callable[[list[Expr], dict[str, Any]], Type]
    compute: Callable[..., Any] | None
    attrs: dict[str, Any] = field(default_factory=dict)
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    traits: frozenset[str] = frozenset()
    tile_op: str | None = None
    operand_spaces: dict[int, tuple[MemorySpace, ...]] = field(default_factory=dict)
    scratch: tuple[int, ...] = ()
    pto: str | None = None
    doc: str = ""

    @property
    def namespace(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def short_name(self) -> str:
        return self.name.split(".", 1)[1]

    def has_trait(self, trait: str) -> bool:
        return trait in self.traits


_REGISTRY: dict[str, OpSpec] = {}

# Unified `pl.X` dispatch: name -> {(namespace, scalar_rhs): op name}; namespace is "tensor"/"tile".
UNIFIED: dict[str, dict[tuple[str, bool], str]] = {}


def register(spec: OpSpec) -> OpSpec:
    if spec.name in _REGISTRY:
        raise ValueError(f"op {spec.name} registered twice")
    _REGISTRY[spec.name] = spec
    return spec


def register_unified(name: str, namespace: str, scalar_rhs: bool, op_name: str) -> None:
    UNIFIED.setdefault(name, {})[(namespace, scalar_rhs)] = op_name


def get_op(name: str) -> OpSpec:
    """The OpSpec registered under `name`. Raises KeyError naming the op if there is none."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no op named {name!r} is registered") from None


def has_op(name: str) -> bool:
    return name in _REGISTRY


def all_ops() -> list[OpSpec]:
    return list(_REGISTRY.values())
