"""The C ABI of hand-written kernels, from Python (SPEC §10; `pypto/include/pypto_kernel.h`).

`extern "C" void kernel_entry(int64_t* args)`: `args[i]` follows the declared parameter order —
a tensor is the address of a `pypto_tensor` descriptor (`TensorDesc`: data pointer, dtype code,
rank, shape, strides in elements), a scalar its value as int64 (a float scalar: the bits of a
double). `KernelLibrary` loads a built library with `ctypes`, checks that it was compiled against
this ABI, and calls it with torch tensors (host memory: the simulator's DDR) and numbers; block and
sub-block ids go in first through the library's exported `pypto_runtime_set_block`.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from ...core.dtype import dtype_from_torch

__all__ = ["MAX_RANK", "ABI_VERSION", "TensorDesc", "KernelLibrary", "load_library", "scalar_word"]

MAX_RANK = 8
ABI_VERSION = 1


class TensorDesc(ctypes.Structure):
    """`pypto_tensor` of pypto_kernel.h (144 bytes)."""

    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK), ("strides", ctypes.c_int64 * MAX_RANK)]


def describe(t: torch.Tensor) -> TensorDesc:
    """The descriptor of torch tensor `t` (a view keeps its offset and strides).

    Raises:
        ValueError: a tensor of more than MAX_RANK dimensions or a dtype without a PyPTO code.
    """
    if t.dim() > MAX_RANK:
        raise ValueError(f"a tensor of rank {t.dim()} exceeds the external-kernel ABI's {MAX_RANK} dimensions")
    d = TensorDesc()
    d.data = t.data_ptr()
    d.dtype = dtype_from_torch(t.dtype).code
    d.rank = t.dim()
    for i, (n, s) in enumerate(zip(t.shape, t.stride())):
        d.shape[i], d.strides[i] = int(n), int(s)
    return d


def scalar_word(v: Any) -> int:
    """A scalar argument as the int64 the kernel reads (a float: the bits of a double)."""
    if isinstance(v, torch.Tensor):
        v = v.item()
    if isinstance(v, float):
        return struct.unpack("<q", struct.pack("<d", v))[0]
    return int(v)


class KernelLibrary:
    """A loaded kernel library: `call(args, block)` runs `kernel_entry` once.

    Raises (constructor):
        OSError: the file cannot be loaded.
        ValueError: it has no `kernel_entry`, or was not compiled with this pypto_kernel.h ABI.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lib = ctypes.CDLL(str(path), mode=getattr(ctypes, "RTLD_LOCAL", 0))
        try:
            self.entry = self.lib.kernel_entry
        except AttributeError:
            raise ValueError(f"{path} defines no extern \"C\" void kernel_entry(int64_t* args)") from None
        self.entry.restype = None
        self.entry.argtypes = [ctypes.POINTER(ctypes.c_int64)]
        try:
            abi, self.set_block = self.lib.pypto_runtime_abi, self.lib.pypto_runtime_set_block
            self.error, self.clear = self.lib.pypto_runtime_error, self.lib.pypto_runtime_clear_error
        except AttributeError:
            raise ValueError(f"{path} was not built with pypto_kernel.h (#include \"pypto_kernel.h\" in the "
                             f"kernel source: it provides the runtime's block ids and error reporting)") from None
        abi.restype = ctypes.c_int64
        want = ABI_VERSION * 1000 + ctypes.sizeof(TensorDesc)
        if abi() != want:
            raise ValueError(f"{path} was built with another pypto_kernel.h ABI ({abi()}, expected {want})")
        self.set_block.argtypes = [ctypes.c_int64] * 4
        self.set_block.restype = None
        self.error.restype = ctypes.c_char_p
        self.clear.restype = None

    def call(self, args: Sequence[Any], block: tuple[int, int, int, int]) -> str | None:
        """Run `kernel_entry` on `args` (torch tensors, numbers) as block `block` = (index, count,
        sub-block index, sub-block count); returns the first error the kernel's helpers recorded."""
        descs = [describe(a) if isinstance(a, torch.Tensor) else None for a in args]
        words = (ctypes.c_int64 * max(1, len(args)))()
        for i, (a, d) in enumerate(zip(args, descs)):
            words[i] = ctypes.addressof(d) if d is not None else scalar_word(a)
        self.clear()
        self.set_block(*block)
        self.entry(words)
        err = self.error()
        return err.decode(errors="replace") if err else None


_LOADED: dict[Path, KernelLibrary] = {}


def load_library(path: Path) -> KernelLibrary:
    """The `KernelLibrary` of `path`, loaded once per process."""
    lib = _LOADED.get(path)
    if lib is None:
        lib = _LOADED[path] = KernelLibrary(path)
    return lib
