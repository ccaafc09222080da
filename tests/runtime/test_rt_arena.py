"""Per-core arenas: typed views at planned addresses, bounds and alignment checks."""

import pytest
import torch

from pypto.backend import BackendType, get_soc
from pypto.core import dtype as dt
from pypto.core.enums import MemorySpace
from pypto.core.errors import RuntimeSimError
from pypto.ir import MemRef
from pypto.runtime.sim import CoreArena, SimDevice, tile_nbytes
from pypto.runtime.sim.arena import UNINIT_BYTE

SOC = get_soc(BackendType.Ascend910B)


def test_buffers_sized_from_soc_and_lazy() -> None:
    a = CoreArena(SOC, "AIV", 0)
    assert a._buffers == {}
    assert a.buffer(MemorySpace.Vec).numel() == 192 * 1024
    assert a.buffer(MemorySpace.Acc).numel() == 128 * 1024
    assert a.buffer(MemorySpace.Vec).dtype == torch.uint8
    with pytest.raises(RuntimeSimError, match="DDR"):
        a.buffer(MemorySpace.DDR)


def test_views_share_bytes() -> None:
    a = CoreArena(SOC, "AIV", 0)
    v32 = a.view(MemRef(MemorySpace.Vec, 1, 256, 64), dt.FP32, (8, 8))
    v16 = a.view(MemRef(MemorySpace.Vec, 2, 128, 64), dt.FP16, (8, 8))
    v32.fill_(1.0)
    # FP32 1.0 is 0x3F800000: as little-endian FP16 halves that is (0.0, 1.875)
    assert v16[0, 0].item() == 0.0 and v16[0, 1].item() == 1.875
    vec = a.buffer(MemorySpace.Vec)
    assert not (vec[64:64 + 256] == UNINIT_BYTE).all() and (vec[:64] == UNINIT_BYTE).all()


def test_fresh_memory_reads_as_nan_not_zero() -> None:
    """Never-written on-chip bytes are 0xFF: NaN as FP32/FP16/BF16, -1 as INT32."""
    a = CoreArena(SOC, "AIC", 0)
    for dtype in (dt.FP32, dt.FP16, dt.BF16):
        assert torch.isnan(a.view(MemRef(MemorySpace.Mat, 1, 512, 0), dtype, (4, 8))).all()
    assert (a.view(MemRef(MemorySpace.Acc, 1, 128, 0), dt.INT32, (4, 8)) == -1).all()


def test_bounds_alignment_and_size_errors() -> None:
    a = CoreArena(SOC, "AIV", 0)
    top = 192 * 1024
    with pytest.raises(RuntimeSimError, match="exceeds"):
        a.view(MemRef(MemorySpace.Vec, 1, 4096, top - 2048), dt.FP32, (32, 32))
    with pytest.raises(RuntimeSimError, match="aligned"):
        a.view(MemRef(MemorySpace.Vec, 1, 4096, 16), dt.FP32, (32, 32))
    with pytest.raises(RuntimeSimError, match="no address"):
        a.view(MemRef(MemorySpace.Vec, 1, 4096, -1), dt.FP32, (32, 32))
    with pytest.raises(RuntimeSimError, match="needs 4096 bytes"):
        a.view(MemRef(MemorySpace.Vec, 1, 1024, 0), dt.FP32, (32, 32))


def test_tile_nbytes() -> None:
    assert tile_nbytes(dt.FP32, (16, 32)) == 2048
    assert tile_nbytes(dt.FP16, (16, 32)) == 1024
    assert tile_nbytes(dt.FP4, (16, 32)) == 256
    assert tile_nbytes(dt.BOOL, (16, 64)) == 1024   # one byte per element, as memory planning sizes it


def test_device_cores() -> None:
    d = SimDevice(BackendType.Ascend950)
    assert d.num_cores("AIC") == 36 and d.num_cores("AIV") == 72
    assert d.arena("AIV", 3) is d.arena("AIV", 3)
    with pytest.raises(IndexError):
        d.arena("AIC", 36)


UNINIT_TEXT = """
import pypto.language as pl

@pl.program
class Uninit:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 64])
        junk = pl.create_tile([16, 64], dtype=pl.FP32)
        s = pl.add(t, junk)
        c = pl.store(s, [0, 0], c)
        return c
"""


def test_reading_a_never_written_tile_shows_in_the_numbers() -> None:
    """Without the sanitizer, a tile that was created but never written does not read as zeros
    (which would hide the bug): the sum is NaN."""
    import pypto.language as pl
    from pypto import ir

    compiled = ir.compile(pl.parse(UNINIT_TEXT), dump_passes=False, skip_ptoas=True)
    a, c = torch.randn(16, 64), torch.zeros(16, 64)
    compiled(a, c)
    assert torch.isnan(c).all()
