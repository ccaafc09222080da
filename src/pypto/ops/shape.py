"""Shape and view ops (SPEC §3 "Shape/view").

- `reshape(x, shape)` / `view(x, shape)`: the same elements in row-major order under a new shape
  of equal element count (`view` is the zero-copy form: the data must be contiguous).
- `transpose(x, axis1, axis2)`: swap two axes (tiles are 2-D); `transpose_view(x)`: the zero-copy
  transposed view of a 2-D tile/tensor (its layout flips between ND and DN).
- `slice(src, shape, offset, valid_shape=None, pad_value=null)`: the block of `shape` at `offset` (a view);
  a tensor slice with a `pad_value` reads as the pad value outside `valid_shape` (SPEC §13);
  `assemble(target, src, offset)`: `src` written into `target` at `offset` — in place for a DDR
  tensor (returns `target`), a new value for a tile.
- `concat(lhs, rhs, axis=-1)`: join along `axis`; `extract(src, offset, shape, target_memory=None)`:
  copy a block of a tile into a new tile, optionally in another memory (Mat -> Left/Right, ...).
- `set_validshape(x, valid_shape)`: change the valid region (metadata only);
  `fillpad(x, pad_value=zero)`: fill everything outside the valid region with a PadValue
  (zero, max = +inf / largest integer, min = -inf / smallest integer); the result is fully valid.

Ops that mix element positions (reshape, view, concat) reject a partial input: pad it first.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.dtype import INDEX, DataType
from ..core.enums import PadValue, TensorLayout
from ..ir.expr import ConstInt, Expr
from ..ir.types import TensorType, TensorView, TileType, TileView, Type
from .cost import free, mte, vector
from .memory import check_in_bounds, check_region, region
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import (
    ANY,
    ON_CHIP,
    attr_dtype,
    attr_int,
    attr_space,
    const_dims,
    dims_equal,
    expect_dtype,
    expect_same_kind,
    expect_shaped,
    expect_tile,
    int_list,
    rank2,
    same_dtype,
    shape_str,
    shaped_like,
    static_ints,
)
from .valid import (
    check_valid_shape,
    effective_shape,
    require_full,
    slice_valid,
    transpose_valid,
    view_for,
)

__all__ = ["pad_scalar"]


def _shape_arg(ns: str, args: list[Expr], i: int, name: str) -> tuple[Expr, ...]:
    return static_ints(args, i, name) if ns == "tile" else int_list(args, i, name)


def _count(shape: tuple[Expr, ...]) -> int | None:
    n = 1
    for d in const_dims(shape):
        if d is None:
            return None
        n *= d
    return n


def _reshape_rule(ns: str, what: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x = expect_same_kind(ns, args, 0, "x")
        shape = _shape_arg(ns, args, 1, "shape")
        a, b = _count(x.shape), _count(shape)
        if a is not None and b is not None and a != b:
            raise OpTypeError(f"cannot {what} shape {shape_str(x.shape)} ({a} elements) to "
                              f"{shape_str(shape)} ({b} elements)")
        require_full(x, "x", what)
        return shaped_like(ns, shape, x.dtype, x)
    return rule


def _reshape(x: Any, shape: tuple) -> Any:
    """The same elements under `shape`, as a view of `x` (its writes and later writes to `x` are
    shared). A tensor view whose rows are apart in memory (a column slice of a wider tensor) has no
    such view: copying it would take its contents at this moment, before the tasks writing it ran.

    Raises:
        ValueError: `x` cannot be viewed with `shape`.
    """
    try:
        return x.view(shape)
    except RuntimeError:
        raise ValueError(f"cannot reshape a view of shape {list(x.shape)} with strides {list(x.stride())} to "
                         f"{list(shape)} without copying it (its rows are not adjacent in memory, e.g. a "
                         f"column slice of a wider tensor): reshape the whole tensor and slice the result, "
                         f"or copy the slice into a tensor of its own with a kernel first") from None


def _reinterpret_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x = expect_same_kind(ns, args, 0, "x")
        dt = attr_dtype(attrs, "dtype")
        for d, what in ((x.dtype, "x"), (dt, "dtype")):
            if d.storage_bits % 8:   # BOOL is stored one byte per element, 4-bit types packed
                raise OpTypeError(f"reinterpret_view needs byte-sized element types; {what} is "
                                  f"{d.name} ({d.storage_bits} bits in memory)")
        require_full(x, "x", "reinterpret_view")
        *lead, last = x.shape
        n = getattr(last, "value", None)
        old, new = x.dtype.storage_bytes(1), dt.storage_bytes(1)
        if not isinstance(n, int) or (n * old) % new:
            raise OpTypeError(f"the last dimension of {shape_str(x.shape)} {x.dtype.name} "
                              f"({n if isinstance(n, int) else '?'} x {old} bytes) is not a whole number "
                              f"of {dt.name} elements ({new} bytes)")
        return shaped_like(ns, (*lead, ConstInt(n * old // new, INDEX)), dt, x)
    return rule


def _reinterpret(x: Any, dtype: DataType = None) -> Any:
    return x.view(dtype.to_torch())


def _axes(n: int, attrs: dict[str, Any]) -> tuple[int, int]:
    a1 = attr_int(attrs, "axis1", -n, n - 1) % n
    a2 = attr_int(attrs, "axis2", -n, n - 1) % n
    return a1, a2


def _transpose_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x = expect_same_kind(ns, args, 0, "x")
        if ns == "tile" and len(x.shape) > 2:
            block = shape_str(tuple(x.shape[-2:]))
            lead = ", ".join([*(["b:b+1"] * (len(x.shape) - 2)), ":", ":"])
            raise OpTypeError(
                f"argument 'x' must be 2-D, got shape {shape_str(x.shape)}: the cores transpose 2-D tiles "
                f"only; transpose each {block} block instead, e.g. in a loop over the leading "
                f"dimension: pl.transpose(pl.reshape(x[{lead}], {block}), 0, 1)")
        if ns == "tile":
            rank2(x, "x")
        a1, a2 = _axes(len(x.shape), attrs)
        shape = list(x.shape)
        shape[a1], shape[a2] = shape[a2], shape[a1]
        return shaped_like(ns, tuple(shape), x.dtype, x, view_for(ns, tuple(shape), transpose_valid(x, a1, a2)))
    return rule


def _transpose(x: Any, axis1: int = 0, axis2: int = 1) -> Any:
    return x.transpose(axis1, axis2).contiguous()


def _transpose_view_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x = expect_same_kind(ns, args, 0, "x")
        rank2(x, "x")
        shape = (x.shape[1], x.shape[0])
        valid = transpose_valid(x, 0, 1)
        old = x.view.layout if x.view is not None else TensorLayout.ND
        layout = TensorLayout.ND if old is TensorLayout.DN else TensorLayout.DN
        if ns == "tensor":
            return TensorType(shape, x.dtype, TensorView(layout=layout, valid_shape=valid))
        pad = x.view.pad if isinstance(x.view, TileView) else PadValue.null
        return TileType(shape, x.dtype, x.memory_space, view=TileView(valid, layout, pad))  # type: ignore[union-attr]
    return rule


def _slice_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x = expect_same_kind(ns, args, 0, "src")
        shape, offs = _shape_arg(ns, args, 1, "shape"), int_list(args, 2, "offset")
        given = int_list(args, 3, "valid_shape") if len(args) > 3 else None
        if given is not None:
            check_valid_shape(given, shape, "valid_shape")
        check_in_bounds(x.shape, offs, given if given is not None else shape, ns)
        pad = attrs.get("pad_value", PadValue.null)
        if not isinstance(pad, PadValue):
            raise OpTypeError(f"attribute 'pad_value' must be a pl.PadValue, got {pad!r}")
        if pad is not PadValue.null:
            if ns == "tile":
                raise OpTypeError("pad_value applies to tensor-level slices (a DDR region loaded with "
                                  "padding); for a tile slice, use pl.tile.fillpad on it")
            return TensorType(shape, x.dtype)  # the padding makes every element defined
        valid = slice_valid(x, shape, offs, given)
        return shaped_like(ns, shape, x.dtype, x, view_for(ns, shape, valid, x.view if ns == "tile" else None))
    return rule


def _slice(x: Any, shape: tuple, offset: tuple, valid_shape: tuple | None = None,
           pad_value: PadValue = PadValue.null) -> Any:
    if valid_shape is None and pad_value is PadValue.null and len(offset) == 2 == len(shape):
        (o0, o1), (n0, n1), sh = offset, shape, x.shape   # the usual 2-D box, checked inline
        if len(sh) == 2 and 0 <= o0 <= sh[0] - n0 and 0 <= o1 <= sh[1] - n1:
            s0, s1 = x.stride()     # the view x[o0:o0 + n0, o1:o1 + n1], made without indexing
            # (torch.as_strided: the same op as the method, called a little faster)
            return torch.as_strided(x, (n0, n1), (s0, s1), x.storage_offset() + o0 * s0 + o1 * s1)
    check_region("slice", x.shape, offset, valid_shape if valid_shape is not None else shape)
    view = x[region(offset, shape)]
    if pad_value is PadValue.null:
        return view
    vs = tuple(valid_shape) if valid_shape is not None else tuple(view.shape)
    return _fillpad(view, pad_value, (vs,))


def _assemble_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        target = expect_same_kind(ns, args, 0, "target")
        src = expect_tile(args, 1, "src") if ns == "tile" else expect_shaped(args, 1, "src")
        offs = int_list(args, 2, "offset")
        check_in_bounds(target.shape, offs, effective_shape(src), ns)
        if src.dtype is not target.dtype:
            raise OpTypeError(_assemble_dtype_message(args[0], src.dtype, target.dtype))
        return target
    return rule


def _assemble_dtype_message(target: Expr, src: DataType, dst: DataType) -> str:
    """Names the target (`c` of `c[:] = value` when it is a named variable) and the cast to write."""
    name = getattr(target, "name", None)
    what = f"'{name}'" if isinstance(name, str) and name else "the target"
    return (f"cannot write a value of dtype {src.name} into {what}, whose dtype is {dst.name}; cast it "
            f"first, e.g. pl.cast(value, pl.{dst.name})")


def _assemble(target: Any, src: Any, offset: tuple, valid: tuple | None = None) -> Any:
    """DDR tensors are updated in place (tensor.assemble writes `target`); tiles are values."""
    vs = tuple(valid[0]) if valid and valid[0] is not None else tuple(src.shape)
    check_region("assemble", tuple(target.shape), offset, vs)
    target[region(offset, vs)].copy_(src[tuple(slice(0, v) for v in vs)])
    return target


def _tile_assemble(target: Any, src: Any, offset: tuple, valid: tuple | None = None) -> Any:
    return _assemble(target.clone(), src, offset, valid)


def _concat_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        a = expect_same_kind(ns, args, 0, "lhs")
        b = expect_same_kind(ns, args, 1, "rhs")
        if ns == "tile":
            rank2(a, "lhs")
        if len(a.shape) != len(b.shape):
            raise OpTypeError(f"arguments 'lhs' and 'rhs' must have the same rank, got "
                              f"{shape_str(a.shape)} and {shape_str(b.shape)}")
        n = len(a.shape)
        axis = attr_int(attrs, "axis", -n, n - 1) % n
        for d, (x, y) in enumerate(zip(a.shape, b.shape)):
            if d != axis and not dims_equal(x, y):
                raise OpTypeError(f"shapes {shape_str(a.shape)} and {shape_str(b.shape)} differ outside "
                                  f"the concat axis {axis}")
        dt = same_dtype([a.dtype, b.dtype], "'lhs' and 'rhs'")
        require_full(a, "lhs", "concat")
        require_full(b, "rhs", "concat")
        x, y = const_dims((a.shape[axis], b.shape[axis]))
        if x is None or y is None:
            raise OpTypeError(f"the concat axis {axis} must be static")
        shape = list(a.shape)
        shape[axis] = ConstInt(x + y, a.shape[axis].dtype)  # type: ignore[attr-defined]
        return shaped_like(ns, tuple(shape), dt, a)
    return rule


def _concat(lhs: Any, rhs: Any, axis: int = -1) -> Any:
    return torch.cat([lhs, rhs], dim=axis)


def _extract_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    x = expect_tile(args, 0, "src")
    offs, shape = int_list(args, 1, "offset"), static_ints(args, 2, "shape")
    check_in_bounds(x.shape, offs, shape, "tile")
    space = x.memory_space if attrs.get("target_memory") is None else attr_space(attrs, ON_CHIP)
    valid = slice_valid(x, shape, offs, None)
    return TileType(shape, x.dtype, space, view=view_for("tile", shape, valid, x.view))


def _extract(src: Any, offset: tuple, shape: tuple, **_: Any) -> Any:
    check_region("extract", tuple(src.shape), offset, shape)
    return src[region(offset, shape)].clone()


def _set_valid_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x = expect_same_kind(ns, args, 0, "x")
        vs = int_list(args, 1, "valid_shape")
        check_valid_shape(vs, x.shape, "valid_shape")
        return shaped_like(ns, x.shape, x.dtype, x, view_for(ns, x.shape, vs, x.view if ns == "tile" else None))
    return rule


def _fillpad_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x = expect_same_kind(ns, args, 0, "x")
        expect_dtype(x, "x", ANY)
        pad = attrs.get("pad_value")
        if pad not in (PadValue.zero, PadValue.max, PadValue.min):
            raise OpTypeError(f"attribute 'pad_value' must be pl.PadValue.zero, max or min, got {pad!r}")
        if ns == "tensor":
            return TensorType(x.shape, x.dtype)
        layout = x.view.layout if isinstance(x.view, TileView) else TensorLayout.ND
        return TileType(x.shape, x.dtype, x.memory_space, view=TileView(None, layout, pad))  # type: ignore[union-attr]
    return rule


def pad_scalar(dtype: Any, pad: PadValue) -> Any:
    """The fill value of `pad` for torch `dtype`: 0, or the largest / smallest value (+-inf)."""
    if pad is PadValue.zero:
        return 0
    if dtype.is_floating_point:
        return float("inf") if pad is PadValue.max else float("-inf")
    info = torch.iinfo(dtype)
    return info.max if pad is PadValue.max else info.min


def _fillpad(x: Any, pad_value: PadValue = PadValue.zero, valid: tuple | None = None) -> Any:
    vs = valid[0] if valid else None
    out = x.clone()
    if vs is None:
        return out
    keep = torch.zeros(x.shape, dtype=torch.bool)
    keep[tuple(slice(0, v) for v in vs)] = True
    return out.masked_fill_(~keep, pad_scalar(x.dtype, pad_value))


def _identity(x: Any, *_: Any) -> Any:
    return x


def _transpose_last(x: Any) -> Any:
    return x.transpose(-1, -2)


def _both(name: str, params: tuple[str, ...], rule: Any, fn: Any, *, tile_pto: str | None,
          tile_traits: frozenset[str], tensor_traits: frozenset[str], cost: Any, doc: str,
          tensor_lowering: str = "", **kw: Any) -> None:
    """Register `tensor.<name>` (lowering to `tile.<name>`, or as `tensor_lowering` says) and
    `tile.<name>`, and `pl.<name>`."""
    for ns in ("tensor", "tile"):
        t = ns == "tile"
        register(OpSpec(f"{ns}.{name}", params, rule(ns), fn, traits=tile_traits if t else tensor_traits,
                        tile_op=None if t else f"tile.{name}", pto=tile_pto if t else None, cost=cost,
                        lowering="" if t else tensor_lowering, family="shape", dtypes=ANY.text, doc=doc, **kw))
        register_unified(name, ns, None, f"{ns}.{name}")


_VIEW = frozenset({"view"})
_HOST_VIEW = frozenset({"view", "orchestration"})
_VEC = frozenset({"vector"})

_both("reshape", ("x", "shape"), lambda ns: _reshape_rule(ns, "reshape"), _reshape, tile_pto="pto.treshape",
      tile_traits=_VIEW, tensor_traits=_HOST_VIEW, cost=free(), reads=(0,),
      doc="The elements of a fully valid `x` in row-major order under a new `shape` of equal size.")
_both("view", ("x", "shape"), lambda ns: _reshape_rule(ns, "view"), _reshape, tile_pto="pto.treshape",
      tile_traits=_VIEW, tensor_traits=_HOST_VIEW, cost=free(), reads=(0,),
      doc="A zero-copy reinterpretation of contiguous `x` under a new `shape` of equal size.")
_both("reinterpret_view", ("x",), _reinterpret_rule, _reinterpret, tile_pto="pto.treshape",
      tile_traits=_VIEW, tensor_traits=_HOST_VIEW, cost=free(), reads=(0,), attrs={"dtype": None},
      doc="The same bytes viewed as elements of `dtype` (SPEC §13): a fully valid `x` of byte-sized "
          "elements; the last dimension scales by the ratio of element sizes (a bit cast, no conversion).")
_both("transpose", ("x",), _transpose_rule, _transpose, tile_pto="pto.ttrans", tile_traits=_VEC,
      tensor_traits=_VEC, cost=vector(1.0), reads=(0,), attrs={"axis1": 0, "axis2": 1},
      doc="Swap axes `axis1` and `axis2` (a tile is 2-D); the valid region is transposed too.")
_both("transpose_view", ("x",), _transpose_view_rule, _transpose_last,
      tile_pto="pto.ttrans", tile_traits=_VIEW, tensor_traits=_HOST_VIEW, cost=free(), reads=(0,),
      doc="The zero-copy transposed view of a 2-D value: shape [N, M], layout flipped ND <-> DN.")
_both("slice", ("src", "shape", "offset", "valid_shape"), _slice_rule, _slice, tile_pto="pto.textract",
      tile_traits=_VIEW, tensor_traits=_HOST_VIEW, cost=free(), reads=(0,), optional=("valid_shape",),
      attrs={"pad_value": PadValue.null}, quiet_attrs=frozenset({"pad_value"}),
      tensor_lowering="region", doc="The block of `shape` at `offset` (a view); its valid region is the source's valid part "
          "inside the block, limited further by `valid_shape`. A tensor slice with `pad_value` (zero, max, "
          "min; SPEC §13) is fully defined instead: elements outside `valid_shape` read as the pad value "
          "(a DDR region loaded, then padded with `fillpad`).")
register(OpSpec("tensor.assemble", ("target", "src", "offset"), _assemble_rule("tensor"), _assemble,
                reads=(1,), writes=(0,), traits=frozenset({"memory"}), valid_args=(1,), tile_op="tile.assemble",
                lowering="store",
                cost=mte("MTE3", "in_bytes"), family="shape", dtypes=ANY.text,
                doc="Write the valid region of `src` into the DDR tensor `target` at `offset` (in place); "
                    "returns `target`."))
register(OpSpec("tile.assemble", ("target", "src", "offset"), _assemble_rule("tile"), _tile_assemble,
                reads=(0, 1), traits=frozenset({"memory"}), valid_args=(1,), pto="pto.tinsert",
                cost=mte("MTE1", "in_bytes"), family="shape", dtypes=ANY.text,
                doc="A copy of tile `target` with the valid region of `src` written at `offset`."))
for _ns in ("tensor", "tile"):
    register_unified("assemble", _ns, None, f"{_ns}.assemble")
_both("concat", ("lhs", "rhs"), _concat_rule, _concat, tile_pto="pto.tconcat", tile_traits=_VEC,
      tensor_traits=_VEC, cost=vector(1.0), reads=(0, 1), attrs={"axis": -1},
      doc="`lhs` and `rhs` (fully valid, equal outside `axis`) joined along `axis`.")
_both("set_validshape", ("x", "valid_shape"), _set_valid_rule, _identity, tile_pto="pto.tmov", tile_traits=_VIEW,
      tensor_traits=_HOST_VIEW, cost=free(), reads=(0,),
      doc="The same data with valid region `valid_shape` (metadata only; entries may be scalars).")
_both("fillpad", ("x",), _fillpad_rule, _fillpad, tile_pto="pto.tfillpad", tile_traits=_VEC,
      tensor_traits=_VEC, cost=vector(1.0), reads=(0,), valid_args=(0,), attrs={"pad_value": PadValue.zero},
      doc="A fully valid copy of `x` whose elements outside its valid region are `pad_value` "
          "(zero, max = +inf / largest integer, min = -inf / smallest integer).")

register(OpSpec("tile.extract", ("src", "offset", "shape"), _extract_rule, _extract,
                attrs={"target_memory": None}, reads=(0,), traits=frozenset({"memory"}), pto="pto.textract",
                cost=mte("MTE1"), family="shape", dtypes=ANY.text,
                doc="Copy the block of `shape` at `offset` of a tile into a new tile in `target_memory` "
                    "(default: the source's memory)."))
register_unified("extract", "tile", None, "tile.extract")
