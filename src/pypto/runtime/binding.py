"""Host-side argument checking and copying for a program entry (SPEC §7 "host tensors are copied in").

`bind_host_args(func, args)` checks user arguments against the entry's parameter types and returns
fresh, contiguous device-side copies, so a failed run never touches the user's tensors:

- a `TensorType` parameter takes a `torch.Tensor` of the same dtype and rank; static dimensions must
  match exactly; a dynamic dimension (a Var, `pl.dynamic("M")`) accepts any size but must have the
  same size wherever the same dimension name appears;
- a `ScalarType` parameter takes a Python number (or a 0-d tensor): ints for integer types (range
  checked), ints or floats for float types, bools or ints for BOOL;
- a `DeviceTensor` (resident in device memory, see `ChipWorker`) is checked the same way but used
  in place: its resident buffer is the device value, no copy is made.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import torch

from ..core.dtype import DataType
from ..ir.expr import ConstInt, Var
from ..ir.function import Function
from ..ir.types import ScalarType, TensorType
from .device_tensor import DeviceTensor
from .sim import scalar

__all__ = ["bind_host_args", "to_device_tensor"]


def _shape_str(shape: Any) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _expected_shape(t: TensorType) -> str:
    return _shape_str(d.value if isinstance(d, ConstInt) else getattr(d, "name", "?") for d in t.shape)


def to_device_tensor(t: torch.Tensor) -> torch.Tensor:
    """A fresh contiguous CPU copy of `t` (the simulator's DDR buffer for it)."""
    out = torch.empty(tuple(t.shape), dtype=t.dtype)
    out.copy_(t.detach())
    return out


def _check_tensor(func: Function, name: str, t: TensorType, a: Any, dims: dict[str, tuple[int, str]]) -> None:
    where = f"argument '{name}' of '{func.name}'"
    if not isinstance(a, torch.Tensor):
        raise TypeError(f"{where} must be a torch.Tensor or a DeviceTensor, got {type(a).__name__}")
    want = t.dtype.to_torch()   # TypeError for dtypes torch lacks (HF4, HF8)
    if a.dtype != want:
        raise TypeError(f"{where} has dtype {a.dtype}, expected {want} ({t.dtype.name})")
    if a.dim() != len(t.shape):
        raise ValueError(f"{where} has shape {_shape_str(a.shape)} ({a.dim()}-D), expected "
                         f"{_expected_shape(t)} ({len(t.shape)}-D)")
    for axis, (d, n) in enumerate(zip(t.shape, a.shape)):
        if isinstance(d, ConstInt):
            if d.value != n:
                raise ValueError(f"{where} has shape {_shape_str(a.shape)}, expected {_expected_shape(t)}")
        elif isinstance(d, Var):
            seen = dims.get(d.name)
            if seen is None:
                dims[d.name] = (n, name)
            elif seen[0] != n:
                raise ValueError(f"{where}: dynamic dimension '{d.name}' (axis {axis}) is {n}, but it is "
                                 f"{seen[0]} in argument '{seen[1]}'")


def _check_scalar(func: Function, name: str, dtype: DataType, a: Any) -> Any:
    where = f"argument '{name}' of '{func.name}'"
    if isinstance(a, torch.Tensor) and a.dim() == 0:
        a = a.item()
    if not isinstance(a, numbers.Number) or isinstance(a, complex):
        raise TypeError(f"{where} must be a number ({dtype.name} scalar), got {type(a).__name__}")
    if (dtype.is_int() or dtype.is_bool()) and not isinstance(a, numbers.Integral):
        raise TypeError(f"{where} must be an integer ({dtype.name} scalar), got {a!r}")
    v = scalar.normalizer(dtype)(a)
    if (dtype.is_int() or dtype.is_bool()) and v != a:
        raise ValueError(f"{where} = {a} is out of range for {dtype.name}")
    return v


def bind_host_args(func: Function, args: Sequence[Any]) -> list[Any]:
    """Check `args` against `func`'s parameters; return device-side values (tensor copies, numbers).

    Raises:
        TypeError: wrong argument count, a non-tensor for a tensor, a wrong dtype, a non-number for
            a scalar (the message names the parameter).
        ValueError: a wrong rank or static dimension, an inconsistent dynamic dimension, or an
            integer scalar out of range (the message names the parameter).
    """
    params = func.params
    if len(args) != len(params):
        raise TypeError(f"'{func.name}' takes {len(params)} arguments ({', '.join(p.name for p in params)}), "
                        f"got {len(args)}")
    dims: dict[str, tuple[int, str]] = {}
    out: list[Any] = []
    for p, a in zip(params, args):
        t = p.type
        if isinstance(t, TensorType) and isinstance(a, DeviceTensor):
            resident = a.tensor   # RuntimeError once freed
            _check_tensor(func, p.name, t, resident, dims)
            out.append(resident)
        elif isinstance(t, TensorType):
            _check_tensor(func, p.name, t, a, dims)
            out.append(to_device_tensor(a))
        elif isinstance(t, ScalarType):
            out.append(_check_scalar(func, p.name, t.dtype, a))
        else:
            raise TypeError(f"parameter '{p.name}' of '{func.name}' has type {type(t).__name__}, which "
                            f"cannot be passed from the host")
    return out
