"""Valid regions of partial tiles (SPEC §3 "Shape/view", §9 "valid region lost").

A tile or tensor type may carry a valid shape (`TileView.valid_shape` / `TensorView.valid_shape`):
only the leading `valid_shape[d]` entries of each dimension hold data. `None` means the whole
shape is valid. The type rules carry the valid region through every op that keeps element
positions (elementwise ops, cast, move, broadcasts), shrink it through reductions and slices,
transpose it through transposes, and reject ops that would mix positions (reshape, concat) of a
partial tile unless it is padded first with `fillpad`. Compute functions that would otherwise
read outside it (`store`, reductions, matmul) declare `OpSpec.valid_args` and restrict themselves.

Valid dimensions are IR expressions: constants, or scalar variables for dynamic tails
(`valid_shape=[rows, 64]`). Rules never build compound expressions: where two different
dynamic extents would have to be combined they raise an OpTypeError asking for an explicit
`set_validshape`.
"""

from __future__ import annotations

from typing import Any

from ..core.dtype import INDEX
from ..core.enums import PadValue, TensorLayout
from ..ir.expr import ConstInt, Expr
from ..ir.types import TensorType, TensorView, TileType, TileView, Type
from .registry import OpTypeError
from .typing_rules import const_dims, dims_equal, shape_str

__all__ = ["valid_of", "normalize", "view_for", "merge_valid", "reduce_valid", "transpose_valid",
           "slice_valid", "require_full", "check_valid_shape", "effective_shape", "POISON_BYTE",
           "poison_outside"]

# Byte written outside the valid region of a freshly loaded tile by the simulator, so that any
# value that leaks from there into an output is visible (floats get NaN instead).
POISON_BYTE = 0x5A


def valid_of(t: Type) -> tuple[Expr, ...] | None:
    """The valid shape of a tile/tensor type, or None when all of it is valid."""
    v = getattr(t, "view", None)
    return v.valid_shape if v is not None else None


def effective_shape(t: TensorType | TileType) -> tuple[Expr, ...]:
    vs = valid_of(t)
    return vs if vs is not None else t.shape


def normalize(shape: tuple[Expr, ...], valid: tuple[Expr, ...] | None) -> tuple[Expr, ...] | None:
    """None when `valid` covers all of `shape` (statically), else `valid`."""
    if valid is None or all(dims_equal(v, s) for v, s in zip(valid, shape)):
        return None
    return tuple(valid)


def view_for(ns: str, shape: tuple[Expr, ...], valid: tuple[Expr, ...] | None,
             base: Any = None) -> TileView | TensorView | None:
    """The view of a fresh result: `valid` plus, for tiles, the layout and pad of `base`."""
    valid = normalize(shape, valid)
    if ns == "tensor":
        return TensorView(valid_shape=valid) if valid is not None else None
    layout = base.layout if isinstance(base, TileView) else TensorLayout.ND
    pad = base.pad if isinstance(base, TileView) else PadValue.null
    if valid is None and layout is TensorLayout.ND and pad is PadValue.null:
        return None
    return TileView(valid, layout, pad)


def _dim_min(a: Expr, b: Expr, what: str) -> Expr:
    if dims_equal(a, b):
        return a
    if isinstance(a, ConstInt) and isinstance(b, ConstInt):
        return a if a.value <= b.value else b
    raise OpTypeError(f"the valid regions of {what} differ in a dynamic dimension; make them equal "
                      f"with pl.set_validshape first")


def merge_valid(types: list[Type], names: list[str], shape: tuple[Expr, ...]) -> tuple[Expr, ...] | None:
    """Valid region of an elementwise result over `shape`: the intersection of the operands' valid
    regions (operands of lower rank or size-1 dimensions are broadcast and do not limit it)."""
    out: list[Expr | None] = [None] * len(shape)  # None: not limited by any operand yet
    for t in types:
        vs = valid_of(t)
        if vs is None:
            continue
        off = len(shape) - len(vs)
        for d, v in enumerate(vs):
            full = t.shape[d]
            if isinstance(full, ConstInt) and full.value == 1 and not dims_equal(full, shape[off + d]):
                continue  # broadcast dimension
            cur = out[off + d]
            out[off + d] = v if cur is None else _dim_min(cur, v, " and ".join(f"'{n}'" for n in names))
    if all(v is None for v in out):
        return None
    return normalize(shape, tuple(s if v is None else v for v, s in zip(out, shape)))


