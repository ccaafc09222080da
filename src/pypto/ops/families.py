"""Factories for elementwise op families (STYLE "families come from factories").

`binary_family` registers, for one operator, `tensor.X` / `tile.X` (two shaped operands) and
optionally their scalar forms `tensor.Xs` / `tile.Xs`, plus unified `pl.X` dispatch. `unary_family`
does the same for one-operand ops. Rules:

- tensor ops broadcast NumPy-style and promote dtypes (float > int, wider > narrower, signed >
  unsigned), unless `keep_lhs` (shifts keep the lhs dtype);
- tile ops need equal shapes and equal dtypes; the result lives where the lhs lives;
- a scalar form keeps the tile's dtype; on tensors a float scalar with an integer tensor gives FP32;
- every result carries the intersection of the operands' valid regions (`pypto.ops.valid`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.dtype import FP32, promote
from ..ir.expr import Expr
from ..ir.types import ScalarType, TensorType, TileType, Type
from .cost import Cost
from .registry import OpSpec, OpTypeError, python_name, register, register_unified
from .site import KernelSite, static_dims, torch_dtype
from .typing_rules import (
    DTypeClass,
    broadcast_shapes,
    expect_dtype,
    expect_same_kind,
    expect_same_shape,
    expect_scalar,
    same_dtype,
    shaped_like,
)
from .valid import merge_valid, view_for

__all__ = ["binary_family", "unary_family", "binary_rule", "scalar_rule", "unary_rule", "VEC", "out_site"]

VEC = frozenset({"elementwise", "vector"})


def binary_rule(ns: str, dclass: DTypeClass, names: tuple[str, str] = ("lhs", "rhs"),
                keep_lhs: bool = False) -> Callable[[list[Expr], dict[str, Any]], Type]:
    """Type rule of a two-operand elementwise op in namespace `ns`."""

    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        a = expect_same_kind(ns, args, 0, names[0])
        b = expect_same_kind(ns, args, 1, names[1])
        expect_dtype(a, names[0], dclass)
        expect_dtype(b, names[1], dclass)
        if ns == "tensor":
            shape = broadcast_shapes(a.shape, b.shape)
            dt = a.dtype if keep_lhs else promote(a.dtype, b.dtype)
        else:
            expect_same_shape(a, b, *names)
            shape = a.shape
            dt = a.dtype if keep_lhs else same_dtype([a.dtype, b.dtype], f"'{names[0]}' and '{names[1]}'")
        valid = merge_valid([a, b], list(names), shape)
        return shaped_like(ns, shape, dt, a, view_for(ns, shape, valid, a.view))
    return rule


def scalar_rule(ns: str, dclass: DTypeClass, names: tuple[str, str] = ("lhs", "rhs"),
                int_scalar: bool = False) -> Callable[[list[Expr], dict[str, Any]], Type]:
    """Type rule of a shaped-operand-with-scalar op: the result keeps the operand's shape, valid
    region and (for tiles) dtype."""

    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        t = expect_same_kind(ns, args, 0, names[0])
        s = expect_scalar(args, 1, names[1])
        expect_dtype(t, names[0], dclass)
        if int_scalar and not s.dtype.is_int():
            raise OpTypeError(f"argument '{names[1]}' must be an integer scalar, got {s.dtype.name}")
        dt = t.dtype
        if ns == "tensor" and s.dtype.is_float() and not t.dtype.is_float():
            dt = FP32
        return shaped_like(ns, t.shape, dt, t, t.view if ns == "tile" else
                           view_for(ns, t.shape, merge_valid([t], [names[0]], t.shape)))
    return rule


def unary_rule(ns: str, dclass: DTypeClass, name: str = "x") -> Callable[[list[Expr], dict[str, Any]], Type]:
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        t = expect_same_kind(ns, args, 0, name)
        expect_dtype(t, name, dclass)
        if isinstance(t, TensorType):
            return TensorType(t.shape, t.dtype, view_for(ns, t.shape, merge_valid([t], [name], t.shape)))
        assert isinstance(t, TileType)
        return TileType(t.shape, t.dtype, t.memory_space, view=t.view)
    return rule


def out_site(out_form: Callable[..., Any], defaults: dict[str, Any] | None = None) -> Callable[[KernelSite], Any]:
    """`OpSpec.specialize` of a tile elementwise op whose semantics, for tile operands of the
    result's dtype and shape, is the torch function `out_form`, which also takes `out=`: at a kernel
    site where the attributes are at their `defaults`, every tile operand has the result's dtype
    and shape and either is the result's buffer or shares no byte with it, and a scalar operand
    cannot change the result dtype (an integer scalar, or a float result), the op writes the
    result's buffer directly: the same torch kernel, so the same numbers as computing a new tensor
    and copying it. Being elementwise, the same function serves as the op's `OpSpec.batch` form:
    on tiles with a leading lane axis each element is computed exactly as on one lane alone."""
    want = dict(defaults or {})

    def specialize(site: KernelSite) -> Any:
        dt = torch_dtype(site.dst)
        if dt is None or {**want, **site.attrs} != want or not site.disjoint_or_same():
            return None
        shape = static_dims(site.dst)
        for t in site.types:
            if isinstance(t, ScalarType):
                if not (dt.is_floating_point or t.dtype.is_int()):
                    return None
            elif torch_dtype(t) is not dt or static_dims(t) != shape:
                return None
        if len(site.types) == 1:
            def into1(dst: Any, a: Any) -> None:
                out_form(a, out=dst)
            return into1
        if len(site.types) != 2:
            return None

        def into(dst: Any, a: Any, b: Any) -> None:
            out_form(a, b, out=dst)
        return into
    return specialize


def binary_family(name: str, fn: Callable[..., Any], pto: str, dclass: DTypeClass, cost: Cost, *,
                  scalar: tuple[str, str] | None = None, family: str = "elementwise",
                  keep_lhs: bool = False, int_scalar: bool = False, what: str = "",
                  attrs: dict[str, Any] | None = None, out_form: Callable[..., Any] | None = None,
                  scalar_out_form: Callable[..., Any] | None = None) -> None:
    """Register tensor/tile `name` (IR names; Python spelling via `python_name`), the scalar forms
    `scalar = (scalar name, scalar pto)` if given, and the unified dispatch entries.

    `fn(a, b, **attrs)` is the torch semantics (b may be a Python number for the scalar forms);
    `what` describes the operation for the reference page ("a + b"); `attrs` are keyword
    attributes of every form with their defaults (`high_precision=False`). `out_form`: a torch
    function equal to `fn` on two tensors of one dtype that takes `out=` (`torch.add`): the
    simulator then writes the tile op's result in place (`out_site`); `scalar_out_form` the same
    for the scalar form.
    """
    what = what or name
    common = dict(reads=(0, 1), traits=VEC, cost=cost, family=family, dtypes=dclass.text,
                  attrs=dict(attrs or {}), quiet_attrs=frozenset(attrs or ()))
    register(OpSpec(f"tensor.{name}", ("lhs", "rhs"), binary_rule("tensor", dclass, keep_lhs=keep_lhs),
                    fn, tile_op=f"tile.{name}", **common,
                    doc=f"Elementwise {what} of two tensors, broadcasting NumPy-style"
                        + ("; the result keeps the lhs dtype." if keep_lhs else
                           "; dtypes promote (float > int, wider > narrower).")))
    register(OpSpec(f"tile.{name}", ("lhs", "rhs"), binary_rule("tile", dclass, keep_lhs=keep_lhs),
                    fn, pto=f"pto.{pto}", specialize=_out_site_of(out_form, attrs),
                    batch=_out_site_of(out_form, attrs), **common,
                    doc=f"Elementwise {what} of two tiles of equal shape"
                        + (" (the result keeps the lhs dtype)." if keep_lhs else " and dtype.")))
    py = _py(name)
    for ns in ("tensor", "tile"):
        register_unified(py, ns, False, f"{ns}.{name}")
    if scalar is None:
        return
    sname, spto = scalar
    register(OpSpec(f"tensor.{sname}", ("lhs", "rhs"), scalar_rule("tensor", dclass, int_scalar=int_scalar),
                    fn, tile_op=f"tile.{sname}", **common,
                    doc=f"Elementwise {what} of a tensor and a scalar `rhs`."))
    register(OpSpec(f"tile.{sname}", ("lhs", "rhs"), scalar_rule("tile", dclass, int_scalar=int_scalar),
                    fn, pto=f"pto.{spto}", specialize=_out_site_of(scalar_out_form, attrs),
                    batch=_out_site_of(scalar_out_form, attrs), **common,
                    doc=f"Elementwise {what} of a tile and a scalar `rhs`; the result keeps the tile dtype."))
    for ns in ("tensor", "tile"):
        register_unified(py, ns, True, f"{ns}.{sname}")
        register_unified(sname, ns, None, f"{ns}.{sname}")


def _out_site_of(out_form: Callable[..., Any] | None, attrs: dict[str, Any] | None) -> Any:
    return out_site(out_form, attrs) if out_form is not None else None


def unary_family(name: str, fn: Callable[..., Any], pto: str, dclass: DTypeClass, cost: Cost, *,
                 family: str = "elementwise", what: str = "", attrs: dict[str, Any] | None = None,
                 out_form: Callable[..., Any] | None = None) -> None:
    """Register tensor/tile `name(x)` with torch semantics `fn(x, **attrs)`; `attrs` and `out_form`
    as in `binary_family` (quiet: printed only when not at their default)."""
    what = what or name
    common = dict(reads=(0,), traits=VEC, cost=cost, family=family, dtypes=dclass.text,
                  attrs=dict(attrs or {}), quiet_attrs=frozenset(attrs or ()))
    register(OpSpec(f"tensor.{name}", ("x",), unary_rule("tensor", dclass), fn, tile_op=f"tile.{name}",
                    **common, doc=f"Elementwise {what} of a tensor."))
    register(OpSpec(f"tile.{name}", ("x",), unary_rule("tile", dclass), fn, pto=f"pto.{pto}",
                    specialize=_out_site_of(out_form, attrs), batch=_out_site_of(out_form, attrs), **common,
                    doc=f"Elementwise {what} of a tile."))
    for ns in ("tensor", "tile"):
        register_unified(_py(name), ns, None, f"{ns}.{name}")


def _py(name: str) -> str:
    """Python spelling of an op leaf name (`and` -> `and_`)."""
    return python_name(f"_.{name}")[2:]
