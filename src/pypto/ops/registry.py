"""The operator registry: one `OpSpec` per op (DESIGN "One registry, many readers").

Every consumer — the DSL wrappers and parser (argument schema, type inference), the printer,
ConvertTensorToTileOps (`tile_op`), InferTileMemorySpace (`operand_spaces`), the simulator and the
torch reference (`compute`), PTO codegen (`pto`), the cycle model (`cost`) and the operator
reference page (`doc`, `family`, `dtypes`) — reads the OpSpec; nothing outside `pypto.ops` holds
knowledge about a specific op.

Type inference receives the argument *expressions* (so list arguments such as offsets and shapes
are visible as `MakeTuple`s of constants) and the attribute dict, and raises `OpTypeError` with a
message naming the offending argument; the parser re-raises it as a `ParserTypeError` at the
user's line, prefixed with the op name.

IR names are `<namespace>.<op>`; an op whose leaf name is a Python keyword (`tensor.and`) is spelt
with a trailing underscore in Python (`pl.tensor.and_`), see `python_name`.
"""

from __future__ import annotations

import keyword
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..core.enums import MemorySpace
from ..ir.expr import Expr
from ..ir.types import Type
from .cost import Cost

__all__ = ["OpSpec", "OnChip", "Step", "OpTypeError", "register", "get_op", "has_op", "all_ops", "UNIFIED",
           "register_unified", "python_name", "unified_names_of"]


class OpTypeError(Exception):
    """Raised by a type rule; the caller attaches the op name and the source location. `reason` is
    what is wrong, `advice` (may be empty) the usual way out, shown after it in parentheses; a
    caller that knows the user's code better may show its own advice instead (the parser, for a
    Tensor that `pl.full` built)."""

    def __init__(self, reason: str, advice: str = "") -> None:
        super().__init__(f"{reason} ({advice})" if advice else reason)
        self.reason, self.advice = reason, advice


def python_name(ir_name: str) -> str:
    """The Python spelling of IR op name `ir_name`: `tensor.and` -> `tensor.and_`."""
    ns, _, leaf = ir_name.partition(".")
    return f"{ns}.{leaf}_" if keyword.iskeyword(leaf) else ir_name


class Step(NamedTuple):
    """In an `OnChip` lowering: the result of the `index`-th step before."""

    index: int


@dataclass(frozen=True, slots=True)
class OnChip:
    """How ConvertTensorToTileOps lowers a tensor-level op that otherwise runs as it is on DDR
    tensors (the distributed transfers of SPEC §8) when one of its operands `args` lives on chip
    (a value computed in the kernel, or a slice region, which is loaded): `steps(operands, attrs)`
    gets the call's operands (those of `args` on chip as tiles) and attributes and returns the tile
    ops that replace it, `[(op name, operands, attrs), ...]`; an operand is an IR expression, a
    `Step(k)` (the result of step k), a list of ints / expressions (a MakeTuple) or an int. The last
    step's result stands for the call's result."""

    args: tuple[int, ...]
    steps: Callable[[list[Expr], dict[str, Any]], list[tuple[str, list[Any], dict[str, Any]]]]