def reduce_valid(t: Type, axis: int) -> tuple[Expr, ...] | None:
    """Valid region of a reduction of `t` over `axis`: that dimension becomes 1."""
    vs = valid_of(t)
    if vs is None:
        return None
    out = list(vs)
    out[axis] = ConstInt(1, INDEX)
    return tuple(out)


def transpose_valid(t: Type, a1: int, a2: int) -> tuple[Expr, ...] | None:
    vs = valid_of(t)
    if vs is None:
        return None
    out = list(vs)
    out[a1], out[a2] = out[a2], out[a1]
    return tuple(out)


def slice_valid(t: TensorType | TileType, shape: tuple[Expr, ...], offsets: tuple[Expr, ...],
                given: tuple[Expr, ...] | None) -> tuple[Expr, ...] | None:
    """Valid region of `t[offsets : offsets + shape]`: the part of `t`'s valid region inside the
    slice, further limited by an explicit `given` valid shape.

    Raises OpTypeError when a dynamic valid extent of `t` would need arithmetic (pass `valid_shape=`).
    """
    pv = valid_of(t)
    out: list[Expr] = list(given) if given is not None else list(shape)
    if pv is None:
        return normalize(shape, tuple(out))
    for d, (v, off, size) in enumerate(zip(pv, offsets, shape)):
        if isinstance(v, ConstInt) and isinstance(off, ConstInt) and isinstance(size, ConstInt):
            inside = ConstInt(max(0, min(size.value, v.value - off.value)), INDEX)
            out[d] = _dim_min(out[d], inside, "the source and the slice") if given is not None else inside
        elif isinstance(off, ConstInt) and off.value == 0 and dims_equal(size, t.shape[d]):
            out[d] = v if given is None else _dim_min(out[d], v, "the source and the slice")
        elif given is None:
            raise OpTypeError(f"the source's valid extent {shape_str((v,))} in dimension {d} is dynamic; "
                              f"give the slice an explicit valid_shape=")
    return normalize(shape, tuple(out))


def require_full(t: Type, name: str, why: str) -> None:
    """Reject a partial tile/tensor where positions would mix (e.g. reshape)."""
    vs = valid_of(t)
    if vs is not None:
        raise OpTypeError(f"argument '{name}' has valid shape {shape_str(vs)} of {shape_str(t.shape)}; "  # type: ignore[attr-defined]
                          f"{why} needs a fully valid input: pad it with pl.fillpad first")


def check_valid_shape(valid: tuple[Expr, ...], shape: tuple[Expr, ...], name: str) -> None:
    """A requested valid shape must have the tile's rank and fit inside it."""
    if len(valid) != len(shape):
        raise OpTypeError(f"argument '{name}' needs {len(shape)} entries for shape {shape_str(shape)}, "
                          f"got {len(valid)}")
    for v, s in zip(const_dims(valid), const_dims(shape)):
        if v is not None and s is not None and not 0 <= v <= s:
            raise OpTypeError(f"argument '{name}' {shape_str(valid)} does not fit inside shape "
                              f"{shape_str(shape)}")


def poison_outside(x: Any, valid: tuple[int, ...] | None) -> Any:
    """`x` (a torch tensor, modified in place) with everything outside `valid` overwritten by
    poison: NaN for floating types, the byte pattern POISON_BYTE for others."""
    if valid is None or tuple(valid) == tuple(x.shape):
        return x
    import torch

    keep = torch.zeros(x.shape, dtype=torch.bool)
    keep[tuple(slice(0, v) for v in valid)] = True
    if x.is_floating_point():
        x.masked_fill_(~keep, float("nan"))
    else:
        fill = torch.full((x.element_size(),), POISON_BYTE, dtype=torch.uint8).view(x.dtype)
        x.masked_fill_(~keep, fill.item())
    return x
