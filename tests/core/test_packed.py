"""Storage sizes of every dtype and the codecs of the packed 4-bit types (SPEC §2.1; docs/language.md
"Sub-byte and boolean data types")."""

import pytest
import torch

from pypto.core import dtype as D
from pypto.core import packed


@pytest.mark.parametrize("t,bits,nbytes", [
    (D.BOOL, 8, 1024), (D.INT4, 4, 512), (D.UINT4, 4, 512), (D.FP4, 4, 512), (D.HF4, 4, 512),
    (D.INT8, 8, 1024), (D.FP16, 16, 2048), (D.FP32, 32, 4096), (D.INDEX, 64, 8192),
])
def test_storage_bytes(t, bits, nbytes):
    assert t.storage_bits == bits
    assert t.storage_bytes(16 * 64) == nbytes
    assert t.is_packed() == (bits == 4)
    assert D.BOOL.get_bit() == 1   # the bit width is still the value's, not the storage's


def test_host_shape_halves_the_innermost_dimension_of_packed_types():
    assert D.FP4.host_shape((16, 64)) == (16, 32)
    assert D.FP32.host_shape((16, 64)) == (16, 64)
    with pytest.raises(ValueError, match=r"FP4 tensor needs an even innermost dimension.*\[16, 63\]"):
        D.FP4.host_shape((16, 63))


def test_value_dtypes():
    assert D.FP4.value_torch() is torch.float32 and D.FP4.to_torch() is torch.float4_e2m1fn_x2
    assert D.INT4.value_torch() is torch.int8 and D.UINT4.value_torch() is torch.uint8
    assert D.HF8.value_torch() is None and D.TASK_ID.value_torch() is None
    assert D.BF16.value_torch() is torch.bfloat16


def test_fp4_rounds_to_nearest_even_and_saturates():
    x = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 0.26, 4.9, -2.6, 7.0, 1e9,
                      float("inf"), float("-inf"), float("nan"), -0.0])
    want = [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 0.5, 4.0, -3.0, 6.0, 6.0, 6.0, -6.0, 0.0, -0.0]
    got = packed.quantize(x, D.FP4)
    assert got.tolist() == want
    assert torch.signbit(got[-1]) and not torch.signbit(got[-2])


def test_every_fp4_code_round_trips_and_packs_low_nibble_first():
    codes = torch.arange(16, dtype=torch.uint8)
    b = codes[0::2] | (codes[1::2] << 4)
    v = packed.decode(b, D.FP4)
    assert v.tolist() == list(packed.FP4_VALUES)
    assert torch.equal(packed.encode(v, D.FP4), b)
    e = packed.encode(torch.tensor([[1.0, -2.0, 0.5, 6.0]]), D.FP4)
    assert e.tolist() == [[0x2 | 0xC << 4, 0x1 | 0x7 << 4]]
    assert packed.decode(e.view(torch.float4_e2m1fn_x2), D.FP4).tolist() == [[1.0, -2.0, 0.5, 6.0]]


def test_int4_and_uint4_keep_the_low_four_bits():
    x = torch.tensor([-8, -1, 0, 7, 9, 16])
    assert packed.decode(packed.encode(x, D.INT4), D.INT4).tolist() == [-8, -1, 0, 7, -7, 0]
    assert packed.decode(packed.encode(x, D.UINT4), D.UINT4).tolist() == [8, 15, 0, 7, 9, 0]


def test_odd_innermost_dimension_is_refused():
    with pytest.raises(ValueError, match="even innermost dimension"):
        packed.encode(torch.zeros(3), D.FP4)
