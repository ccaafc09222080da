"""DDR regions of task arguments, and whether two of them overlap (SPEC §1: tasks are ordered
through overlapping buffers with a write).

A task argument is a torch tensor: a whole DDR buffer or a view of one (`tensor.slice`). Its
`Region` names the buffer (`key`: the address of the underlying storage), the byte range
`[lo, hi)` it can touch, and — when the view is a box of a row-major buffer (the view has the
buffer's strides, which every `tensor.slice` of a contiguous tensor does) — the box itself: per
dimension [start, stop) in the buffer's index space. Two regions overlap when they name the same
buffer, their byte ranges intersect and, if both are boxes of the same layout, their boxes
intersect in every dimension. Views that are not boxes (transposes, other strides) fall back to
the byte range: conservative, so it can only add dependencies, never lose one.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import torch

__all__ = ["Region", "region_of", "describe"]


class Region(NamedTuple):
    """Bytes `[lo, hi)` of DDR buffer `key`; `box` (start, stop per dim) when the view is a box of
    the row-major buffer whose element strides are `strides`."""

    key: int
    lo: int
    hi: int
    box: tuple[tuple[int, int], ...] | None
    strides: tuple[int, ...] | None

    def overlaps(self, other: Region) -> bool:
        """True if some byte may be touched through both regions (exact for boxes)."""
        if self.key != other.key or self.lo >= other.hi or other.lo >= self.hi:
            return False
        if self.box is None or other.box is None or self.strides != other.strides:
            return True
        for (a0, a1), (b0, b1) in zip(self.box, other.box):
            if a0 >= b1 or b0 >= a1:
                return False
        return True

    def covers(self, other: Region) -> bool:
        """True if every byte `other` can touch is inside this region."""
        if self.key != other.key or other.lo < self.lo or other.hi > self.hi:
            return False
        if self.box is None or other.box is None:
            return self.box is None and other.box is None
        if self.strides != other.strides:
            return False
        return all(a0 <= b0 and b1 <= a1 for (a0, a1), (b0, b1) in zip(self.box, other.box))


class _Base(NamedTuple):
    key: int
    offset: int
    strides: tuple[int, ...] | None   # None: the buffer is not contiguous (no boxes)
    shape: tuple[int, ...]


def _base_info(base: torch.Tensor) -> _Base:
    strides = base.stride() if base.is_contiguous() else None
    return _Base(base.untyped_storage().data_ptr(), base.storage_offset(), strides, tuple(base.shape))


def region_of(t: torch.Tensor, cache: dict | None = None) -> Region:
    """The DDR region a tensor argument can touch (see the module docstring).

    `cache` may be passed to remember the regions of views seen before: {(id of the underlying
    buffer tensor, the view's data pointer, shape, strides, dtype): (weak reference to the buffer
    tensor, region)}. An entry only counts while its buffer tensor is alive and the same object,
    so the cache may outlive runs (it is cleared when it grows past `_CACHE_LIMIT` entries).
    """
    base = t._base
    if base is None:
        base = t
    if cache is None:
        return _region(t, _base_info(base))
    key = (id(base), t.data_ptr(), t.shape, t.stride(), t.dtype)
    hit = cache.get(key)
    if hit is not None and hit[0]() is base:
        return hit[1]
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    r = _region(t, _base_info(base))
    cache[key] = (weakref.ref(base), r)
    return r


_CACHE_LIMIT = 1 << 16


def _region(t: torch.Tensor, info: _Base) -> Region:
    isz = t.element_size()
    lo = t.storage_offset()
    strides = t.stride()
    shape = t.shape
    hi = lo + 1
    for size, stride in zip(shape, strides):
        if size == 0:
            return Region(info.key, lo * isz, lo * isz, None, None)
        hi += (size - 1) * stride
    if strides != info.strides or not strides:
        return Region(info.key, lo * isz, hi * isz, None, None)
    off = lo - info.offset
    box = []
    for size, stride, full in zip(shape, strides, info.shape):
        start = off // stride if stride else 0
        off -= start * stride
        if start + size > full:
            return Region(info.key, lo * isz, hi * isz, None, None)
        box.append((start, start + size))
    if off:
        return Region(info.key, lo * isz, hi * isz, None, None)
    return Region(info.key, lo * isz, hi * isz, tuple(box), strides)


def describe(r: Region) -> str:
    """`[r0:r1, c0:c1]` for a box, `bytes [lo, hi)` otherwise."""
    if r.box is not None:
        return "[" + ", ".join(f"{a}:{b}" for a, b in r.box) + "]"
    return f"bytes [{r.lo}, {r.hi})"
