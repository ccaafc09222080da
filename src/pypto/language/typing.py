"""Type annotations of the DSL (SPEC §2.2; Language Guide "Type System").

`pl.Tensor[[64, 128], pl.FP32]`, `pl.Tile[[64, 64], pl.FP32, pl.Mem.Vec]`, `pl.Scalar[pl.INDEX]`,
`pl.Out[...]` / `pl.InOut[...]` are evaluated by Python when a decorated function is defined, so
they are real objects: `Annotation`s that `to_ir_type()` turns into IR types. Bare `pl.Tensor`
(no subscript) is allowed under `@pl.jit`, where the shape and dtype come from the call's
arguments.
"""

from __future__ import annotations

import keyword
import sys
import warnings
from dataclasses import dataclass
from typing import Any

from ..core.dtype import INDEX, TASK_ID, DataType
from ..core.enums import MemorySpace, PadValue, ParamDirection, TensorLayout
from ..core.errors import ArgumentValueError
from ..core.span import Span
from ..ir.expr import ConstInt, Expr, Var
from ..ir.types import (
    ArrayType,
    MemRef,
    ScalarType,
    TensorType,
    TensorView,
    TileType,
    TileView,
    TupleType,
    Type,
)

__all__ = [
    "TaskId",
    "Tensor", "Tile", "Scalar", "Array", "Out", "InOut", "DynVar", "dynamic", "TensorAnnotation",
    "TileAnnotation", "ScalarAnnotation", "DirectionAnnotation", "TensorViewSpec", "TileViewSpec",
    "MemRefSpec", "AnnotationError", "InvalidAnnotation", "to_ir_type", "to_dim", "RUNTIME", "Tuple",
]


class AnnotationError(Exception):
    """A malformed annotation; the parser re-raises it as ParserTypeError at the annotation."""


class Annotation:
    """Base of annotation objects."""


@dataclass(frozen=True)
class InvalidAnnotation(Annotation):
    """A malformed `pl.Tensor[...]` / `pl.Tile[...]` / `pl.Scalar[...]` subscript.

    Python evaluates parameter annotations when `def` runs, before a decorator can see the source,
    so raising there would leave the mistake without a file and line. The subscript returns this
    record instead; the parser raises `message` as a ParserTypeError at the annotation, in both
    annotation modes (evaluated and `from __future__ import annotations`)."""

    message: str

    def to_ir(self) -> Type:
        raise AnnotationError(self.message)


class DynVar:
    """A symbolic dimension from `pl.dynamic("M")`; the same object gives the same IR Var."""

    __slots__ = ("name", "var")

    def __init__(self, name: str) -> None:
        self.name = name
        self.var = Var(name, ScalarType(INDEX))

    def __repr__(self) -> str:
        return f'pl.dynamic("{self.name}")'


def dynamic(name: str) -> DynVar:
    """A dynamic dimension named `name` (Language Guide "Dynamic Shapes").

    Printed IR declares it as `name = pl.dynamic("name")` and uses `name` in shapes, so `name` must
    be a Python identifier other than a keyword and `pl`; ArgumentValueError (at the caller's
    line) otherwise.
    """
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name == "pl":
        f = sys._getframe(1)
        raise ArgumentValueError(f"pl.dynamic: the name must be a Python identifier (not a keyword or 'pl'), "
                                 f"got {name!r}", Span(f.f_code.co_filename, f.f_lineno, 1))
    return DynVar(name)


def to_dim(d: Any, allow_zero: bool = False) -> Expr:
    """A shape entry as an IR dimension: a positive int (a non-negative one for valid extents,
    `allow_zero`), a `pl.dynamic` variable or an expression. Raises AnnotationError otherwise."""
    if isinstance(d, bool):
        raise AnnotationError(f"invalid dimension {d!r}")
    if isinstance(d, int):
        if d < 0 or (d == 0 and not allow_zero):
            raise AnnotationError(f"dimension must be {'non-negative' if allow_zero else 'positive'}, got {d}")
        return ConstInt(d, INDEX)
    if isinstance(d, DynVar):
        return d.var
    if isinstance(d, Expr):
        return d
    raise AnnotationError(f"invalid dimension {d!r}: expected an int or pl.dynamic(...)")


