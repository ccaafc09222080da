"""Creation, data movement and tensor views (SPEC §3 "Memory", "Creation", "Shape/view").

- `tensor.create(shape, dtype)`: a new DDR tensor (Orchestration allocates; zero-filled on host).
- `tile.create(shape, dtype, target_memory)`: an on-chip buffer; contents undefined until written.
- `tile.load(tensor, offsets, shapes, target_memory=Vec)`: DDR → Vec or Mat.
- `tile.store(tile, offsets, output)`: Vec or Acc → DDR, written in place; returns `output`.
- `tile.move(tile, target_memory)`: on-chip copy between memories (Mat → Left/Right, ...).
- `tensor.slice(src, shape, offset)`: a sub-tensor; `tensor.assemble(target, src, offset)` writes
  `src` into `target` at `offset` and returns the updated `target`.
"""

from __future__ import annotations

from typing import Any

from ..core.dtype import DataType
from ..core.enums import MemorySpace
from ..ir.expr import ConstInt, Expr
from ..ir.types import TensorType, TileType, Type
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import (
    attr_dtype,
    const_dims,
    expect_shaped,
    expect_tensor,
    expect_tile,
    int_list,
    shape_str,
)

_LOADABLE = (MemorySpace.Vec, MemorySpace.Mat)
_STORABLE = (MemorySpace.Vec, MemorySpace.Acc, MemorySpace.Mat)


def _region(offsets: tuple[int, ...], shape: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(o, o + s) for o, s in zip(offsets, shape))


def _check_in_bounds(shape: tuple[Expr, ...], offsets: tuple[Expr, ...], sizes: tuple[Expr, ...]) -> None:
    if len(offsets) != len(shape) or len(sizes) != len(shape):
        raise OpTypeError(f"offsets and shapes need {len(shape)} entries for a {len(shape)}-D tensor, "
                          f"got {len(offsets)} and {len(sizes)}")
    for dim, off, size in zip(const_dims(shape), const_dims(offsets), const_dims(sizes)):
        if dim is not None and size is not None and off is not None and (off + size > dim or off < 0):
            raise OpTypeError(f"region at offset {off} of size {size} exceeds dimension {dim} "
                              f"of tensor shape {shape_str(shape)}")


def check_region(what: str, tensor_shape: tuple[int, ...], offsets: tuple, sizes: tuple) -> None:
    """Run-time bounds check of a DDR region (offsets may come from loop variables).

    Raises IndexError naming the region and the tensor shape.
    """
    for d, (dim, off, size) in enumerate(zip(tensor_shape, offsets, sizes)):
        if off < 0 or off + size > dim:
            region = ", ".join(f"{o}:{o + n}" for o, n in zip(offsets, sizes))
            raise IndexError(f"{what} region [{region}] is out of bounds of the tensor of shape "
                             f"{list(tensor_shape)} (dimension {d}: {off}:{off + size} not within 0:{dim})")


def _space(attrs: dict[str, Any], allowed: tuple[MemorySpace, ...], what: str) -> MemorySpace:
    sp = attrs.get("target_memory")
    if not isinstance(sp, MemorySpace) or sp not in allowed:
        names = ", ".join(f"pl.Mem.{s.name}" for s in allowed)
        raise OpTypeError(f"{what} 'target_memory' must be one of {names}, got {sp!r}")
    return sp


def _tensor_create(args: list[Expr], attrs: dict[str, Any]) -> Type:
    return TensorType(int_list(args, 0, "shape"), attr_dtype(attrs, "dtype"))


def _tile_create(args: list[Expr], attrs: dict[str, Any]) -> Type:
    shape = int_list(args, 0, "shape")
    if not all(isinstance(d, ConstInt) for d in shape):
        raise OpTypeError("argument 'shape' of a tile must be static")
    sp = _space(attrs, tuple(m for m in MemorySpace if m is not MemorySpace.DDR), "attribute")
    return TileType(shape, attr_dtype(attrs, "dtype"), sp)


