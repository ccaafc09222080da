"""Per-core on-chip memory of the simulated chip (DESIGN idea 5: tiles live at planned addresses).

A `CoreArena` holds one `torch.uint8` buffer per on-chip memory space (Vec, Mat, Left, Right, Acc,
Bias), each `soc.physical[space]` bytes, allocated lazily on first use and filled with
`UNINIT_BYTE` (0xFF: NaN in every float format, -1 in signed integers), so a kernel that reads a
tile it never wrote — which on the chip would see whatever an earlier task left there — gets
conspicuous values instead of convenient zeros (the sanitizer names such reads). Every tile of
a lowered kernel is a typed view into these bytes at its MemRef's address, so two tiles whose
address ranges overlap see each other's writes, exactly as on the hardware: a wrong address or a
wrong buffer reuse by the compiler produces wrong numbers here too.

For simplicity every simulated core owns every on-chip space; which spaces a kernel may use is the
compiler's business (see `KernelExecutor.core_type`).

The memories of all cores of one type may live in one `ChipMemory`: one `[cores, bytes]` tensor per
space whose row `i` is core `i`'s memory. The tiles of one address on several cores are then one
strided view with a leading *lane* axis (`ChipMemory.lanes`), which is how independent tasks of one
kernel run together (`batch.py`) while every byte stays where a one-at-a-time run puts it.
"""

from __future__ import annotations

from typing import Any

import torch

from ...backend.soc import SoCModel
from ...core.dtype import DataType
from ...core.enums import MemorySpace
from ...core.errors import RuntimeSimError
from ...core.span import Span
from ...ir.types import MemRef

__all__ = ["CoreArena", "ChipMemory", "tile_nbytes", "view_shape", "UNINIT_BYTE"]

UNINIT_BYTE = 0xFF   # the contents of on-chip memory no task has written yet


def _torch_dtype(dtype: DataType) -> Any:
    tdt = dtype.value_torch()
    if tdt is None:
        raise RuntimeSimError(f"tiles of type {dtype.name} cannot be simulated: torch has no such dtype")
    return tdt


