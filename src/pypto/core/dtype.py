"""Scalar element types of PyPTO (SPEC §2.1, Language Guide "Data Types").

Every `DataType` is a singleton created from one table (`_TABLE`): its name, bit width, stable
1-byte code, kind (bool / signed int / unsigned int / float / index / task id) and the name of the
matching torch dtype, if torch has one. Instances are exported as module constants (`FP32`, ...)
and re-exported by `pypto.language` as `pl.FP32`, ....
"""

from __future__ import annotations

import enum
from typing import Any

__all__ = ["DataType", "DTypeKind", "ALL_DTYPES", "dtype_from_name", "dtype_from_torch"]


class DTypeKind(enum.Enum):
    """Broad class of a DataType; drives the predicates and promotion rules."""

    BOOL = "bool"
    SINT = "sint"
    UINT = "uint"
    FLOAT = "float"
    INDEX = "index"
    TASK_ID = "task_id"


class DataType:
    """An element type: bit width, 1-byte code, kind and torch mapping.

    Instances are unique per name, so `is` and `==` agree. Compare them, hash them, print them as
    `pl.<NAME>` (`repr`) or `<name>` (`str`, e.g. `fp32`).
    """

    __slots__ = ("name", "bits", "code", "kind", "_torch_name", "pto_name")

    def __init__(self, name: str, bits: int, code: int, kind: DTypeKind, torch_name: str | None,
                 pto_name: str) -> None:
        self.name = name
        self.bits = bits
        self.code = code
        self.kind = kind
        self._torch_name = torch_name
        self.pto_name = pto_name

    def get_bit(self) -> int:
        """Bit width of one element (BOOL is 1, INT4/FP4 are 4, INDEX is 64)."""
        return self.bits

    def get_byte(self) -> int:
        """Size of one element in bytes, rounded up (sub-byte types report 1)."""
        return (self.bits + 7) // 8

    # ---- storage: the one source of truth for how many bytes elements occupy in memory -------
    @property
    def storage_bits(self) -> int:
        """Bits one element occupies in memory (on-chip buffers, DDR, host storage).

        Equal to `get_bit()` except BOOL, stored one byte per element (0 or 1), as a mask that
        comes from the host or is used by `sel` sits in the Unified Buffer (docs/architecture.md
        "Sub-byte and boolean storage"). The 4-bit types (FP4, INT4, UINT4, HF4) are packed two
        per byte.
        """
        return 8 if self.kind is DTypeKind.BOOL else self.bits

    def is_packed(self) -> bool:
        """True for the 4-bit types stored two elements per byte (FP4, INT4, UINT4, HF4)."""
        return self.storage_bits < 8

    def storage_bytes(self, num_elements: int) -> int:
        """Bytes that `num_elements` densely stored elements occupy (packed types round up)."""
        return (num_elements * self.storage_bits + 7) // 8

    def host_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """Shape of the host (torch) storage of a tensor of logical `shape`: the innermost
        dimension halved for packed types (torch's `float4_e2m1fn_x2` holds two FP4 values per
        element), else `shape`. Raises ValueError for a packed type with an odd innermost
        dimension (a byte would hold half a row)."""
        if not self.is_packed():
            return tuple(shape)
        if not shape or shape[-1] % 2:
            raise ValueError(f"a {self.name} tensor needs an even innermost dimension (two values per "
                             f"byte), got {list(shape)}")
        return tuple(shape[:-1]) + (shape[-1] // 2,)

    def logical_shape(self, host_shape: tuple[int, ...]) -> tuple[int, ...]:
        """The logical shape of a host (torch) tensor of shape `host_shape` holding this type: the
        inverse of `host_shape` (the innermost dimension doubled for packed types)."""
        if not self.is_packed() or not host_shape:
            return tuple(host_shape)
        return tuple(host_shape[:-1]) + (host_shape[-1] * 2,)

    def value_torch(self) -> Any:
        """The torch dtype that holds this type's values one per element, at logical shape: what
        the simulator and the reference scripts compute with. `to_torch()` except for the packed
        types, whose values are held unpacked (FP4 in float32, INT4 in int8, UINT4 in uint8).
        None when the type cannot be simulated (HF4, HF8, TASK_ID)."""
        import torch

        name = _VALUE_TORCH.get(self.name)
        return getattr(torch, name) if name else self.to_torch(strict=False)

    def is_float(self) -> bool:
        return self.kind is DTypeKind.FLOAT

    def is_int(self) -> bool:
        """True for signed, unsigned and INDEX integers (not BOOL)."""
        return self.kind in (DTypeKind.SINT, DTypeKind.UINT, DTypeKind.INDEX)

    def is_signed_int(self) -> bool:
        return self.kind in (DTypeKind.SINT, DTypeKind.INDEX)

    def is_unsigned_int(self) -> bool:
        return self.kind is DTypeKind.UINT

    def is_bool(self) -> bool:
        return self.kind is DTypeKind.BOOL

    def int_range(self) -> tuple[int, int] | None:
        """(lowest, highest) value of an integer type (two's complement for signed, INDEX and
        TASK_ID); None for float and BOOL types."""
        if self.kind is DTypeKind.UINT:
            return 0, (1 << self.bits) - 1
        if self.kind in (DTypeKind.SINT, DTypeKind.INDEX, DTypeKind.TASK_ID):
            return -(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1
        return None

    @property
    def has_torch_dtype(self) -> bool:
        return self.to_torch(strict=False) is not None

    def to_torch(self, strict: bool = True) -> Any:
        """The matching `torch.dtype`.

        Raises:
            TypeError: when torch has no such dtype (HF4, HF8, TASK_ID, sub-byte ints) and `strict`.
        """
        import torch

        dt = getattr(torch, self._torch_name, None) if self._torch_name else None
        if dt is None and strict:
            raise TypeError(
                f"data type {self.name} has no torch equivalent; it cannot be used for host tensors "
                f"or simulated on this machine"
            )
        return dt

    def __repr__(self) -> str:
        return f"pl.{self.name}"

    def __str__(self) -> str:
        return self.name.lower()

    def __reduce__(self) -> tuple:
        return (dtype_from_name, (self.name,))


#      name        bits code  kind              torch name              pto name
_TABLE = [
    ("BOOL", 1, 0x00, DTypeKind.BOOL, "bool", "i1"),
    ("INT4", 4, 0x10, DTypeKind.SINT, None, "i4"),
    ("INT8", 8, 0x11, DTypeKind.SINT, "int8", "i8"),
    ("INT16", 16, 0x12, DTypeKind.SINT, "int16", "i16"),
    ("INT32", 32, 0x13, DTypeKind.SINT, "int32", "i32"),
    ("INT64", 64, 0x14, DTypeKind.SINT, "int64", "i64"),
    ("INDEX", 64, 0x15, DTypeKind.INDEX, "int64", "index"),
    ("UINT4", 4, 0x20, DTypeKind.UINT, None, "ui4"),
    ("UINT8", 8, 0x21, DTypeKind.UINT, "uint8", "ui8"),
    ("UINT16", 16, 0x22, DTypeKind.UINT, "uint16", "ui16"),
    ("UINT32", 32, 0x23, DTypeKind.UINT, "uint32", "ui32"),
    ("UINT64", 64, 0x24, DTypeKind.UINT, "uint64", "ui64"),
    ("FP4", 4, 0x30, DTypeKind.FLOAT, "float4_e2m1fn_x2", "f4E2M1x2"),
    ("FP8E4M3FN", 8, 0x31, DTypeKind.FLOAT, "float8_e4m3fn", "f8E4M3FN"),
    ("FP8E5M2", 8, 0x32, DTypeKind.FLOAT, "float8_e5m2", "f8E5M2"),
    ("FP16", 16, 0x33, DTypeKind.FLOAT, "float16", "f16"),
    ("FP32", 32, 0x34, DTypeKind.FLOAT, "float32", "f32"),
    ("FP8E8M0", 8, 0x36, DTypeKind.FLOAT, "float8_e8m0fnu", "f8E8M0"),
    ("BF16", 16, 0x40, DTypeKind.FLOAT, "bfloat16", "bf16"),
    ("HF4", 4, 0x41, DTypeKind.FLOAT, None, "hf4"),
    ("HF8", 8, 0x42, DTypeKind.FLOAT, None, "hf8"),
    ("TASK_ID", 64, 0x50, DTypeKind.TASK_ID, None, "i64"),
]

#  packed type → torch dtype holding its values unpacked (`DataType.value_torch`)
_VALUE_TORCH = {"FP4": "float32", "INT4": "int8", "UINT4": "uint8"}

_BY_NAME: dict[str, DataType] = {}
for _row in _TABLE:
    _BY_NAME[_row[0]] = DataType(*_row)

ALL_DTYPES: tuple[DataType, ...] = tuple(_BY_NAME.values())

BOOL = _BY_NAME["BOOL"]
INT4 = _BY_NAME["INT4"]
INT8 = _BY_NAME["INT8"]
INT16 = _BY_NAME["INT16"]
INT32 = _BY_NAME["INT32"]
INT64 = _BY_NAME["INT64"]
INDEX = _BY_NAME["INDEX"]
UINT4 = _BY_NAME["UINT4"]
UINT8 = _BY_NAME["UINT8"]
UINT16 = _BY_NAME["UINT16"]
UINT32 = _BY_NAME["UINT32"]
UINT64 = _BY_NAME["UINT64"]
FP4 = _BY_NAME["FP4"]
FP8E4M3FN = _BY_NAME["FP8E4M3FN"]
FP8E5M2 = _BY_NAME["FP8E5M2"]
FP8E8M0 = _BY_NAME["FP8E8M0"]
FP16 = _BY_NAME["FP16"]
BF16 = _BY_NAME["BF16"]
FP32 = _BY_NAME["FP32"]
HF4 = _BY_NAME["HF4"]
HF8 = _BY_NAME["HF8"]
TASK_ID = _BY_NAME["TASK_ID"]


def dtype_from_name(name: str) -> DataType:
    """Look a DataType up by its name (`"FP32"` or `"fp32"`). Raises KeyError if unknown."""
    try:
        return _BY_NAME[name.upper()]
    except KeyError:
        raise KeyError(f"unknown data type {name!r}") from None


def dtype_from_torch(torch_dtype: Any) -> DataType:
    """The DataType matching a `torch.dtype` (int64 maps to INT64, never INDEX).

    Raises:
        TypeError: for a torch dtype PyPTO has no type for (e.g. complex64).
    """
    for dt in ALL_DTYPES:
        if dt.kind in (DTypeKind.INDEX, DTypeKind.TASK_ID):
            continue
        if dt.to_torch(strict=False) == torch_dtype:
            return dt
    raise TypeError(f"torch dtype {torch_dtype} has no PyPTO data type")


def promote(a: DataType, b: DataType) -> DataType:
    """Result dtype of a binary tensor op (SPEC §3): float > int, wider > narrower, signed > unsigned.

    BF16 against FP16 promotes to FP32 (neither holds the other).
    """
    if a is b:
        return a

    def rank(d: DataType) -> tuple[int, int, int]:
        cls = 2 if d.is_float() else (1 if d.is_int() else 0)
        return (cls, d.bits, 1 if d.is_signed_int() or d.is_float() else 0)

    if {a, b} == {FP16, BF16}:
        return FP32
    return a if rank(a) >= rank(b) else b
