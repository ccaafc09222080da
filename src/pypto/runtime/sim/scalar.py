"""Scalar semantics of the simulator: what `BinaryExpr` / `UnaryExpr` compute (SPEC §4).

Scalars are Python numbers at run time (`int` for integer, INDEX and TASK_ID types, `float` for
floating types, `bool` for BOOL). `binary_fn(op)` / `unary_fn(op)` give the Python function of an
IR operator name; `normalizer(dtype)` gives the function that brings a Python result into the value
set of `dtype`:

- signed/unsigned integers of 4..64 bits wrap around modulo 2**bits (two's complement); INDEX is a
  64-bit signed index and wraps the same way; float-to-int conversion truncates toward zero (C casts);
- FP32 / FP16 results are rounded to the nearest representable value (round-half-even); BF16 and the
  FP8 formats round through torch, FP4 through `pypto.core.packed` (nearest-even, saturating);
- BOOL results become `bool`.

Integer `floordiv` / `floormod` follow Python (floor) semantics. A float division by zero gives
±inf or nan as IEEE hardware does; an integer division by zero raises ZeroDivisionError, which the
interpreter reports as a `RuntimeSimError` at the expression's location.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Callable
from typing import Any

from ...core.dtype import DataType, DTypeKind

__all__ = ["binary_fn", "unary_fn", "normalizer", "INT_CLOSED_OPS"]

# Ops whose result is an int whenever both operands are ints (no normalisation needed for INDEX).
INT_CLOSED_OPS = frozenset({"add", "sub", "mul", "floordiv", "floormod", "min", "max",
                            "bit_and", "bit_or", "bit_xor", "shl", "shr"})


def _truediv(a: Any, b: Any) -> float:
    """IEEE division: x/0 is ±inf, 0/0 and nan/0 are nan."""
    if b == 0:
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, float(b))
    return a / b


def _floordiv(a: Any, b: Any) -> Any:
    if b == 0 and (isinstance(a, float) or isinstance(b, float)):
        return _truediv(a, b)
    return a // b


def _floormod(a: Any, b: Any) -> Any:
    if b == 0 and (isinstance(a, float) or isinstance(b, float)):
        return math.nan
    return a % b


#  IR name     Python semantics
_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "floordiv": _floordiv,
    "floormod": _floormod,
    "truediv": _truediv,
    "pow": operator.pow,
    "eq": operator.eq,
    "ne": operator.ne,
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "and": lambda a, b: bool(a) and bool(b),
    "or": lambda a, b: bool(a) or bool(b),
    "bit_and": operator.and_,
    "bit_or": operator.or_,
    "bit_xor": operator.xor,
    "shl": operator.lshift,
    "shr": operator.rshift,
    "min": min,
    "max": max,
}

#  IR name     Python semantics ("cast" is the identity here; `normalizer` does the conversion)
_UNARY: dict[str, Callable[[Any], Any]] = {
    "neg": operator.neg,
    "not": operator.not_,
    "bit_not": operator.invert,
    "abs": abs,
    "cast": lambda x: x,
}


def binary_fn(op: str) -> Callable[[Any, Any], Any]:
    """Python function of binary operator `op`. Raises KeyError naming an unknown operator."""
    try:
        return _BINARY[op]
    except KeyError:
        raise KeyError(f"the simulator has no semantics for binary operator {op!r}") from None


def unary_fn(op: str) -> Callable[[Any], Any]:
    """Python function of unary operator `op`. Raises KeyError naming an unknown operator."""
    try:
        return _UNARY[op]
    except KeyError:
        raise KeyError(f"the simulator has no semantics for unary operator {op!r}") from None


def _wrap_int(bits: int, signed: bool) -> Callable[[Any], int]:
    mod = 1 << bits
    half = 1 << (bits - 1)

    def norm(x: Any) -> int:
        if isinstance(x, float):
            if x != x or x in (math.inf, -math.inf):
                raise ValueError(f"cannot convert {x} to an integer")
            x = math.trunc(x)
        x = int(x)
        if signed:
            return ((x + half) % mod) - half
        return x % mod

    return norm


def _fp32(x: Any) -> float:
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:  # beyond the FP32 range: IEEE rounding gives ±inf
        return math.copysign(math.inf, x)


def _fp16(x: Any) -> float:
    try:
        return struct.unpack("e", struct.pack("e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _via_torch(dtype: DataType) -> Callable[[Any], float]:
    import torch

    tdt = dtype.to_torch()

    def norm(x: Any) -> float:
        return float(torch.tensor(float(x), dtype=torch.float64).to(tdt).item())

    return norm


def _via_packed(dtype: DataType) -> Callable[[Any], float]:
    import torch

    from ...core import packed

    def norm(x: Any) -> float:
        return float(packed.quantize(torch.tensor([float(x)]), dtype)[0])

    return norm


def normalizer(dtype: DataType) -> Callable[[Any], Any]:
    """Function mapping a Python result into the value set of `dtype` (see the module doc).

    Raises:
        TypeError: for a dtype without scalar semantics here (HF4/HF8).
    """
    kind = dtype.kind
    if kind is DTypeKind.BOOL:
        return bool
    if kind in (DTypeKind.SINT, DTypeKind.UINT, DTypeKind.INDEX, DTypeKind.TASK_ID):
        return _wrap_int(dtype.bits, kind is not DTypeKind.UINT)
    if dtype.bits == 32:
        return _fp32
    if dtype.name == "FP16":
        return _fp16
    if dtype.value_torch() is None:
        raise TypeError(f"scalars of type {dtype.name} have no torch equivalent; cannot simulate")
    if dtype.is_packed():
        return _via_packed(dtype)
    return _via_torch(dtype)
