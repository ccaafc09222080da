import pytest
import torch

import pypto.language as pl
from pypto.core import dtype as dt
from pypto.core.dtype import ALL_DTYPES, dtype_from_name, dtype_from_torch, promote

# name, bits, bytes, code, float, signed, unsigned, torch dtype
TABLE = [
    ("BOOL", 1, 1, 0x00, False, False, False, torch.bool),
    ("INT4", 4, 1, 0x10, False, True, False, None),
    ("INT8", 8, 1, 0x11, False, True, False, torch.int8),
    ("INT16", 16, 2, 0x12, False, True, False, torch.int16),
    ("INT32", 32, 4, 0x13, False, True, False, torch.int32),
    ("INT64", 64, 8, 0x14, False, True, False, torch.int64),
    ("INDEX", 64, 8, 0x15, False, True, False, torch.int64),
    ("UINT4", 4, 1, 0x20, False, False, True, None),
    ("UINT8", 8, 1, 0x21, False, False, True, torch.uint8),
    ("UINT16", 16, 2, 0x22, False, False, True, torch.uint16),
    ("UINT32", 32, 4, 0x23, False, False, True, torch.uint32),
    ("UINT64", 64, 8, 0x24, False, False, True, torch.uint64),
    ("FP4", 4, 1, 0x30, True, False, False, torch.float4_e2m1fn_x2),
    ("FP8E4M3FN", 8, 1, 0x31, True, False, False, torch.float8_e4m3fn),
    ("FP8E5M2", 8, 1, 0x32, True, False, False, torch.float8_e5m2),
    ("FP16", 16, 2, 0x33, True, False, False, torch.float16),
    ("FP32", 32, 4, 0x34, True, False, False, torch.float32),
    ("FP8E8M0", 8, 1, 0x36, True, False, False, torch.float8_e8m0fnu),
    ("BF16", 16, 2, 0x40, True, False, False, torch.bfloat16),
    ("HF4", 4, 1, 0x41, True, False, False, None),
    ("HF8", 8, 1, 0x42, True, False, False, None),
    ("TASK_ID", 64, 8, 0x50, False, False, False, None),
]


@pytest.mark.parametrize("name,bits,nbytes,code,is_float,signed,unsigned,tdt", TABLE)
def test_dtype_table(name, bits, nbytes, code, is_float, signed, unsigned, tdt):
    d = getattr(pl, name)
    assert d is dtype_from_name(name) is dtype_from_name(name.lower())
    assert (d.get_bit(), d.get_byte(), d.code) == (bits, nbytes, code)
    assert d.is_float() == is_float
    assert d.is_signed_int() == signed
    assert d.is_unsigned_int() == unsigned
    assert d.to_torch(strict=False) == tdt
    assert repr(d) == f"pl.{name}"


def test_all_dtypes_listed_and_codes_unique():
    assert {d.name for d in ALL_DTYPES} == {row[0] for row in TABLE}
    assert len({d.code for d in ALL_DTYPES}) == len(ALL_DTYPES)


def test_hf_types_rejected_for_torch():
    with pytest.raises(TypeError, match="HF8 has no torch equivalent"):
        pl.HF8.to_torch()


def test_from_torch_and_promotion():
    assert dtype_from_torch(torch.float16) is dt.FP16
    assert dtype_from_torch(torch.int64) is dt.INT64
    with pytest.raises(TypeError, match="complex64"):
        dtype_from_torch(torch.complex64)
    assert promote(dt.FP16, dt.FP32) is dt.FP32
    assert promote(dt.INT32, dt.FP16) is dt.FP16
    assert promote(dt.INT8, dt.INT32) is dt.INT32
    assert promote(dt.UINT32, dt.INT32) is dt.INT32
    assert promote(dt.BF16, dt.FP16) is dt.FP32