def _load(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = expect_tensor(args, 0, "tensor")
    offs, shapes = int_list(args, 1, "offsets"), int_list(args, 2, "shapes")
    if not all(isinstance(d, ConstInt) for d in shapes):
        raise OpTypeError("argument 'shapes' must be static (tiles have compile-time shapes)")
    _check_in_bounds(t.shape, offs, shapes)
    return TileType(shapes, t.dtype, _space(attrs, _LOADABLE, "load"))


def _store(args: list[Expr], attrs: dict[str, Any]) -> Type:
    tile = expect_tile(args, 0, "tile", _STORABLE)
    offs = int_list(args, 1, "offsets")
    out = expect_tensor(args, 2, "output_tensor")
    _check_in_bounds(out.shape, offs, tile.shape)
    if tile.dtype is not out.dtype:
        raise OpTypeError(f"tile dtype {tile.dtype.name} differs from output tensor dtype "
                          f"{out.dtype.name}; cast the tile first")
    return TensorType(out.shape, out.dtype, out.view)


def _move(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = expect_tile(args, 0, "tile")
    sp = _space(attrs, tuple(m for m in MemorySpace if m is not MemorySpace.DDR), "move")
    return TileType(t.shape, t.dtype, sp, view=t.view)


def _slice(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = expect_tensor(args, 0, "src")
    shape, offs = int_list(args, 1, "shape"), int_list(args, 2, "offset")
    _check_in_bounds(t.shape, offs, shape)
    return TensorType(shape, t.dtype)


def _assemble(args: list[Expr], attrs: dict[str, Any]) -> Type:
    target = expect_tensor(args, 0, "target")
    src = expect_shaped(args, 1, "src")
    offs = int_list(args, 2, "offset")
    _check_in_bounds(target.shape, offs, src.shape)
    if src.dtype is not target.dtype:
        raise OpTypeError(f"source dtype {src.dtype.name} differs from target dtype "
                          f"{target.dtype.name}")
    return TensorType(target.shape, target.dtype, target.view)


def _zeros(shape: tuple[int, ...], dtype: DataType = None, **_: Any) -> Any:
    import torch

    return torch.zeros(shape, dtype=dtype.to_torch())


def _load_compute(t: Any, offsets: tuple, shapes: tuple, **_: Any) -> Any:
    check_region("load", tuple(t.shape), offsets, shapes)
    return t[_region(offsets, shapes)].clone()


def _store_compute(tile: Any, offsets: tuple, out: Any) -> Any:
    check_region("store", tuple(out.shape), offsets, tuple(tile.shape))
    out[_region(offsets, tuple(tile.shape))].copy_(tile)
    return out


def _slice_compute(t: Any, shape: tuple, offset: tuple) -> Any:
    check_region("slice", tuple(t.shape), offset, shape)
    return t[_region(offset, shape)]


def _assemble_compute(target: Any, src: Any, offset: tuple) -> Any:
    check_region("assemble", tuple(target.shape), offset, tuple(src.shape))
    target[_region(offset, tuple(src.shape))].copy_(src)
    return target


register(OpSpec("tensor.create", ("shape",), _tensor_create, _zeros, attrs={"dtype": None},
                traits=frozenset({"creation", "orchestration"}), tile_op="tile.create",
                doc="Allocate a new DDR tensor of `shape` and `dtype`."))
register(OpSpec("tile.create", ("shape",), _tile_create, None,
                attrs={"dtype": None, "target_memory": MemorySpace.Vec}, traits=frozenset({"creation"}),
                doc="Allocate an on-chip tile of static `shape` in `target_memory`; contents undefined."))
register(OpSpec("tile.load", ("tensor", "offsets", "shapes"), _load, _load_compute,
                attrs={"target_memory": MemorySpace.Vec}, reads=(0,), traits=frozenset({"memory"}),
                pto="pto.tload",
                doc="Copy the DDR region at `offsets` of size `shapes` into a new tile in "
                    "`target_memory` (Vec or Mat)."))
register(OpSpec("tile.store", ("tile", "offsets", "output_tensor"), _store, _store_compute,
                reads=(0,), writes=(2,), traits=frozenset({"memory"}), pto="pto.tstore",
                doc="Write a Vec/Acc tile into `output_tensor` at `offsets`; returns the tensor."))
register(OpSpec("tile.move", ("tile",), _move, lambda t, **_: t.clone(),
                attrs={"target_memory": None}, reads=(0,), traits=frozenset({"memory"}),
                pto="pto.tmov",
                doc="Copy a tile into another on-chip memory (e.g. Mat → Left/Right)."))
register(OpSpec("tensor.slice", ("src", "shape", "offset"), _slice, _slice_compute, reads=(0,),
                traits=frozenset({"view", "orchestration"}),
                doc="The sub-tensor of `shape` at `offset` (a view of `src`)."))
register(OpSpec("tensor.assemble", ("target", "src", "offset"), _assemble, _assemble_compute,
                reads=(1,), writes=(0,), traits=frozenset({"memory"}),
                doc="Write `src` into `target` at `offset`; returns the updated `target`."))

for _ns in ("tensor", "tile"):
    register_unified("create_" + _ns, _ns, False, f"{_ns}.create")
register_unified("load", "tensor", False, "tile.load")
register_unified("store", "tile", False, "tile.store")
register_unified("move", "tile", False, "tile.move")
register_unified("slice", "tensor", False, "tensor.slice")
register_unified("assemble", "tensor", False, "tensor.assemble")
