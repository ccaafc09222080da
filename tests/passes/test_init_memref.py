"""InitMemRef buffer sizes: the on-chip footprint of a tile as the hardware lays it out (SPEC §6)."""

import pytest

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType, get_soc
from pypto.passes.init_memref import buffer_bytes

SOC = get_soc(BackendType.Ascend910B)
CI = ir.ConstInt


def tile(shape, dtype, space, layout=None):
    view = ir.TileView(None, layout, pl.PadValue.null) if layout is not None else None
    return ir.TileType(tuple(CI(d) for d in shape), dtype, space, view=view)


@pytest.mark.parametrize("shape,dtype,space,layout,want", [
    ((64, 128), pl.FP32, pl.Mem.Vec, None, 64 * 128 * 4),      # aligned: the dense size
    ((3, 5), pl.FP16, pl.Mem.Vec, None, 3 * 32),                # each 10-byte row padded to 32
    ((64, 1), pl.FP32, pl.Mem.Vec, None, 64 * 32),              # a row-major column wastes rows
    ((64, 1), pl.FP32, pl.Mem.Vec, pl.TensorLayout.DN, 256),    # column-major: one 256-byte column
    ((100,), pl.FP32, pl.Mem.Vec, None, 416),                   # 1-D: one row, 400 -> 416
    ((30, 64), pl.FP16, pl.Mem.Left, None, 32 * 128),           # 30 rows -> two 16-row fractals
    ((64, 40), pl.FP16, pl.Mem.Right, None, 64 * 96),           # 80-byte rows -> 96
    ((16, 8), pl.FP32, pl.Mem.Acc, None, 16 * 64),              # Acc rows: 64-byte fractal rows
    ((64, 64), pl.FP16, pl.Mem.Mat, None, 64 * 64 * 2),
])
def test_buffer_bytes(shape, dtype, space, layout, want):
    assert buffer_bytes(tile(shape, dtype, space, layout), SOC) == want
