"""IR expressions (SPEC §4). Frozen, slotted; identity of a Var is object identity.

`BinaryExpr.op` / `UnaryExpr.op` are names from `BINARY_OPS` / `UNARY_OPS` (data, not classes).
`Call.op` is either a registered op name (`"tile.add"`, see `pypto.ops`) or a `GlobalVar` naming a
function of the same Program. Call attributes (`kwargs`) are plain Python values: ints, floats,
bools, strings, DataTypes, enums, or tuples of those. `Call.deps` holds the explicit task
dependencies of a call of a program function (`self.k(..., deps=[x, y])`, SPEC §1): tensor-typed
expressions (Vars once the parser or FlattenCallExpr has run) that are *uses* of those values.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core.dtype import BOOL, FP32, INDEX, DataType
from ..core.span import Span
from .types import ScalarType, TupleType, Type

__all__ = [
    "Expr", "Var", "IterArg", "ConstInt", "ConstFloat", "ConstBool", "BinaryExpr", "UnaryExpr",
    "Call", "GlobalVar", "MakeTuple", "TupleGetItem", "BINARY_OPS", "UNARY_OPS", "COMPARE_OPS",
]

_NO_SPAN = Span.unknown()

# Binary scalar operators: name -> Python spelling used by the printer and parser.
BINARY_OPS: dict[str, str] = {
    "add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%", "truediv": "/",
    "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
    "and": "and", "or": "or", "bit_and": "&", "bit_or": "|", "bit_xor": "^", "shl": "<<", "shr": ">>",
    "min": "min", "max": "max",
}
COMPARE_OPS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
LOGICAL_OPS = frozenset({"and", "or"})
UNARY_OPS: dict[str, str] = {"neg": "-", "not": "not ", "bit_not": "~", "abs": "abs"}


@dataclass(frozen=True, slots=True, eq=False)
class Expr:
    """Base of all expressions; `type` is the inferred IR type."""

    span: Span = field(default=_NO_SPAN, kw_only=True, compare=False, repr=False)

    @property
    def type(self) -> Type:  # overridden by subclasses that store it
        raise NotImplementedError(type(self).__name__)


@dataclass(frozen=True, slots=True, eq=False)
class Var(Expr):
    """A named value. `name` is only a hint; two Vars are the same variable iff they are the same object."""

    name: str
    var_type: Type

    @property
    def type(self) -> Type:
        return self.var_type

    def __repr__(self) -> str:
        return f"Var({self.name})"


@dataclass(frozen=True, slots=True, eq=False)
class IterArg(Var):
    """A loop-carried value: bound to `init` on entry, to the yielded value on each next iteration."""

    init: Expr | None = None

    def __repr__(self) -> str:
        return f"IterArg({self.name})"


@dataclass(frozen=True, slots=True, eq=False)
class ConstInt(Expr):
    value: int
    dtype: DataType = INDEX

    @property
    def type(self) -> Type:
        return ScalarType(self.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class ConstFloat(Expr):
    value: float
    dtype: DataType = FP32

    @property
    def type(self) -> Type:
        return ScalarType(self.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class ConstBool(Expr):
    value: bool

    @property
    def type(self) -> Type:
        return ScalarType(BOOL)


@dataclass(frozen=True, slots=True, eq=False)
class BinaryExpr(Expr):
    """`lhs <op> rhs` on scalars; `dtype` is the result dtype (BOOL for comparisons)."""

    op: str
    lhs: Expr
    rhs: Expr
    dtype: DataType

    @property
    def type(self) -> Type:
        return ScalarType(self.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class UnaryExpr(Expr):
    """`<op> operand` on a scalar, or a scalar cast when `op == "cast"`."""

    op: str
    operand: Expr
    dtype: DataType

    @property
    def type(self) -> Type:
        return ScalarType(self.dtype)


@dataclass(frozen=True, slots=True, eq=False)
class GlobalVar(Expr):
    """Reference to a function of the enclosing Program, by name."""

    name: str

    @property
    def type(self) -> Type:
        return TupleType(())


@dataclass(frozen=True, slots=True, eq=False)
class Call(Expr):
    """A call of a registered op (`op` is its name) or of a program function (`op` is a GlobalVar).

    `deps` (calls of program functions only; empty otherwise): tensors whose earlier writers the
    task(s) of this call wait for, on top of the dependencies derived from overlapping regions.
    Each is a tensor-typed Expr the call *uses*; visitors, mutators, the printer, structural
    equality and the serializer all treat it like `args`.
    """

    op: str | GlobalVar
    args: tuple[Expr, ...]
    kwargs: tuple[tuple[str, Any], ...]
    result_type: Type
    deps: tuple[Expr, ...] = ()

    @property
    def type(self) -> Type:
        return self.result_type

    @property
    def op_name(self) -> str:
        return self.op if isinstance(self.op, str) else self.op.name

    def attr(self, name: str, default: Any = None) -> Any:
        for k, v in self.kwargs:
            if k == name:
                return v
        return default

    @property
    def attrs(self) -> dict[str, Any]:
        return dict(self.kwargs)


@dataclass(frozen=True, slots=True, eq=False)
class MakeTuple(Expr):
    """A tuple of expressions: offsets/shapes lists of ops, multiple returns."""

    elements: tuple[Expr, ...]

    @property
    def type(self) -> Type:
        return TupleType(tuple(e.type for e in self.elements))


@dataclass(frozen=True, slots=True, eq=False)
class TupleGetItem(Expr):
    tuple_value: Expr
    index: int

    @property
    def type(self) -> Type:
        t = self.tuple_value.type
        assert isinstance(t, TupleType)
        return t.types[self.index]
