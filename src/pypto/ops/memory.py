"""Data movement between DDR and on-chip memories, and single-element access (SPEC §3 "Memory").

- `tile.load(tensor, offsets, shapes, valid_shape=None, target_memory=Vec)`: DDR -> Vec or Mat.
  With `valid_shape` only that leading part of the region is transferred (and only it has to lie
  inside the tensor): the tile's valid region. The simulator poisons the rest (NaN / 0x5A bytes)
  so a leak is visible.
- `tile.store(tile, offsets, output_tensor)`: Vec/Acc/Mat -> DDR, in place; writes only the tile's
  valid region; returns `output_tensor`.
- `tile.move(tile, target_memory)`: on-chip copy between memories (Mat -> Left/Right, ...); the
  valid region travels with the tile. Which moves a backend allows is InferTileMemorySpace's check.
- `read(x, indices)` -> scalar; `write(x, indices, value)` sets one element: in place for a DDR
  tensor (returns `x`), a new value for a tile; `tensor.dim(x, axis)` -> the INDEX size of a dimension.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.dtype import INDEX
from ..core.enums import MemorySpace
from ..ir.expr import ConstInt, Expr
from ..ir.types import ScalarType, TileType, TupleType, Type
from .cost import mte, scalar
from .registry import OpSpec, OpTypeError, register, register_unified
from .site import KernelSite, const_args, pieces, static_dims
from .threads import wide_copy
from .typing_rules import (
    ANY,
    ON_CHIP,
    attr_int,
    attr_space,
    const_dims,
    expect_dtype,
    expect_same_kind,
    expect_scalar,
    expect_tensor,
    expect_tile,
    int_list,
    shape_str,
    static_ints,
)
from .valid import check_valid_shape, effective_shape, poison_outside, slice_valid, view_for

__all__ = ["check_region", "check_in_bounds", "region", "queried_dim"]

_LOADABLE = (MemorySpace.Vec, MemorySpace.Mat)
_STORABLE = (MemorySpace.Vec, MemorySpace.Acc, MemorySpace.Mat)


def region(offsets: tuple[int, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple([slice(o, o + s) for o, s in zip(offsets, shape)])


def check_in_bounds(shape: tuple[Expr, ...], offsets: tuple[Expr, ...], sizes: tuple[Expr, ...],
                    what: str = "tensor") -> None:
    """Compile-time bounds check of a region (only where offsets and sizes are constants)."""
    if len(offsets) != len(shape) or len(sizes) != len(shape):
        raise OpTypeError(f"offsets and shapes need {len(shape)} entries for a {len(shape)}-D {what}, "
                          f"got {len(offsets)} and {len(sizes)}")
    for dim, off, size in zip(const_dims(shape), const_dims(offsets), const_dims(sizes)):
        if dim is not None and size is not None and off is not None and (off + size > dim or off < 0):
            raise OpTypeError(f"region at offset {off} of size {size} exceeds dimension {dim} "
                              f"of {what} shape {shape_str(shape)}")


def check_region(what: str, tensor_shape: tuple[int, ...], offsets: tuple, sizes: tuple) -> None:
    """Run-time bounds check of a DDR region (offsets may come from loop variables).

    Raises IndexError naming the region and the tensor shape.
    """
    for dim, off, size in zip(tensor_shape, offsets, sizes):
        if off < 0 or off + size > dim:
            _out_of_bounds(what, tensor_shape, offsets, sizes)


def _out_of_bounds(what: str, tensor_shape: tuple[int, ...], offsets: tuple, sizes: tuple) -> None:
    for d, (dim, off, size) in enumerate(zip(tensor_shape, offsets, sizes)):
        if off < 0 or off + size > dim:
            reg = ", ".join(f"{o}:{o + n}" for o, n in zip(offsets, sizes))
            raise IndexError(f"{what} region [{reg}] is out of bounds of the tensor of shape "
                             f"{list(tensor_shape)} (dimension {d}: {off}:{off + size} not within 0:{dim})")


def _load(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = expect_tensor(args, 0, "tensor")
    offs, shapes = int_list(args, 1, "offsets"), static_ints(args, 2, "shapes")
    given = int_list(args, 3, "valid_shape") if len(args) > 3 else None
    if given is not None:
        check_valid_shape(given, shapes, "valid_shape")
    check_in_bounds(t.shape, offs, given if given is not None else shapes)
    valid = slice_valid(t, shapes, offs, given)
    return TileType(shapes, t.dtype, attr_space(attrs, _LOADABLE), view=view_for("tile", shapes, valid))


def _load_compute(t: Any, offsets: tuple, shapes: tuple, valid_shape: tuple | None = None, **_: Any) -> Any:
    if valid_shape is None:
        check_region("load", t.shape, offsets, shapes)
        return t[region(offsets, shapes)]  # a view: the executor copies it into the tile's buffer
    if any(v < 0 or v > n for v, n in zip(valid_shape, shapes)):
        raise ValueError(f"valid_shape {list(valid_shape)} does not fit the loaded tile of shape {list(shapes)}: "
                         f"each valid extent must be between 0 and the tile's")
    check_region("load", t.shape, offsets, valid_shape)
    out = torch.empty(shapes, dtype=t.dtype)
    out[tuple(slice(0, v) for v in valid_shape)] = t[region(offsets, valid_shape)]
    return poison_outside(out, tuple(valid_shape))


def _box(site: KernelSite, tensor: int, offsets: tuple, sizes: tuple) -> tuple[torch.Size, tuple] | None:
    """(the static shape of tensor argument `tensor`, the slices of the box) when the box at
    constant `offsets` of constant `sizes` lies inside that shape; None otherwise (the general path
    then checks, and raises, at run time)."""
    shape = static_dims(site.types[tensor])
    if shape is None or not (len(shape) == len(offsets) == len(sizes)) or not all(
            isinstance(x, int) for x in (*offsets, *sizes)):
        return None
    if any(o < 0 or o + n > d for d, o, n in zip(shape, offsets, sizes)):
        return None
    return torch.Size(shape), region(offsets, sizes)


def _load_site(site: KernelSite) -> Any:
    """`tile.load` of constant shapes, fully valid, into a tile of those shapes: at constant offsets
    inside a tensor of a declared static shape the slices are fixed; otherwise (run-time offsets,
    dynamic dimensions) a 2-D box is checked by one comparison per dimension. Then one copy into
    the tile. A tensor of another shape, or a box out of bounds, takes the general path (its
    check, its error)."""
    c = const_args(site, 2, 3)
    rank = len(getattr(site.types[0], "shape", ()))
    if c is None or c[1] is not None or site.dst is None or static_dims(site.dst) != tuple(c[0]) \
            or len(c[0]) != rank:
        return None
    shapes = tuple(c[0])
    offsets = const_args(site, 1)
    box = _box(site, 0, offsets[0], shapes) if offsets is not None else None
    if box is not None:
        proven, slices = box
        fixed = offsets[0]
        if tuple(proven) == shapes:   # the box is the whole tensor: copy it without a view

            def load_all(dst: Any, t: Any, *_: Any) -> Any:
                if t.shape == proven:
                    dst.copy_(t)
                    return None
                return _load_compute(t, fixed, shapes)
            return load_all

        def load(dst: Any, t: Any, *_: Any) -> Any:
            if t.shape == proven:
                dst.copy_(t[slices])
                return None
            return _load_compute(t, fixed, shapes)
        return load
    if rank != 2:
        return None
    n0, n1 = shapes

    def load2(dst: Any, t: Any, offs: Any, _: Any) -> Any:
        o0, o1 = offs
        sh = t.shape
        if len(sh) == 2 and 0 <= o0 <= sh[0] - n0 and 0 <= o1 <= sh[1] - n1:
            dst.copy_(t[o0:o0 + n0, o1:o1 + n1])
            return None
        return _load_compute(t, offs, shapes)
    return load2


def _store(args: list[Expr], attrs: dict[str, Any]) -> Type:
    tile = expect_tile(args, 0, "tile", _STORABLE)
    offs = int_list(args, 1, "offsets")
    out = expect_tensor(args, 2, "output_tensor")
    check_in_bounds(out.shape, offs, effective_shape(tile))
    if tile.dtype is not out.dtype:
        raise OpTypeError(f"tile dtype {tile.dtype.name} differs from output tensor dtype "
                          f"{out.dtype.name}; cast the tile first")
    return out   # the written tensor itself: a window-bound pld.DistributedTensor stays one (SPEC §8)


def _store_compute(tile: Any, offsets: tuple, out: Any, valid: tuple | None = None) -> Any:
    vs = tuple(valid[0]) if valid and valid[0] is not None else tuple(tile.shape)
    check_region("store", out.shape, offsets, vs)
    out[region(offsets, vs)].copy_(tile[tuple(slice(0, v) for v in vs)])
    return out


def _store_site(site: KernelSite) -> Any:
    """`tile.store` of a tile whose valid shape is a constant: at constant offsets into a tensor of
    a declared static shape containing the box, the slices are fixed; otherwise a 2-D box is
    checked by one comparison per dimension. Out of bounds: the general path (its error)."""
    valid = site.attrs.get("valid")
    tile = static_dims(site.types[0])
    if tile is None or valid is None or len(getattr(site.types[2], "shape", ())) != len(tile):
        return None
    vs = tuple(valid[0]) if valid[0] is not None else tile
    whole = vs == tile
    part = tuple(slice(0, v) for v in vs)
    offsets = const_args(site, 1)
    box = _box(site, 2, offsets[0], vs) if offsets is not None else None
    if box is not None:
        proven, slices = box
        fixed = offsets[0]
        if whole and tuple(proven) == vs:   # the box is the whole tensor: copy into it without a view

            def store_all(t: Any, _: Any, out: Any) -> Any:
                if out.shape == proven:
                    out.copy_(t)
                    return out
                return _store_compute(t, fixed, out, valid)
            return store_all

        def store(t: Any, _: Any, out: Any) -> Any:
            if out.shape == proven:
                out[slices].copy_(t if whole else t[part])
                return out
            return _store_compute(t, fixed, out, valid)
        return store
    if len(tile) != 2:
        return None
    v0, v1 = vs

    def store2(t: Any, offs: Any, out: Any) -> Any:
        o0, o1 = offs
        sh = out.shape
        if len(sh) == 2 and 0 <= o0 <= sh[0] - v0 and 0 <= o1 <= sh[1] - v1:
            out[o0:o0 + v0, o1:o1 + v1].copy_(t if whole else t[part])
            return out
        return _store_compute(t, offs, out, valid)
    return store2


def _move_site(site: KernelSite) -> Any:
    """`tile.move` into a destination of the source's shape that it does not partly overlap: one
    copy (none when it is the source's own buffer)."""
    if site.dst is None or static_dims(site.types[0]) != static_dims(site.dst) or not site.disjoint_or_same():
        return None
    if site.same[0]:
        return lambda dst, t: None

    def move(dst: Any, t: Any) -> None:
        dst.copy_(t)
    return move


def _lane_box(offs: Any, sizes: tuple, shape: Any) -> tuple | None:
    """The slices (after the lane axis) of the box at run-time `offs` of `sizes` in a stacked
    tensor of per-lane `shape`, or None when it is not wholly inside (lane by lane then raises the
    one-lane error)."""
    if len(offs) != len(sizes) or len(shape) != len(sizes):
        return None
    out = [slice(None)]
    for o, n, d in zip(offs, sizes, shape):
        if type(o) is not int or not 0 <= o <= d - n:
            return None
        out.append(slice(o, o + n))
    return tuple(out)


def _run_box(st: Any, proven: Any, fixed: tuple | None, offs: Any, sizes: tuple | None) -> tuple | None:
    """The slices of a batch form's box in run `st` (a stacked view, lane axis first): the box
    `_box` proved (`fixed`) when the run's tensors have the declared shape `proven`, else the box
    at run-time offsets `offs` of `sizes` when it lies inside them (`_lane_box`); None otherwise
    (lane by lane then)."""
    if proven is not None:
        return fixed if st.shape[1:] == proven else None
    return _lane_box(offs, sizes, st.shape[1:]) if sizes is not None and offs is not None else None


def _load_batch(site: KernelSite) -> Any:
    """`OpSpec.batch` of `tile.load` at the sites `_load_site` specialises: the lanes' tensors in
    runs that stack (`site.pieces`); for each run whose box lies inside its tensors — constant
    offsets inside a declared static shape, or run-time offsets (the same in every lane) checked
    against the run's shape — one copy of the stacked box into the run's tiles (each element copied
    as the one-lane copy does); otherwise the one-lane function lane after lane."""
    one = _load_site(site)
    if one is None:
        return None
    c, offsets = const_args(site, 2, 3), const_args(site, 1)
    box = _box(site, 0, offsets[0], tuple(c[0])) if offsets is not None and c is not None else None
    proven, slices = box if box is not None else (None, None)
    fixed = (slice(None), *slices) if slices is not None else None
    if fixed is not None and tuple(proven) == tuple(c[0]):
        fixed = ()      # the box is the whole tensor: no view to make
    sizes = tuple(c[0]) if c is not None else None

    def load(dst: Any, lanes: Any, *rest: Any) -> None:
        offs = rest[0] if rest else None
        n = len(lanes)
        for k0, k1, st in pieces(lanes) or ((0, n, None),):
            sl = None if st is None else _run_box(st, proven, fixed, offs, sizes)
            if sl is not None:
                wide_copy(dst if k1 - k0 == n else dst[k0:k1], st[sl] if sl else st)
                continue
            for k in range(k0, k1):
                r = one(dst[k], lanes[k], *rest)
                if r is not None:
                    dst[k].copy_(r)
    return load


def _store_batch(site: KernelSite) -> Any:
    """`OpSpec.batch` of `tile.store` at the sites `_store_site` specialises: the output tensors in
    runs that stack (`site.pieces`); for each run of one lane, or of lanes a nonzero step apart,
    whose box lies inside its tensors (fixed, or at run-time offsets checked against the run's
    shape), one copy of the run's tiles into the stacked box; otherwise the one-lane function lane
    after lane. Returns the output lanes."""
    one = _store_site(site)
    if one is None:
        return None
    valid, tile = site.attrs.get("valid"), static_dims(site.types[0])
    vs = tuple(valid[0]) if valid[0] is not None else tile
    offsets = const_args(site, 1)
    box = _box(site, 2, offsets[0], vs) if offsets is not None else None
    proven, slices = box if box is not None else (None, None)
    fixed = (slice(None), *slices) if slices is not None else None
    if fixed is not None and tuple(proven) == vs:
        fixed = ()      # the box is the whole tensor: no view to make
    part = () if vs == tile else (slice(None), *(slice(0, v) for v in vs))   # () : the whole tile

    def store(t: Any, offs: Any, lanes: Any) -> Any:
        n = len(lanes)
        for k0, k1, st in pieces(lanes) or ((0, n, None),):
            sl = None
            if st is not None and (st.stride(0) or k1 - k0 == 1):
                sl = _run_box(st, proven, fixed, offs, vs)
            if sl is not None:
                src = t if k1 - k0 == n else t[k0:k1]
                wide_copy(st[sl] if sl else st, src[part] if part else src)
                continue
            for k in range(k0, k1):
                one(t[k], offs, lanes[k])
        return lanes
    return store


def _move_batch(site: KernelSite) -> Any:
    """`OpSpec.batch` of `tile.move` at the sites `_move_site` specialises: one copy of all lanes'
    tiles (`threads.wide_copy`)."""
    if _move_site(site) is None:
        return None
    if site.same[0]:
        return lambda dst, t: None
    return wide_copy


def _move(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = expect_tile(args, 0, "tile")
    return TileType(t.shape, t.dtype, attr_space(attrs, ON_CHIP), view=t.view)


def _indices(ns: str, args: list[Expr]) -> tuple[Any, tuple[Expr, ...]]:
    x = expect_same_kind(ns, args, 0, "x")
    idx = int_list(args, 1, "indices")
    check_in_bounds(x.shape, idx, tuple(ConstInt(1, INDEX) for _ in idx), "tile" if ns == "tile" else "tensor")
    return x, idx


def _read_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x, _ = _indices(ns, args)
        expect_dtype(x, "x", ANY)
        return ScalarType(x.dtype)
    return rule


def _write_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        x, _ = _indices(ns, args)
        expect_scalar(args, 2, "value")
        return x
    return rule


def _read(x: Any, indices: tuple) -> Any:
    check_region("read", tuple(x.shape), indices, tuple(1 for _ in indices))
    return x[tuple(indices)].item()


def _write(x: Any, indices: tuple, value: Any) -> Any:
    check_region("write", tuple(x.shape), indices, tuple(1 for _ in indices))
    x[tuple(indices)] = value
    return x


def _tile_write(x: Any, indices: tuple, value: Any) -> Any:
    return _write(x.clone(), indices, value)


def _dim_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    x = expect_tensor(args, 0, "x")
    attr_int(attrs, "axis", -len(x.shape), len(x.shape) - 1)
    return ScalarType(INDEX)


def _dim(x: Any, axis: int = 0) -> int:
    return int(x.shape[axis])


def queried_dim(args: list[Expr] | tuple[Expr, ...], attrs: dict[str, Any]) -> Expr | None:
    """The dimension a dimension query (an op with `lowering="shape"`, e.g. `tensor.dim`) stands
    for: dimension `axis` of its tensor's type — a ConstInt for a static dimension, the
    `pl.dynamic` Var (or an expression over such) otherwise — or None for an axis out of range.
    One rule for every reader: ConvertTensorToTileOps lowers the query to it, the parser's
    `pl.static_assert` folds it (a static dimension of a partly dynamic tensor is static)."""
    shape = getattr(args[0].type, "shape", ())
    axis = attrs.get("axis", 0)
    return shape[axis] if -len(shape) <= axis < len(shape) else None


_MEM = frozenset({"memory"})
register(OpSpec("tile.load", ("tensor", "offsets", "shapes", "valid_shape"), _load, _load_compute,
                specialize=_load_site, batch=_load_batch,
                attrs={"target_memory": MemorySpace.Vec}, optional=("valid_shape",), reads=(0,), traits=_MEM,
                ddr_region=(0, 1, 2), pto="pto.tload", cost=mte("MTE2"), family="memory", dtypes=ANY.text,
                doc="Copy the DDR region at `offsets` of size `shapes` into a new tile in `target_memory` "
                    "(Vec or Mat); with `valid_shape` only that leading part is loaded and valid."))
register(OpSpec("tile.store", ("tile", "offsets", "output_tensor"), _store, _store_compute,
                specialize=_store_site, batch=_store_batch,
                reads=(0,), writes=(2,), traits=_MEM, valid_args=(0,), ddr_region=(2, 1, 0), pto="pto.tstore",
                cost=mte("MTE3", "in_bytes"), family="memory", dtypes=ANY.text,
                doc="Write the valid region of a Vec/Acc/Mat tile into `output_tensor` at `offsets`; "
                    "returns the tensor."))
register(OpSpec("tile.move", ("tile",), _move, lambda t, **_: t, attrs={"target_memory": None},
                specialize=_move_site, batch=_move_batch,
                reads=(0,), traits=_MEM, pto="pto.tmov", cost=mte("MTE1"), family="memory", dtypes=ANY.text,
                doc="Copy a tile into another on-chip memory (e.g. Mat -> Left/Right); keeps its valid region."))
for _ns in ("tensor", "tile"):
    _host = frozenset({"orchestration"}) if _ns == "tensor" else frozenset()
    register(OpSpec(f"{_ns}.read", ("x", "indices"), _read_rule(_ns), _read, reads=(0,), traits=_host,
                    pto=None if _ns == "tensor" else "pto.tgetval", cost=scalar(), family="memory",
                    tile_op="tile.read" if _ns == "tensor" else None,
                    dtypes=ANY.text, doc="The single element of `x` at `indices`, as a scalar."))
    _t = _ns == "tile"
    register(OpSpec(f"{_ns}.write", ("x", "indices", "value"), _write_rule(_ns), _tile_write if _t else _write,
                    reads=(0, 2) if _t else (2,), writes=() if _t else (0,), traits=_host,
                    pto="pto.tsetval" if _t else None, cost=scalar(), family="memory", dtypes=ANY.text,
                    doc="A copy of tile `x` with the element at `indices` set to the scalar `value`." if _t else
                    "Set the element of DDR tensor `x` at `indices` to the scalar `value` (in place); "
                    "returns `x`."))
    register_unified("read", _ns, None, f"{_ns}.read")
    register_unified("write", _ns, None, f"{_ns}.write")
register(OpSpec("tensor.dim", ("x",), _dim_rule, _dim, attrs={"axis": 0}, reads=(),
                traits=frozenset({"orchestration"}), host="{x}.shape({axis})", lowering="shape", cost=scalar(),
                family="memory",
                dtypes=ANY.text,
                doc="The size of dimension `axis` of a tensor, as an INDEX scalar."))
register_unified("load", "tensor", None, "tile.load")
register_unified("store", "tile", None, "tile.store")
register_unified("move", "tile", None, "tile.move")
register_unified("dim", "tensor", None, "tensor.dim")


def _dump_tag_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    expect_tensor(args, 0, "tensor")
    return TupleType(())


# A DFX directive (SPEC §12): no effect on numbers; the simulator's argument dump reads the "dump" trait.
register(OpSpec("tensor.dump_tag", ("tensor",), _dump_tag_rule, lambda *_, **__: None, reads=(0,),
                traits=frozenset({"orchestration", "dump"}), cost=scalar(), family="memory", dtypes=ANY.text,
                doc="Tag a DDR tensor for the argument dump: with `RunConfig(enable_dump_args=1)` the "
                    "arguments of every later task that touches it go to `dfx_outputs/args_dump/`. "
                    "Orchestration only; it does not change any value."))
register_unified("dump_tag", "tensor", None, "tensor.dump_tag")
