"""`DeviceTensor`: a tensor resident in a chip's memory (User Manual "Running on Device"; SPEC §7).

A `ChipWorker` allocates them (`alloc_tensor`) and frees them (`free_tensor`, or all at
`close()`). A DeviceTensor can be passed wherever a kernel takes a tensor — a `@pl.jit` call, a
`CompiledProgram` call, a registered handle — and is used in place: no host copy is made, Out and
InOut results land in it and stay resident for the next call. On the simulator the chip's DDR is
host memory, so `tensor` is the resident buffer itself.

Once freed — by `free_tensor`, or because its worker was closed — any use of the data raises a
`DeviceStateError` (a RuntimeError) that says which of the two happened.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.errors import ArgumentTypeError, ArgumentValueError, DeviceStateError, user_facing

__all__ = ["DeviceTensor", "is_device_tensor"]

#  why a tensor was released   its repr suffix     what using it says
_RELEASED: dict[str, tuple[str, str]] = {
    "freed": (", freed", "was freed with free_tensor(); allocate a new one with ChipWorker.alloc_tensor"),
    "closed": (", worker closed", "is gone: its ChipWorker was closed (close() frees every tensor the "
               "worker allocated). Reopen the worker with init() (or a new `with ChipWorker(...)` "
               "block) and allocate the tensor again with alloc_tensor"),
}


class DeviceTensor:
    """A tensor resident in the device memory of a `ChipWorker`.

    Attributes:
        shape (torch.Size), dtype (torch dtype), worker (the owning ChipWorker, or None), freed.

    Raises:
        DeviceStateError (a RuntimeError): any use of the data after `free_tensor` or after the
            worker's `close()` (the message says which).
    """

    __slots__ = ("_tensor", "_worker", "_released", "shape", "dtype")

    def __init__(self, tensor: torch.Tensor, worker: Any = None) -> None:
        self._tensor = tensor
        self._worker = worker
        self._released: str | None = None
        self.shape = tensor.shape
        self.dtype = tensor.dtype

    def __repr__(self) -> str:
        state = _RELEASED[self._released][0] if self._released else ""
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
        return self._released is not None

    @property
    def release_reason(self) -> str | None:
        """None while usable; "freed" after `free_tensor`, "closed" after the worker's `close()`."""
        return self._released

    def released_message(self) -> str:
        """What using this released tensor says (empty while it is usable)."""
        return f"{self!r} {_RELEASED[self._released][1]}" if self._released else ""

    @property
    @user_facing
    def tensor(self) -> torch.Tensor:
        """The resident buffer. Raises DeviceStateError once freed or once the worker closed."""
        if self._released:
            raise DeviceStateError(self.released_message())
        return self._tensor

    def dim(self) -> int:
        """Number of dimensions."""
        return len(self.shape)

    @user_facing
    def numel(self) -> int:
        """Number of elements. Raises DeviceStateError once released."""
        return self.tensor.numel()

    @user_facing
    def to_host(self) -> torch.Tensor:
        """A host copy of the contents (a new torch tensor). Raises DeviceStateError once released."""
        return self.tensor.clone()

    @user_facing
    def copy_from(self, src: torch.Tensor) -> DeviceTensor:
        """Overwrite the contents with host tensor `src` (same shape; values converted to `dtype`).

        Raises:
            ArgumentValueError (a ValueError): a shape mismatch, or `src` not on the CPU.
            ArgumentTypeError (a TypeError): `src` is not a tensor. DeviceStateError: released.
        """
        if not isinstance(src, torch.Tensor):
            raise ArgumentTypeError(f"copy_from expects a torch.Tensor, got {type(src).__name__}")
        if src.device.type != "cpu":
            raise ArgumentValueError(f"copy_from: the source is a tensor on device '{src.device}', but "
                                     f"the simulator needs CPU tensors")
        if tuple(src.shape) != tuple(self.shape):
            raise ArgumentValueError(f"copy_from: shape {list(src.shape)} differs from the device "
                                     f"tensor's {list(self.shape)}")
        self.tensor.copy_(src.detach())
        return self

    def _release(self, reason: str = "freed") -> None:
        """Drop the buffer; `reason` is "freed" (free_tensor) or "closed" (the worker's close())."""
        self._released = reason
        self._tensor = torch.empty(0, dtype=self.dtype)


def is_device_tensor(x: Any) -> bool:
    """True for a `DeviceTensor`."""
    return isinstance(x, DeviceTensor)
