"""Matrix multiply (SPEC §3 "Matmul"; Language Guide "Pattern: Matrix Multiply").

Tile level: `tile.matmul(lhs, rhs)` with `lhs` in Left (L0A), `rhs` in Right (L0B), result in Acc
(L0C) with the accumulator dtype (FP32 for float inputs, INT32 for integer inputs);
`tile.matmul_acc(acc, lhs, rhs)` adds the product into an existing Acc tile.
Tensor level: `tensor.matmul(a, b, out_dtype=None, a_trans=False, b_trans=False)`.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.dtype import FP32, INT32, DataType
from ..core.enums import MemorySpace
from ..ir.expr import Expr
from ..ir.types import TensorType, TileType, Type
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import dims_equal, expect_tensor, expect_tile, shape_str

_LEFT, _RIGHT, _ACC = (MemorySpace.Left,), (MemorySpace.Right,), (MemorySpace.Acc,)


def acc_dtype(dt: DataType) -> DataType:
    """Accumulator dtype of the cube unit for operands of `dt`."""
    return FP32 if dt.is_float() else INT32


def _mm_shape(a: tuple, b: tuple, a_trans: bool = False, b_trans: bool = False) -> tuple:
    if len(a) != 2 or len(b) != 2:
        raise OpTypeError(f"operands must be 2-D, got {shape_str(a)} and {shape_str(b)}")
    m, k = (a[1], a[0]) if a_trans else (a[0], a[1])
    k2, n = (b[1], b[0]) if b_trans else (b[0], b[1])
    if not dims_equal(k, k2):
        raise OpTypeError(f"inner dimensions differ: lhs {shape_str(a)} and rhs {shape_str(b)}")
    return (m, n)


def _tile_mm(args: list[Expr], attrs: dict[str, Any]) -> Type:
    a = expect_tile(args, 0, "lhs", _LEFT + (MemorySpace.Mat,))
    b = expect_tile(args, 1, "rhs", _RIGHT + (MemorySpace.Mat,))
    if a.dtype is not b.dtype:
        raise OpTypeError(f"operand dtypes differ: {a.dtype.name} and {b.dtype.name}")
    return TileType(_mm_shape(a.shape, b.shape), acc_dtype(a.dtype), MemorySpace.Acc)


def _tile_mm_acc(args: list[Expr], attrs: dict[str, Any]) -> Type:
    acc = expect_tile(args, 0, "acc", _ACC)
    t = _tile_mm(args[1:], attrs)
    if not all(dims_equal(x, y) for x, y in zip(acc.shape, t.shape)) or acc.dtype is not t.dtype:
        raise OpTypeError(f"accumulator {shape_str(acc.shape)} {acc.dtype.name} does not match the "
                          f"product {shape_str(t.shape)} {t.dtype.name}")
    return TileType(acc.shape, acc.dtype, MemorySpace.Acc)


def _tensor_mm(args: list[Expr], attrs: dict[str, Any]) -> Type:
    a, b = expect_tensor(args, 0, "lhs"), expect_tensor(args, 1, "rhs")
    shape = _mm_shape(a.shape, b.shape, bool(attrs.get("a_trans")), bool(attrs.get("b_trans")))
    out = attrs.get("out_dtype") or acc_dtype(a.dtype)
    return TensorType(shape, out)


def _mm(a: Any, b: Any, out_dtype: Any = None, a_trans: bool = False, b_trans: bool = False) -> Any:
    acc = torch.float32 if a.is_floating_point() else torch.int64
    a, b = a.to(acc), b.to(acc)
    r = torch.matmul(a.T if a_trans else a, b.T if b_trans else b)
    return r if out_dtype is None else r.to(out_dtype.to_torch())


def _mm_acc(acc: Any, a: Any, b: Any) -> Any:
    return acc + _mm(a, b).to(acc.dtype)


_CUBE = frozenset({"cube"})
register(OpSpec("tile.matmul", ("lhs", "rhs"), _tile_mm, _mm, reads=(0, 1), traits=_CUBE,
                operand_spaces={0: _LEFT, 1: _RIGHT}, pto="pto.tmatmul",
                doc="lhs [M, K] (Left) @ rhs [K, N] (Right) → [M, N] in Acc, accumulated in FP32 "
                    "(INT32 for integer operands)."))
register(OpSpec("tile.matmul_acc", ("acc", "lhs", "rhs"), _tile_mm_acc, _mm_acc, reads=(0, 1, 2),
                traits=_CUBE, operand_spaces={0: _ACC, 1: _LEFT, 2: _RIGHT}, pto="pto.tmatmul.acc",
                doc="acc + lhs @ rhs, in Acc."))
register(OpSpec("tensor.matmul", ("lhs", "rhs"), _tensor_mm, _mm,
                attrs={"out_dtype": None, "a_trans": False, "b_trans": False}, reads=(0, 1),
                traits=_CUBE, tile_op="tile.matmul",
                doc="Matrix product of two 2-D tensors; the result dtype is `out_dtype` or the "
                    "accumulator dtype (FP32 for float operands)."))
for _ns in ("tensor", "tile"):
    register_unified("matmul", _ns, False, f"{_ns}.matmul")
register_unified("matmul_acc", "tile", False, "tile.matmul_acc")