def _shape(s: Any, allow_zero: bool = False) -> tuple[Expr, ...]:
    if not isinstance(s, (list, tuple)):
        raise AnnotationError(f"shape must be a list like [64, 128], got {s!r}")
    return tuple(to_dim(d, allow_zero) for d in s)


class _DeferErrors(type):
    """Metaclass of the annotation parts users construct (`pl.TensorView(...)`, `pl.TileView(...)`,
    `pl.MemRef(...)`): wrong arguments give an InvalidAnnotation (located later by the parser)
    instead of a TypeError raised while Python runs `def`."""

    user_name: str

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except TypeError as e:
            text = str(e).replace(f"{cls.__name__}.__init__()", cls.user_name)
            return InvalidAnnotation(f"{cls.user_name}(...): {text}")


@dataclass(frozen=True)
class TensorViewSpec(metaclass=_DeferErrors):
    """`pl.TensorView(stride=[...], layout=pl.TensorLayout.DN, valid_shape=None, pad=...)`."""

    user_name = "pl.TensorView"
    stride: Any = None
    layout: TensorLayout = TensorLayout.ND
    valid_shape: Any = None
    pad: PadValue = PadValue.null

    def to_ir(self) -> TensorView:
        return TensorView(_shape(self.stride) if self.stride is not None else None, self.layout,
                          _shape(self.valid_shape, allow_zero=True) if self.valid_shape is not None else None, self.pad)


@dataclass(frozen=True)
class TileViewSpec(metaclass=_DeferErrors):
    """`pl.TileView(valid_shape=[...], layout=..., pad=...)`."""

    user_name = "pl.TileView"
    valid_shape: Any = None
    layout: TensorLayout = TensorLayout.ND
    pad: PadValue = PadValue.null

    def to_ir(self) -> TileView:
        return TileView(_shape(self.valid_shape, allow_zero=True) if self.valid_shape is not None else None,
                        self.layout, self.pad)


@dataclass(frozen=True)
class MemRefSpec(metaclass=_DeferErrors):
    """`pl.MemRef(pl.Mem.Vec, id=0, size=16384, addr=0)` in printed IR after memory planning."""

    user_name = "pl.MemRef"
    memory_space: MemorySpace
    id: int
    size: int
    addr: int = -1

    def to_ir(self) -> MemRef:
        return MemRef(self.memory_space, self.id, self.size, self.addr)


def _checked(parts: tuple) -> tuple:
    """`parts` of an annotation; raises the AnnotationError of the first InvalidAnnotation among them."""
    for e in parts:
        if isinstance(e, InvalidAnnotation):
            e.to_ir()
    return parts


@dataclass(frozen=True)
class TensorAnnotation(Annotation):
    shape: Any = None  # None for bare `pl.Tensor`
    dtype: DataType | None = None
    extra: tuple = ()

    def to_ir(self) -> TensorType:
        if self.shape is None or self.dtype is None:
            raise AnnotationError("bare pl.Tensor needs a shape and dtype: write "
                                  "pl.Tensor[[shape], dtype] (bare pl.Tensor is only allowed under @pl.jit)")
        view = None
        for e in _checked(self.extra):
            if e is TensorLayout.NZ:
                raise AnnotationError("pl.NZ is a tile-only layout; it cannot annotate a Tensor "
                                      "(use pl.Tile[..., pl.NZ])")
            if e is TensorLayout.DN:
                warnings.warn("pl.Tensor[..., pl.DN] is deprecated: write the runtime row-major shape "
                              "without a layout marker and pass b_trans=True / a_trans=True to "
                              "pl.matmul, or use pl.TensorView(stride=[...], layout=pl.TensorLayout.DN)",
                              DeprecationWarning, stacklevel=2)
                view = TensorView(None, TensorLayout.DN)
            elif e is TensorLayout.ND:
                view = None
            elif isinstance(e, TensorViewSpec):
                view = e.to_ir()
            else:
                raise AnnotationError(f"unexpected tensor annotation element {e!r}")
        return TensorType(_shape(self.shape), self.dtype, view)