@dataclass(frozen=True, slots=True)
class OpSpec:
    """Everything PyPTO knows about one op.

    Attributes:
        name: IR name, `<namespace>.<op>` (`tile.add`); namespaces are tensor, tile, system, array.
        params: names of the positional arguments (IR operands), in order.
        infer: `(args, attrs) -> Type`; raises OpTypeError naming the argument.
        compute: torch semantics `(*arg_values, **attrs) -> value`. Tensors/tiles arrive as torch
            tensors, list arguments as tuples of Python numbers, scalars as Python numbers. Ops in
            `writes` return the updated argument. None only for ops that produce no data
            (`tile.create`: contents undefined).
        compute_into: optional faster form of `compute` for the simulator's kernels:
            `(dst, *arg_values, **attrs) -> None | value` writes the result into `dst` (the result
            tile's buffer, which may be an operand's buffer: it must check) and returns None, or
            returns a value like `compute` when it cannot (the caller then copies it into `dst`).
            Same numbers as `compute` up to floating-point rounding order (matmul_acc accumulates
            in place, like the cube unit accumulating into L0C).
        specialize: optional, for the simulator's kernels: `(site: ops.site.KernelSite) -> fn | None`,
            called once per call site when the kernel is prepared; `fn` replaces `compute` /
            `compute_into` at that site (see `KernelSite.dst` for its signature). It bakes in what
            the site fixes (constant offsets, proven bounds, which operands share the result's
            buffer) and must give bit-identical numbers and the same errors as the general path.
        batch: optional, for independent tasks of one kernel run together (`runtime/sim/batch.py`):
            `(site: KernelSite) -> fn | None` like `specialize`, but `fn(dst, *arg_values)` receives
            every tile (the result and the tile operands) as a view with a leading *lane* axis,
            [lanes, *tile shape], one lane per task; scalars are the same for every lane. It writes
            `dst` and returns None, giving in every lane the bits the specialised (or general)
            path gives on that lane's tiles alone. A tensor argument arrives as the sequence of
            the lanes' tensors (`ops.site.pieces` views them as runs that stack); an op with a tensor
            result (`tile.store`) is called without `dst` and returns that sequence. An op without
            a batch form runs lane by lane.
        attrs: keyword attributes (compile-time constants) and their defaults, in printing order.
        optional: trailing `params` that a call may omit (the call then has fewer operands).
        reads / writes: indices of the arguments the op reads / writes (SPEC §3).
        traits: properties passes query instead of names: "elementwise" (positionwise, and the
            operands share the result dtype: lowering casts tensor operands to it), "reduction", "memory",
            "creation", "cube" (runs on AIC), "vector" (runs on AIV), "orchestration" (allowed in
            an Orchestration function), "view" (result aliases an argument), "system", "dump" (a DFX directive:
            the simulator tags its tensor argument for `enable_dump_args`),
            "positionwise" (each result element depends only on the operand elements at its own
            position, without the shared-dtype rule of "elementwise": casts, compares, selects).
        tile_op: for a tensor op, the tile op ConvertTensorToTileOps rewrites it to.
        lowering: how ConvertTensorToTileOps lowers a tensor op that is not a one-to-one rewrite
            to `tile_op` (empty for those that are): "region" — a view of DDR, loaded when a
            consumer first needs it (`tensor.slice`); "store" — an in-place write of a DDR tensor,
            becoming `tile.store` of the value (`tensor.assemble`); "zero_fill" — a new tensor,
            becoming a zero-filled on-chip tile (`tensor.create`; the host zero-fills tensors);
            "shape" — a dimension query, becoming the dimension itself (`tensor.dim`).
        operand_spaces: required memory space per tile argument index (InferTileMemorySpace).
        scratch: indices of scratch-tile arguments shaped like argument 0 (reduction `tmp_tile`);
            ConvertTensorToTileOps allocates them.
        valid_args: indices of tile arguments whose valid region (`TileView.valid_shape`) the
            compute function needs; the simulator passes them as `valid=(shape | None, ...)`
            (a tuple of ints per argument, None for a fully valid tile).
        inplace: indices of the tile operands the result may be written over (same buffer) when
            they have the result's shape and dtype: the op reads each element of such an operand
            only to produce the result element at the same position (or accumulates into it:
            matmul_acc's `acc`). None: derived — the read operands of a tile op with the
            "elementwise" or "positionwise" trait that writes no argument; `inplace_args` gives
            the effective tuple. Memory planning uses it to compute carried values in place.
        scalar_range: for an operand-less op with a scalar result whose value always lies in a
            fixed range (`tile.get_subblock_idx`: 0 or 1): (lowest, highest). The simulator bounds
            offsets computed from it before a task runs (`runtime/sim/access.py`).
        ddr_region: for an op that moves one box of a DDR tensor (`tile.load`, `tile.store`):
            (index of the tensor argument, index of the offsets argument, index of the box-shape
            argument — a list of sizes, or a tile whose shape is the box). The simulator reads it
            to know which part of a task's tensor arguments a kernel touches before it runs.
        regions: for an op whose tensor arguments are boxes named otherwise than by `offsets` /
            `shapes` (the distributed transfers of SPEC §8): {tensor argument index: (index of its
            offsets argument, or None for zeros; its box — the index of a list of sizes or of a
            tensor / tile whose shape it is, "one" for a single element, None for the whole
            tensor)}. PTO codegen reads it for the argument's `pto.partition_view`; an index past
            the call's operands (an omitted optional list) means zeros / the whole tensor.
        on_chip: for a tensor op that runs as it is on DDR tensors: how it is lowered when some of
            its operands live on chip (`OnChip`); None otherwise.
        pto: PTO MLIR instruction name (`pto.tadd`), None for tensor-level ops (they lower
            through `tile_op`).
        host: C++ form of the op in host orchestration code, a `str.format` template over the
            operand names and attribute names (`"{x}.shape({axis})"`); empty for the generic
            `<namespace>_<op>(operands..., attrs...)` call of the runtime API.
        cost: work description for the cycle model (`pypto.ops.cost.Cost`).
        family: catalog section the op belongs to (the reference page groups by it).
        dtypes: human-readable accepted element types (the rules enforce them).
        doc: one-paragraph reference text (the operator reference page is generated from it).
        quiet_attrs: options printed (in DSL text and host code) only when they differ from their
            default, so adding one (`high_precision=`, `pad_value=`; SPEC §13) leaves existing
            programs' text unchanged; parsing fills the default back in.
    """

    name: str
    params: tuple[str, ...]
    infer: Callable[[list[Expr], dict[str, Any]], Type]
    compute: Callable[..., Any] | None
    attrs: dict[str, Any] = field(default_factory=dict)
    compute_into: Callable[..., Any] | None = None
    specialize: Callable[[Any], Callable[..., Any] | None] | None = None
    batch: Callable[[Any], Callable[..., Any] | None] | None = None
    optional: tuple[str, ...] = ()
    reads: tuple[int, ...] = ()
    writes: tuple[int, ...] = ()
    traits: frozenset[str] = frozenset()
    tile_op: str | None = None
    lowering: str = ""
    operand_spaces: dict[int, tuple[MemorySpace, ...]] = field(default_factory=dict)
    scratch: tuple[int, ...] = ()
    valid_args: tuple[int, ...] = ()
    inplace: tuple[int, ...] | None = None
    scalar_range: tuple[int, int] | None = None
    ddr_region: tuple[int, int, int] | None = None
    regions: dict[int, tuple[int | None, int | str | None]] = field(default_factory=dict)
    on_chip: OnChip | None = None
    pto: str | None = None
    host: str = ""
    cost: Cost | None = None
    family: str = ""
    dtypes: str = ""
    doc: str = ""
    quiet_attrs: frozenset[str] = frozenset()

    @property
    def namespace(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def short_name(self) -> str:
        return self.name.split(".", 1)[1]

    @property
    def python_name(self) -> str:
        """`tile.and` -> `tile.and_` (what `pl.` is followed by in source)."""
        return python_name(self.name)

    @property
    def signature(self) -> str:
        """The call as a user writes it: `pl.tile.load(tensor, offsets, shapes, valid_shape=None, ...)`."""
        parts = [p if p not in self.optional else f"{p}=None" for p in self.params]
        parts += [f"{k}={_text(v)}" for k, v in self.attrs.items()]
        return f"{self.dsl_name}({', '.join(parts)})"

    @property
    def dsl_name(self) -> str:
        """How source code names the op: `pl.tile.load`; the distributed ops' IR names already start
        with their module (`pld.system.notify`, SPEC §8)."""
        return self.python_name if self.name.startswith("pld.") else f"pl.{self.python_name}"

    def has_trait(self, trait: str) -> bool:
        return trait in self.traits

    def shown_kwargs(self, kwargs: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, Any], ...]:
        """A call's attributes as printed: `quiet_attrs` left out while at their default."""
        if not self.quiet_attrs:
            return kwargs
        return tuple((k, v) for k, v in kwargs if k not in self.quiet_attrs or v != self.attrs.get(k))

    @property
    def inplace_args(self) -> tuple[int, ...]:
        """The operands the result may overwrite (`inplace`, or derived from the traits)."""
        if self.inplace is not None:
            return self.inplace
        if self.namespace == "tile" and not self.writes and self.traits & {"elementwise", "positionwise"}:
            return self.reads
        return ()