def view_shape(dtype: DataType, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Shape of the torch view holding a tile of `dtype` and logical `shape`: `shape`, except for
    the packed 4-bit types, whose view is their raw bytes (uint8) with the innermost dimension
    halved (`DataType.host_shape`; `pypto.core.packed` decodes them).

    Raises:
        RuntimeSimError: if the dtype cannot be simulated, or a packed type has an odd innermost
            dimension.
    """
    _torch_dtype(dtype)
    try:
        return dtype.host_shape(shape)
    except ValueError as err:
        raise RuntimeSimError(str(err)) from None


def tile_nbytes(dtype: DataType, shape: tuple[int, ...]) -> int:
    """Bytes occupied by a dense tile of `dtype` and logical `shape` (`DataType.storage_bytes`)."""
    n = 1
    for d in shape:
        n *= d
    return dtype.storage_bytes(n)


class CoreArena:
    """The on-chip memories of one simulated AI core.

    Args:
        soc: SoC model giving `physical[space]` (bytes) and the address `alignment` (bytes).
        core_type: "AIC" or "AIV" (informational).
        index: core index within its type.
        chip: the `ChipMemory` of this core type whose row `index` holds this core's bytes, or None
            for memories of its own.
    """

    def __init__(self, soc: SoCModel, core_type: str, index: int, chip: ChipMemory | None = None) -> None:
        self.soc = soc
        self.core_type = core_type
        self.index = index
        self.chip = chip
        self._buffers: dict[MemorySpace, torch.Tensor] = {}

    def __repr__(self) -> str:
        return f"CoreArena({self.core_type}{self.index})"

    def buffer(self, space: MemorySpace) -> torch.Tensor:
        """The raw `uint8` bytes of `space` (allocated on first use, every byte `UNINIT_BYTE`).

        Raises:
            RuntimeSimError: for DDR or a space the SoC has no such memory for.
        """
        buf = self._buffers.get(space)
        if buf is None:
            size = self.soc.physical.get(space)
            if size is None:
                raise RuntimeSimError(f"memory space {space.name} is not an on-chip memory of "
                                      f"{self.soc.backend.name}")
            if self.chip is not None:
                buf = self.chip.rows(space)[self.index]
                buf.fill_(UNINIT_BYTE)
            else:
                buf = torch.full((size,), UNINIT_BYTE, dtype=torch.uint8)
            self._buffers[space] = buf
        return buf

    def view(self, memref: MemRef, dtype: DataType, shape: tuple[int, ...], what: str = "tile",
             span: Span | None = None) -> torch.Tensor:
        """A typed view of `shape`/`dtype` at `memref.addr` inside `memref.memory_space` (for a
        packed 4-bit type, the uint8 view of its bytes, see `view_shape`).

        Writes through the view change the arena bytes (and every other view over them).

        Raises:
            RuntimeSimError: naming `what` if the address is unset (-1), misaligned, the tile does
                not fit its MemRef's `size`, or it extends past the end of the physical memory.
        """
        space, addr = memref.memory_space, memref.addr
        nbytes = tile_nbytes(dtype, shape)
        if addr < 0:
            raise RuntimeSimError(f"{what} has no address in {space.name} (memory planning did not "
                                  f"run: AllocateMemoryAddr assigns one)", span)
        if addr % self.soc.alignment:
            raise RuntimeSimError(f"{what} address {addr} in {space.name} is not "
                                  f"{self.soc.alignment}-byte aligned", span)
        if nbytes > memref.size:
            raise RuntimeSimError(f"{what} needs {nbytes} bytes but its MemRef (id {memref.id}) has "
                                  f"only {memref.size}", span)
        buf = self.buffer(space)
        if addr + nbytes > buf.numel():
            raise RuntimeSimError(f"{what} at [{addr}, {addr + nbytes}) exceeds the {buf.numel()} "
                                  f"bytes of {space.name} on {self.soc.backend.name}", span)
        vshape = view_shape(dtype, shape)
        raw = buf[addr:addr + nbytes]
        return (raw if dtype.is_packed() else raw.view(_torch_dtype(dtype))).view(vshape)


class ChipMemory:
    """The on-chip memories of every core of one type: per space a `torch.uint8` tensor of shape
    [num_cores, soc.physical[space]] (allocated on first use, uninitialised: a `CoreArena` fills
    its row with `UNINIT_BYTE` when it first uses it).

    Args:
        soc: the SoC model. num_cores: cores of this type.
    """

    def __init__(self, soc: SoCModel, num_cores: int) -> None:
        self.soc = soc
        self.num_cores = num_cores
        self._rows: dict[MemorySpace, torch.Tensor] = {}

    def rows(self, space: MemorySpace) -> torch.Tensor:
        """The [num_cores, bytes] tensor of `space` (row i: core i's bytes)."""
        r = self._rows.get(space)
        if r is None:
            r = self._rows[space] = torch.empty((self.num_cores, self.soc.physical[space]), dtype=torch.uint8)
        return r

    def lanes(self, memref: MemRef, dtype: DataType, shape: tuple[int, ...], cores: range) -> torch.Tensor:
        """The tile of `dtype`/`shape` at `memref.addr` on each core of `cores` (a range with a
        positive step) as one view of shape [len(cores), *view_shape(dtype, shape)]: lane k is the
        view `CoreArena.view` gives on core `cores[k]` (same bytes). The caller has checked the
        tile on one core (`CoreArena.view` raises for a bad address); packed 4-bit types are not
        offered (their views are bytes)."""
        addr, nbytes = memref.addr, tile_nbytes(dtype, shape)
        raw = self.rows(memref.memory_space)[cores.start:cores.stop:cores.step, addr:addr + nbytes]
        return raw.view(_torch_dtype(dtype)).view((len(cores), *view_shape(dtype, shape)))