@dataclass(frozen=True)
class TileAnnotation(Annotation):
    shape: Any
    dtype: DataType
    extra: tuple = ()

    def to_ir(self) -> TileType:
        space = memref = view = None
        for e in _checked(self.extra):
            if isinstance(e, MemorySpace):
                space = e
            elif isinstance(e, MemRefSpec):
                memref = e.to_ir()
                space = memref.memory_space
            elif isinstance(e, TileViewSpec):
                view = e.to_ir()
            elif isinstance(e, TensorLayout):
                view = TileView(None, e)
            else:
                raise AnnotationError(f"unexpected tile annotation element {e!r}")
        return TileType(_shape(self.shape), self.dtype, space, memref, view)


@dataclass(frozen=True)
class ScalarAnnotation(Annotation):
    dtype: DataType

    def to_ir(self) -> ScalarType:
        return ScalarType(self.dtype)


@dataclass(frozen=True)
class DirectionAnnotation(Annotation):
    direction: ParamDirection
    inner: Any


def _dtype_problem(x: Any, where: str) -> str | None:
    """Why `x` is not a data type (None if it is one); a dtype written as text gets its pl. name."""
    if isinstance(x, DataType):
        return None
    from ..core.dtype import dtype_from_name, dtype_from_torch

    hint = ""
    if isinstance(x, str):
        try:
            hint = f": write pl.{dtype_from_name(x).name} instead of the string {x!r}"
        except KeyError:
            pass
    elif type(x).__name__ == "dtype" and type(x).__module__ == "torch":
        try:
            hint = f": write pl.{dtype_from_torch(x).name} (a PyPTO data type) instead of {x}"
        except TypeError:
            pass
    return f"{where} expects a data type such as pl.FP32, got {x!r}{hint}"


_SCALARS = ("pl.Scalar", "pl.RUNTIME")  # annotations whose item is just a dtype


def _subscript(what: str, usage: str, item: Any, make: Any) -> Annotation:
    """`what[item]` as an annotation, or an InvalidAnnotation saying what is wrong with it."""
    if what not in _SCALARS and (not isinstance(item, tuple) or len(item) < 2):
        return InvalidAnnotation(f"{what} takes {usage}, got {what}[{_text(item)}]")
    dtype = item if what in _SCALARS else item[1]
    problem = _dtype_problem(dtype, what)
    return InvalidAnnotation(problem) if problem else make(item)


def _text(item: Any) -> str:
    return ", ".join(map(repr, item)) if isinstance(item, tuple) else repr(item)


class _TensorMeta(type):
    def __getitem__(cls, item: Any) -> Annotation:
        return _subscript("pl.Tensor", "[shape, dtype] and an optional layout/view", item,
                          lambda it: TensorAnnotation(it[0], it[1], tuple(it[2:])))


class Tensor(metaclass=_TensorMeta):
    """`pl.Tensor[[shape], dtype]`: a DDR tensor (bare `pl.Tensor` under `@pl.jit`)."""


class _TileMeta(type):
    def __getitem__(cls, item: Any) -> Annotation:
        return _subscript("pl.Tile", "[shape, dtype] and an optional memory space/layout/view", item,
                          lambda it: TileAnnotation(it[0], it[1], tuple(it[2:])))


class Tile(metaclass=_TileMeta):
    """`pl.Tile[[shape], dtype, ...]`: an on-chip buffer."""


class _ScalarMeta(type):
    def __getitem__(cls, item: Any) -> Annotation:
        return _subscript("pl.Scalar", "one dtype", item, ScalarAnnotation)

    def __call__(cls, dtype: Any) -> Annotation:  # type: ignore[override]
        return _subscript("pl.Scalar", "one dtype", dtype, ScalarAnnotation)


class Scalar(metaclass=_ScalarMeta):
    """`pl.Scalar[dtype]`: one value. `pl.Scalar(dtype)` is upstream's older spelling (SPEC §13)."""


