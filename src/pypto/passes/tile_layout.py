"""On-chip footprint of tiles (SPEC §6): the bytes a tile occupies in its memory space, as the
hardware lays it out. Used by memory planning (InitMemRef and the pipe rings it reserves),
MemoryReuse, AllocateMemoryAddr and the layout report of ResolveBackendOpLayouts.
"""

from __future__ import annotations

from ..backend import SoCModel
from ..core.enums import MemorySpace, TensorLayout
from ..ir.types import TileType, num_elements, static_shape

__all__ = ["align_up", "tile_bytes", "buffer_bytes"]


def align_up(n: int, a: int) -> int:
    return (n + a - 1) // a * a


def tile_bytes(t: TileType) -> int:
    """Bytes of a tile's elements, densely stored (`DataType.storage_bytes`: 4-bit types packed two
    per byte, BOOL one byte per element)."""
    return t.dtype.storage_bytes(num_elements(t))


def buffer_bytes(t: TileType, soc: SoCModel) -> int:
    """Bytes a tile occupies in its on-chip memory, as the hardware lays it out (SPEC §6):

    - in Mat / Left / Right / Acc, whole fractal boxes: rows rounded up to `soc.l0_fractal_rows`
      (16), each row to `fractal_bytes / 16` bytes (32 bytes; 64 in Acc);
    - elsewhere (Vec, Bias), a row-major tile's rows each start on the 32-byte alignment, a
      column-major (DN) tile's columns do; a 1-D tile is one row.
    The result is rounded up to `soc.alignment`. Equal to `tile_bytes` for aligned shapes.
    """
    shape = static_shape(t)
    rows, cols = (1, shape[0]) if len(shape) == 1 else (num_elements(t) // max(shape[-1], 1), shape[-1])
    space = t.memory_space or MemorySpace.Vec
    fractal = soc.fractal_bytes.get(space)
    if fractal is not None:
        rows = align_up(rows, soc.l0_fractal_rows)
        row_bytes = align_up(t.dtype.storage_bytes(cols), fractal // soc.l0_fractal_rows)
        return align_up(rows * row_bytes, soc.alignment)
    if t.view is not None and t.view.layout is TensorLayout.DN and len(shape) == 2:
        rows, cols = cols, rows
    return align_up(rows * align_up(t.dtype.storage_bytes(cols), soc.alignment), soc.alignment)
