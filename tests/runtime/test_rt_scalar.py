"""Scalar semantics of the simulator (BinaryExpr / UnaryExpr evaluation)."""

import math

import pytest

from pypto.core import dtype as dt
from pypto.runtime.sim import scalar


def test_floor_semantics_and_ieee_division() -> None:
    assert scalar.binary_fn("floordiv")(-7, 2) == -4
    assert scalar.binary_fn("floormod")(-7, 2) == 1
    assert scalar.binary_fn("truediv")(1.0, 0.0) == math.inf
    assert scalar.binary_fn("truediv")(-1.0, 0.0) == -math.inf
    assert math.isnan(scalar.binary_fn("truediv")(0.0, 0.0))
    with pytest.raises(ZeroDivisionError):
        scalar.binary_fn("floordiv")(1, 0)
    with pytest.raises(KeyError, match="frobnicate"):
        scalar.binary_fn("frobnicate")


def test_normalizers() -> None:
    assert scalar.normalizer(dt.INT8)(130) == -126
    assert scalar.normalizer(dt.UINT8)(-1) == 255
    assert scalar.normalizer(dt.INT32)(2.9) == 2 and scalar.normalizer(dt.INT32)(-2.9) == -2
    assert scalar.normalizer(dt.FP32)(0.1) == pytest.approx(0.1, rel=1e-7) and \
        scalar.normalizer(dt.FP32)(0.1) != 0.1
    assert scalar.normalizer(dt.FP16)(1e6) == math.inf
    assert scalar.normalizer(dt.BF16)(1.00390625) == 1.0
    assert scalar.normalizer(dt.BOOL)(3) is True
    with pytest.raises(TypeError, match="HF8"):
        scalar.normalizer(dt.HF8)


def test_sub_byte_scalar_normalizers() -> None:
    assert scalar.normalizer(dt.INT4)(9) == -7 and scalar.normalizer(dt.UINT4)(-1) == 15
    assert scalar.normalizer(dt.FP4)(2.7) == 3.0 and scalar.normalizer(dt.FP4)(2.5) == 2.0
    assert scalar.normalizer(dt.FP4)(100.0) == 6.0
    assert scalar.normalizer(dt.FP8E8M0)(2.7) == 2.0