class _RuntimeMeta(type):
    def __getitem__(cls, item: Any) -> Annotation:
        return _subscript("pl.RUNTIME", "one dtype", item, ScalarAnnotation)

    def __repr__(cls) -> str:
        return "pl.RUNTIME"


class RUNTIME(metaclass=_RuntimeMeta):
    """`pl.RUNTIME` (SPEC §13): a scalar parameter whose value is supplied at dispatch and never
    specialised into the program. As a bare annotation of a `@pl.jit` parameter its dtype comes from
    the call's Python value (bool → BOOL, int → INT64, float → FP32) and belongs to the cache key;
    `pl.RUNTIME[dtype]` fixes the dtype (the same as `pl.Scalar[dtype]`: every scalar parameter here
    is a run-time value). Outside `@pl.jit` a bare `pl.RUNTIME` needs a dtype."""


@dataclass(frozen=True)
class ArrayAnnotation(Annotation):
    extent: Any
    dtype: DataType

    def to_ir(self) -> ArrayType:
        from ..ops.array import check_array

        try:
            check_array(self.extent, self.dtype)
        except ValueError as e:
            raise AnnotationError(str(e)) from None
        return ArrayType(self.extent, self.dtype)


class _ArrayMeta(type):
    def __getitem__(cls, item: Any) -> Annotation:
        if isinstance(item, tuple) and len(item) > 2:
            return InvalidAnnotation(f"pl.Array takes [extent, dtype], e.g. pl.Array[8, pl.INT32], got "
                                     f"pl.Array[{_text(item)}]")
        return _subscript("pl.Array", "[extent, dtype], e.g. pl.Array[8, pl.INT32]", item,
                          lambda it: ArrayAnnotation(it[0], it[1]))


class Array(metaclass=_ArrayMeta):
    """`pl.Array[extent, dtype]` (SPEC §13): a small on-core integer array (`pl.array.create`,
    `pl.array.get_element`, `pl.array.update_element`; `pypto.ops.array`)."""


class _TupleMeta(type):
    def __getitem__(cls, item: Any) -> tuple:
        return tuple(item) if isinstance(item, tuple) else (item,)


class Tuple(metaclass=_TupleMeta):
    """`pl.Tuple[T1, T2, ...]` (SPEC §13): a return annotation of several values, the same as the
    Python tuple `tuple[T1, T2, ...]`."""


# `pl.TaskId`: the id of a submitted task, `pl.Scalar[pl.TASK_ID]` (SPEC §13).
TaskId = ScalarAnnotation(TASK_ID)


class _DirMeta(type):
    _direction: ParamDirection

    def __getitem__(cls, item: Any) -> DirectionAnnotation:
        return DirectionAnnotation(cls._direction, item)


class Out(metaclass=_DirMeta):
    """`pl.Out[T]`: a write-only output parameter."""

    _direction = ParamDirection.Out


class InOut(metaclass=_DirMeta):
    """`pl.InOut[T]`: a read-write parameter."""

    _direction = ParamDirection.InOut


def to_ir_type(ann: Any) -> Type:
    """Convert an evaluated annotation to an IR type. Raises AnnotationError."""
    if ann is Tensor:
        ann = TensorAnnotation()
    if isinstance(ann, Annotation) and hasattr(ann, "to_ir"):  # pl.Tensor[...], pld.WindowBuffer, ...
        return ann.to_ir()
    if isinstance(ann, DataType):
        return ScalarType(ann)
    if isinstance(ann, tuple):
        return TupleType(tuple(to_ir_type(a) for a in ann))
    if isinstance(ann, DirectionAnnotation):
        raise AnnotationError("pl.Out / pl.InOut may only annotate function parameters")
    if ann is RUNTIME:
        raise AnnotationError("a bare pl.RUNTIME takes its dtype from a @pl.jit call's value; "
                              "elsewhere write pl.RUNTIME[dtype] (e.g. pl.RUNTIME[pl.INT64])")
    raise AnnotationError(f"unsupported type annotation {ann!r}")
