"""Codecs of the packed 4-bit data types: FP4 (E2M1), INT4, UINT4 (SPEC §2.1).

Convention (docs/language.md "Sub-byte and boolean data types"): everywhere in the language —
tensor and tile shapes, offsets, valid shapes — a packed type counts *logical elements*. Packing
shows only in memory: two elements share a byte, the element with the even index in the low
nibble (bits 0-3), the next one in the high nibble. So a `[16, 64]` FP4 tile occupies 512 bytes,
and its host storage is a torch `float4_e2m1fn_x2` tensor of shape `[16, 32]`
(`DataType.host_shape`). Torch cannot compute on packed storage, so values are held unpacked in
`DataType.value_torch()` (FP4 in float32, INT4 in int8, UINT4 in uint8) and converted by
`decode` / `encode` at the memory boundary.

FP4 is E2M1: 1 sign bit, 2 exponent bits (bias 1), 1 mantissa bit; magnitudes 0, 0.5, 1, 1.5,
2, 3, 4, 6; no infinity, no NaN. `encode` rounds to nearest, ties to even (the even mantissa),
saturates beyond ±6 (infinities included) and maps NaN to +0 — the same defined-result rule as
float → integer casts. INT4 / UINT4 keep the low 4 bits (two's complement), as an integer
narrowing does.

This module imports nothing but `torch`, and its functions take the dtype as a `DataType` or its
name: `pypto.debug.torch_codegen` pastes this source into the reference scripts it writes, which
run without PyPTO.
"""

import torch

__all__ = ["decode", "encode", "quantize", "FP4_VALUES"]

#  FP4 (E2M1) code → value, codes 0..15 (bit 3 is the sign)
FP4_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)

#  midpoints between consecutive magnitudes and whether a tie rounds up (to the even code)
_FP4_MIDPOINTS = ((0.25, False), (0.75, True), (1.25, False), (1.75, True), (2.5, False),
                  (3.5, True), (5.0, False))


def _fp4_codes(x: torch.Tensor) -> torch.Tensor:
    """FP4 codes (uint8, 0..15) of float tensor `x`, rounded to nearest-even and saturated."""
    x = x.float()
    a = x.abs().nan_to_num(nan=0.0)
    code = torch.zeros(x.shape, dtype=torch.uint8)
    for mid, tie_up in _FP4_MIDPOINTS:
        code += (a >= mid if tie_up else a > mid).to(torch.uint8)
    sign = (torch.signbit(x) & ~x.isnan()).to(torch.uint8)
    return code | (sign << 3)


def _packed_name(dtype) -> str:
    name = getattr(dtype, "name", dtype)
    if name not in ("FP4", "INT4", "UINT4"):
        raise TypeError(f"{name} is not a packed type this simulator can encode or decode")
    return name


def encode(values: torch.Tensor, dtype) -> torch.Tensor:
    """Pack `values` (logical shape, any real dtype) into bytes of `dtype` (a DataType or its
    name): a uint8 tensor with the innermost dimension halved (even-index element in the low
    nibble), as `DataType.host_shape`.

    Raises:
        ValueError: an odd innermost dimension. TypeError: `dtype` is not FP4, INT4 or UINT4.
    """
    name = _packed_name(dtype)
    shape = tuple(values.shape)
    if not shape or shape[-1] % 2:
        raise ValueError(f"a {name} tensor needs an even innermost dimension (two values per byte), "
                         f"got {list(shape)}")
    if name == "FP4":
        c = _fp4_codes(values)
    else:
        c = (values.to(torch.int64) & 0xF).to(torch.uint8)
    c = c.reshape(shape[:-1] + (shape[-1] // 2, 2))
    return c[..., 0] | (c[..., 1] << 4)


def decode(packed: torch.Tensor, dtype) -> torch.Tensor:
    """Unpack bytes of `dtype` (a DataType or its name; the bytes a uint8 or float4_e2m1fn_x2
    tensor whose innermost dimension holds two elements per byte) into a `value_torch()` tensor
    (float32 for FP4, int8 for INT4, uint8 for UINT4) of logical shape.

    Raises:
        TypeError: `dtype` is not FP4, INT4 or UINT4.
    """
    name = _packed_name(dtype)
    b = packed.view(torch.uint8)
    codes = torch.stack((b & 0xF, b >> 4), dim=-1).flatten(-2)
    if name == "FP4":
        return torch.tensor(FP4_VALUES, dtype=torch.float32)[codes.long()]
    if name == "INT4":
        return ((codes.to(torch.int8) ^ 8) - 8).to(torch.int8)
    return codes


def quantize(values, dtype) -> torch.Tensor:
    """`values` rounded to the value set of packed `dtype` (a DataType or its name), held unpacked
    as `decode` returns them (the result of a cast to `dtype`): `decode(encode(values))`, without
    the even-size rule."""
    v = torch.as_tensor(values)
    flat = v.reshape(-1)
    if flat.numel() % 2:
        flat = torch.cat((flat, flat.new_zeros(1)))
    return decode(encode(flat, dtype), dtype)[:v.numel()].reshape(v.shape)
