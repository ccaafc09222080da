"""Per-core arenas: typed views at planned addresses, bounds and alignment checks."""

import pytest
import torch

from pypto.backend import BackendType, get_soc
from pypto.core import dtype as dt
from pypto.core.enums import MemorySpace
from pypto.core.errors import RuntimeSimError
from pypto.ir import MemRef
from pypto.runtime.sim import CoreArena, SimDevice, tile_nbytes

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
    assert a.buffer(MemorySpace.Vec)[64:64 + 256].any() and not a.buffer(MemorySpace.Vec)[:64].any()


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


def test_device_cores() -> None:
    d = SimDevice(BackendType.Ascend950)
    assert d.num_cores("AIC") == 36 and d.num_cores("AIV") == 72
    assert d.arena("AIV", 3) is d.arena("AIV", 3)
    with pytest.raises(IndexError):
        d.arena("AIC", 36)