def _text(v: Any) -> str:
    from ..ir.printer import format_value

    return format_value(v)


_REGISTRY: dict[str, OpSpec] = {}

# Unified `pl.X` dispatch: Python name -> {(namespace, scalar_rhs): op name}; namespace is
# "tensor"/"tile" (the kind of the first argument) or "" for ops without a shaped first argument.
UNIFIED: dict[str, dict[tuple[str, bool], str]] = {}


def register(spec: OpSpec) -> OpSpec:
    """Add `spec` to the registry. Raises ValueError for a duplicate or an inconsistent spec."""
    if spec.name in _REGISTRY:
        raise ValueError(f"op {spec.name} registered twice")
    n = len(spec.params)
    if spec.optional and tuple(spec.params[n - len(spec.optional):]) != spec.optional:
        raise ValueError(f"op {spec.name}: optional params {spec.optional} must end params {spec.params}")
    for i in (*spec.reads, *spec.writes, *spec.scratch, *spec.valid_args, *spec.operand_spaces):
        if not 0 <= i < n:
            raise ValueError(f"op {spec.name}: argument index {i} out of range for params {spec.params}")
    _REGISTRY[spec.name] = spec
    return spec


def register_unified(name: str, namespace: str, scalar_rhs: bool | None, op_name: str) -> None:
    """`pl.<name>` with a first argument of `namespace` kind means `op_name`.

    `scalar_rhs` True/False registers the scalar / non-scalar second-argument form; None registers
    both (an op without a separate scalar form).
    """
    table = UNIFIED.setdefault(name, {})
    for s in ((True, False) if scalar_rhs is None else (scalar_rhs,)):
        table[(namespace, s)] = op_name


def unified_names_of(op_name: str) -> list[str]:
    """The `pl.X` names that can dispatch to `op_name` (for the reference page)."""
    return sorted(n for n, table in UNIFIED.items() if op_name in table.values())


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
