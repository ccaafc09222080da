"""`DeviceTensor`: a tensor resident in a chip's memory (User Manual "Running on Device"; SPEC §7).

A `ChipWorker` allocates them (`alloc_tensor`) and frees them (`free_tensor`, or all at
`close()`). A DeviceTensor can be passed wherever a kernel takes a tensor — a `@pl.jit` call, a
`CompiledProgram` call, a registered handle — and is used in place: no host copy is made, Out and
InOut results land in it and stay resident for the next call. On the simulator the chip's DDR is
host memory, so `tensor` is the resident buffer itself.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["DeviceTensor", "is_device_tensor"]


class DeviceTensor:
    """A tensor resident in the device memory of a `ChipWorker`.

    Attributes:
        shape (torch.Size), dtype (torch dtype), worker (the owning ChipWorker, or None), freed.

    Raises:
        RuntimeError: any use of the data after `free_tensor` / `ChipWorker.close()`.
    """

    __slots__ = ("_tensor", "_worker", "_freed", "shape", "dtype")

    def __init__(self, tensor: torch.Tensor, worker: Any = None) -> None:
        self._tensor = tensor
        self._worker = worker
        self._freed = False
        self.shape = tensor.shape
        self.dtype = tensor.dtype

    def __repr__(self) -> str:
        state = ", freed" if self._freed else ""
        platform = getattr(getattr(self._worker, "config", None), "platform", None)
        where = f", platform={platform!r}" if platform else ""
        return f"DeviceTensor(shape={list(self.shape)}, dtype={self.dtype}{where}{state})"

    @property
    def worker(self) -> Any:
        """The ChipWorker that allocated it (None for a tensor made outside a worker)."""
        return self._worker

    @property
    def freed(self) -> bool:
        """True once `free_tensor` (or the worker's `close`) released it."""
        return self._freed

    @property
    def tensor(self) -> torch.Tensor:
        """The resident buffer. Raises RuntimeError once freed."""
        if self._freed:
            raise RuntimeError(f"{self!r} was freed; allocate a new one with ChipWorker.alloc_tensor")
        return self._tensor

    def dim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    def numel(self) -> int:
        """Number of elements. Raises RuntimeError once freed."""
        return self.tensor.numel()

    def to_host(self) -> torch.Tensor:
        """A host copy of the contents (a new torch tensor)."""
        return self.tensor.clone()

    def copy_from(self, src: torch.Tensor) -> DeviceTensor:
        """Overwrite the contents with host tensor `src` (same shape; values converted to `dtype`).

        Raises:
            ValueError: a shape mismatch. TypeError: `src` is not a tensor.
        """
        if not isinstance(src, torch.Tensor):
            raise TypeError(f"copy_from expects a torch.Tensor, got {type(src).__name__}")
        if tuple(src.shape) != tuple(self.shape):
            raise ValueError(f"copy_from: shape {list(src.shape)} differs from the device tensor's "
                             f"{list(self.shape)}")
        self.tensor.copy_(src.detach())
        return self

    def _release(self) -> None:
        self._freed = True
        self._tensor = torch.empty(0, dtype=self.dtype)


def is_device_tensor(x: Any) -> bool:
    """True for a `DeviceTensor`."""
    return isinstance(x, DeviceTensor)
