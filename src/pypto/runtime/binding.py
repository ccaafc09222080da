"""Host-side argument checking and copying for a program entry (SPEC §7 "host tensors are copied in").

`bind_call_args(func, args, kwargs)` matches a call's positional and keyword arguments to the
entry's parameters by name, as a Python call does. `bind_host_args(func, args)` checks them against
the parameter types and returns fresh, contiguous device-side copies, so a failed run never touches
the user's tensors; `check_host_args` checks without copying:

- a `TensorType` parameter takes a CPU `torch.Tensor` of the same dtype and rank; static dimensions
  must match exactly (a packed 4-bit type's host tensor holds two values per element, so its
  innermost dimension is half the declared one: FP4 `[16, 64]` is a `float4_e2m1fn_x2` `[16, 32]`;
  the device copy is unpacked, docs/language.md "Sub-byte and boolean data types"); a dynamic
  dimension (a Var, `pl.dynamic("M")`) accepts any size but must have
  the same size wherever the same dimension name appears; a tensor on another device ("meta",
  "cuda", ...) is refused (the simulator's DDR is host memory);
- a `ScalarType` parameter takes a Python number (or a 0-d tensor): ints for integer types (range
  checked), ints or floats for float types, bools or ints for BOOL;
- a `DeviceTensor` (resident in device memory, see `ChipWorker`) is checked the same way but used
  in place: its resident buffer is the device value, no copy is made.

Every error is an `ArgumentTypeError` / `ArgumentValueError` (`pypto.core.errors`, also a
TypeError / ValueError) naming the parameter and the function; one about a single argument also
carries a note (`PyPTOError.notes`) at the parameter's declaration when the program came from source.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ..core import packed
from ..core.dtype import DataType
from ..core.enums import ParamDirection
from ..core.errors import ArgumentTypeError, ArgumentValueError, PyPTOError
from ..ir.expr import ConstInt, Var
from ..ir.function import Function
from ..ir.types import ScalarType, TensorType
from .device_tensor import DeviceTensor
from .sim import scalar

__all__ = ["bind_call_args", "bind_host_args", "check_host_args", "check_on_cpu", "to_device_tensor",
           "to_host_storage"]


def _shape_str(shape: Any) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _expected_shape(t: TensorType) -> str:
    return _shape_str(d.value if isinstance(d, ConstInt) else getattr(d, "name", "?") for d in t.shape)


def _names(func: Function) -> str:
    return ", ".join(p.name for p in func.params)


def to_device_tensor(t: torch.Tensor, dtype: DataType | None = None) -> torch.Tensor:
    """A fresh contiguous CPU copy of `t` (the simulator's DDR buffer for it); a host tensor of a
    packed 4-bit `dtype` is unpacked to its logical shape (`pypto.core.packed`)."""
    if dtype is not None and dtype.is_packed():
        return packed.decode(t.detach().contiguous(), dtype)
    out = torch.empty(tuple(t.shape), dtype=t.dtype)
    out.copy_(t.detach())
    return out


def to_host_storage(value: torch.Tensor, dtype: DataType) -> torch.Tensor:
    """The host form of device tensor `value` of `dtype`: packed for a packed 4-bit type (as
    `dtype.to_torch()`), else `value` itself. Used to copy Out / InOut results back."""
    if dtype.is_packed():
        return packed.encode(value, dtype).view(dtype.to_torch())
    return value


def _host_dtype(where: str, dtype: DataType) -> torch.dtype:
    """The torch dtype of host tensors of `dtype`, or a clear ArgumentTypeError (SPEC §2.1)."""
    want = dtype.to_torch(strict=False)
    if want is not None:
        return want
    if dtype.value_torch() is not None:   # INT4 / UINT4: torch has no usable 4-bit integer dtype
        hint = (f"torch has no usable 4-bit integer dtype; pass INT8 (or FP16) and convert "
                f"inside the kernel with pl.cast(t, pl.{dtype.name})")
    else:
        hint = "torch has no such dtype, so the simulator cannot hold or compute its values"
    raise ArgumentTypeError(f"{where} is declared {dtype.name}, which cannot be passed from the host: "
                            f"{hint}")


def check_on_cpu(where: str, t: Any) -> None:
    """Raise ArgumentValueError when torch tensor `t` (described by `where`, e.g. "argument 'a' of
    'k'") is not on the CPU: the simulator reads and writes host memory."""
    if not isinstance(t, torch.Tensor) or t.device.type == "cpu":
        return
    hint = ("a 'meta' tensor has shape and dtype but no data; create it on the CPU"
            if t.device.type == "meta" else "copy it with .cpu() and copy results back yourself")
    raise ArgumentValueError(f"{where} is a tensor on device '{t.device}', but the simulator needs CPU "
                             f"tensors ({hint})")


def bind_call_args(func: Function, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
    """The positional argument tuple of a call of `func` with `args` and keyword `kwargs`, matched
    by parameter name as a Python call is.

    Raises:
        ArgumentTypeError: too many positional arguments, a keyword that names no parameter, a
            parameter given twice, or a parameter given not at all (the message names it).
    """
    params = [p.name for p in func.params]
    if not kwargs:
        if len(args) != len(params):
            raise ArgumentTypeError(f"'{func.name}' takes {len(params)} arguments ({_names(func)}), "
                                    f"got {len(args)}")
        return tuple(args)
    if len(args) > len(params):
        raise ArgumentTypeError(f"'{func.name}' takes {len(params)} arguments ({_names(func)}), "
                                f"got {len(args)} positional")
    values = dict(zip(params, args))
    for name, v in kwargs.items():
        if name not in params:
            raise ArgumentTypeError(f"'{func.name}' got an unexpected keyword argument {name!r}; its "
                                    f"parameters are {_names(func)}")
        if name in values:
            raise ArgumentTypeError(f"'{func.name}' got multiple values for argument {name!r}")
        values[name] = v
    missing = [p for p in params if p not in values]
    if missing:
        raise ArgumentTypeError(f"'{func.name}' is missing argument(s) {', '.join(map(repr, missing))} "
                                f"(it takes {_names(func)})")
    return tuple(values[p] for p in params)


def _check_tensor(func: Function, name: str, t: TensorType, a: Any, dims: dict[str, tuple[int, str]]) -> None:
    where = f"argument '{name}' of '{func.name}'"
    if not isinstance(a, torch.Tensor):
        raise ArgumentTypeError(f"{where} must be a torch.Tensor or a DeviceTensor, got {type(a).__name__}")
    check_on_cpu(where, a)
    want = _host_dtype(where, t.dtype)
    if a.dtype != want:
        raise ArgumentTypeError(f"{where} has dtype {a.dtype}, expected {want} ({t.dtype.name})")
    if a.dim() != len(t.shape):
        raise ArgumentValueError(f"{where} has shape {_shape_str(a.shape)} ({a.dim()}-D), expected "
                                 f"{_expected_shape(t)} ({len(t.shape)}-D)")
    shape, note = t.dtype.logical_shape(tuple(a.shape)), ""
    if t.dtype.is_packed() and shape:   # host storage packs two values per element
        note = (f" (logical shape {_shape_str(shape)}: each {want} element holds two {t.dtype.name} "
                f"values, so a tensor declared [.., n] is stored as [.., n/2])")
    for axis, (d, n) in enumerate(zip(t.shape, shape)):
        if isinstance(d, ConstInt):
            if d.value != n:
                raise ArgumentValueError(f"{where} has shape {_shape_str(a.shape)}{note}, expected "
                                         f"{_expected_shape(t)}")
        elif isinstance(d, Var):
            seen = dims.get(d.name)
            if seen is None:
                dims[d.name] = (n, name)
            elif seen[0] != n:
                raise ArgumentValueError(f"{where}: dynamic dimension '{d.name}' (axis {axis}) is {n}, "
                                         f"but it is {seen[0]} in argument '{seen[1]}'")


def _check_writable(func: Function, p: Var, a: torch.Tensor) -> None:
    """An Out/InOut host tensor must own each of its elements: the run's results are copied back
    into it, which a broadcast view (`expand`, a stride of 0 over more than one element) cannot
    take."""
    if func.param_directions[func.params.index(p)] is ParamDirection.In:
        return
    for axis, (n, st) in enumerate(zip(a.shape, a.stride())):
        if st == 0 and n > 1:
            raise ArgumentValueError(
                f"argument '{p.name}' of '{func.name}' is written by the program, but its {n} elements "
                f"along axis {axis} share one memory location (stride 0: a broadcast view such as "
                f"`expand`); pass a tensor that owns its elements (e.g. `.clone()` or `.contiguous()`)")


def _check_scalar(func: Function, name: str, dtype: DataType, a: Any) -> Any:
    where = f"argument '{name}' of '{func.name}'"
    if isinstance(a, torch.Tensor) and a.dim() == 0:
        check_on_cpu(where, a)
        a = a.item()
    if not isinstance(a, numbers.Number) or isinstance(a, complex):
        raise ArgumentTypeError(f"{where} must be a number ({dtype.name} scalar), got {type(a).__name__}")
    if (dtype.is_int() or dtype.is_bool()) and not isinstance(a, numbers.Integral):
        raise ArgumentTypeError(f"{where} must be an integer ({dtype.name} scalar), got {a!r}")
    v = scalar.normalizer(dtype)(a)
    if (dtype.is_int() or dtype.is_bool()) and v != a:
        raise ArgumentValueError(f"{where} = {a} is out of range for {dtype.name}")
    return v


def _bind(func: Function, args: Sequence[Any], copy: bool) -> list[Any]:
    params = func.params
    if len(args) != len(params):
        raise ArgumentTypeError(f"'{func.name}' takes {len(params)} arguments ({_names(func)}), "
                                f"got {len(args)}")
    dims: dict[str, tuple[int, str]] = {}
    out: list[Any] = []
    for p, a in zip(params, args):
        try:
            out.append(_bind_one(func, p, a, dims, copy))
        except (ArgumentTypeError, ArgumentValueError) as e:
            raise _with_declaration(e, func, p) from None
    return out


def _with_declaration(e: ArgumentTypeError | ArgumentValueError, func: Function, p: Var) -> PyPTOError:
    """`e` (same class and message) with a note at parameter `p`'s declaration in the source."""
    if p.span is None or not p.span.is_known():
        return e
    note = (p.span, f"parameter '{p.name}' of '{func.name}' is declared here")
    return type(e)(e.message, e.span, (*e.notes, note))


def _bind_one(func: Function, p: Var, a: Any, dims: dict[str, tuple[int, str]], copy: bool) -> Any:
    """The device-side value of argument `a` for parameter `p` (see `_bind`)."""
    t = p.type
    if isinstance(t, TensorType) and isinstance(a, DeviceTensor):
        resident = a.tensor   # DeviceStateError once freed
        _check_tensor(func, p.name, t, resident, dims)
        return resident
    if isinstance(t, TensorType):
        _check_tensor(func, p.name, t, a, dims)
        _check_writable(func, p, a)
        return to_device_tensor(a, t.dtype) if copy else a
    if isinstance(t, ScalarType):
        return _check_scalar(func, p.name, t.dtype, a)
    raise ArgumentTypeError(f"parameter '{p.name}' of '{func.name}' has type {type(t).__name__}, "
                            f"which cannot be passed from the host")


def bind_host_args(func: Function, args: Sequence[Any]) -> list[Any]:
    """Check `args` against `func`'s parameters; return device-side values (tensor copies, numbers).

    Raises:
        ArgumentTypeError (a TypeError): wrong argument count, a non-tensor for a tensor, a wrong
            dtype, a non-number for a scalar (the message names the parameter).
        ArgumentValueError (a ValueError): a wrong rank or static dimension, an inconsistent dynamic
            dimension, a tensor not on the CPU, or an integer scalar out of range.
        DeviceStateError (a RuntimeError): a freed DeviceTensor, or one of a closed worker.
    """
    return _bind(func, args, copy=True)


def check_host_args(func: Function, args: Sequence[Any]) -> None:
    """Check `args` as `bind_host_args` does, without copying anything. Raises the same errors."""
    _bind(func, args, copy=False)
