"""Matrix multiply on the cube unit (SPEC §3 "Matmul"; Language Guide "Pattern: Matrix Multiply").

Tile level: operands in Left (L0A) / Right (L0B), result in Acc (L0C) with the accumulator dtype
(FP32 for float operands, INT32 for integer ones). InferTileMemorySpace moves Mat operands into
place, so the rules also accept Mat.
- `tile.matmul(lhs, rhs, a_trans=False, b_trans=False)`: lhs [M, K] @ rhs [K, N] (each operand
  optionally given transposed);
- `tile.matmul_acc(acc, lhs, rhs)`: acc + lhs @ rhs;
- `tile.matmul_bias(lhs, rhs, bias)`: lhs @ rhs + bias, `bias` a [1, N] row in Bias memory with
  the accumulator dtype;
- `tile.gemv(lhs, rhs)`: a [1, K] row times [K, N]; `tile.gemv_acc(acc, lhs, rhs)` and
  `tile.gemv_bias(lhs, rhs, bias)` are its accumulating and bias forms (SPEC §13).
Tensor level: `tensor.matmul(lhs, rhs, out_dtype=None, a_trans=False, b_trans=False)`,
`tensor.matmul_bias`, `tensor.gemv`, `tensor.gemv_bias`.
Partial operands: only the common valid part of K is multiplied; the result is valid over the
lhs's valid rows and the rhs's valid columns.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.dtype import FP4, FP8E4M3FN, FP8E5M2, FP32, INT8, INT32, DataType
from ..core.enums import MemorySpace
from ..ir.expr import Expr
from ..ir.types import TensorType, TileType, Type
from .cost import cube
from .registry import OpSpec, OpTypeError, register, register_unified
from .site import KernelSite, static_dims, torch_dtype
from .threads import WIDE_MACS, wide, wide_copy, wide_threads
from .typing_rules import (
    FLOAT,
    DTypeClass,
    dims_equal,
    expect_dtype,
    expect_same_kind,
    expect_tile,
    shape_str,
)
from .valid import merge_valid, valid_of, view_for

__all__ = ["acc_dtype"]

_LEFT, _RIGHT, _ACC, _BIAS = (MemorySpace.Left,), (MemorySpace.Right,), (MemorySpace.Acc,), (MemorySpace.Bias,)
_MAT = (MemorySpace.Mat,)
#  what a cube unit multiplies; which of these a target has is the SoC model's `cube_dtypes`
#  (checked by LegalizeTileCast: the low-precision floats are Ascend950 only)
_OPERANDS = FLOAT | DTypeClass("INT8", lambda d: d is INT8) | DTypeClass(
    "FP8E4M3FN, FP8E5M2, FP4 (Ascend950)", lambda d: d in (FP8E4M3FN, FP8E5M2, FP4))


def acc_dtype(dt: DataType) -> DataType:
    """Accumulator dtype of the cube unit for operands of `dt`."""
    return FP32 if dt.is_float() else INT32


def _mm_shape(a: tuple, b: tuple, a_trans: bool = False, b_trans: bool = False) -> tuple:
    if len(a) != 2 or len(b) != 2:
        raise OpTypeError(f"operands must be 2-D, got {shape_str(a)} and {shape_str(b)}")
    m, k = (a[1], a[0]) if a_trans else (a[0], a[1])
    k2, n = (b[1], b[0]) if b_trans else (b[0], b[1])
    if not dims_equal(k, k2):
        raise OpTypeError(f"inner dimensions differ: lhs {shape_str(a)} and rhs {shape_str(b)}"
                          + (" (after transposition)" if a_trans or b_trans else ""))
    return (m, n)


def _mm_valid(a: Any, b: Any, a_trans: bool, b_trans: bool, shape: tuple) -> tuple | None:
    va, vb = valid_of(a), valid_of(b)
    if va is None and vb is None:
        return None
    rows = (va[1] if a_trans else va[0]) if va is not None else shape[0]
    cols = (vb[0] if b_trans else vb[1]) if vb is not None else shape[1]
    return (rows, cols)


def _operands(ns: str, args: list[Expr], i: int) -> tuple[Any, Any]:
    if ns == "tensor":
        a, b = expect_same_kind(ns, args, i, "lhs"), expect_same_kind(ns, args, i + 1, "rhs")
    else:
        a, b = expect_tile(args, i, "lhs", _LEFT + _MAT), expect_tile(args, i + 1, "rhs", _RIGHT + _MAT)
    expect_dtype(a, "lhs", _OPERANDS)
    expect_dtype(b, "rhs", _OPERANDS)
    if a.dtype is not b.dtype:
        raise OpTypeError(f"operand dtypes differ: {a.dtype.name} and {b.dtype.name}")
    return a, b


def _mm_rule(ns: str, gemv: bool = False):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        a, b = _operands(ns, args, 0)
        at, bt = bool(attrs.get("a_trans")), bool(attrs.get("b_trans"))
        shape = _mm_shape(a.shape, b.shape, at, bt)
        if gemv and not (getattr(shape[0], "value", None) == 1):
            raise OpTypeError(f"argument 'lhs' must be a single row [1, K] for gemv, got {shape_str(a.shape)}")
        valid = _mm_valid(a, b, at, bt, shape)
        if ns == "tensor":
            out = attrs.get("out_dtype") or acc_dtype(a.dtype)
            return TensorType(shape, out, view_for(ns, shape, valid))
        return TileType(shape, acc_dtype(a.dtype), MemorySpace.Acc, view=view_for(ns, shape, valid))
    return rule


def _acc_rule(args: list[Expr], attrs: dict[str, Any], gemv: bool = False) -> Type:
    acc = expect_tile(args, 0, "acc", _ACC)
    t = _mm_rule("tile", gemv)(args[1:], attrs)
    assert isinstance(t, TileType)
    if not all(dims_equal(x, y) for x, y in zip(acc.shape, t.shape)) or acc.dtype is not t.dtype:
        raise OpTypeError(f"accumulator {shape_str(acc.shape)} {acc.dtype.name} does not match the "
                          f"product {shape_str(t.shape)} {t.dtype.name}")
    valid = merge_valid([acc, t], ["acc", "product"], acc.shape)
    return TileType(acc.shape, acc.dtype, MemorySpace.Acc, view=view_for("tile", acc.shape, valid))


def _tensor_acc_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    """`tensor.matmul_acc(acc, lhs, rhs)`: acc (a tensor of the product's shape and accumulator
    dtype) + lhs @ rhs."""
    acc = expect_same_kind("tensor", args, 0, "acc")
    t = _mm_rule("tensor")(args[1:], attrs)
    assert isinstance(t, TensorType)
    if not all(dims_equal(x, y) for x, y in zip(acc.shape, t.shape)) or len(acc.shape) != 2 \
            or acc.dtype is not t.dtype:
        raise OpTypeError(f"accumulator {shape_str(acc.shape)} {acc.dtype.name} does not match the "
                          f"product {shape_str(t.shape)} {t.dtype.name}")
    valid = merge_valid([acc, t], ["acc", "product"], acc.shape)
    return TensorType(acc.shape, acc.dtype, view_for("tensor", acc.shape, valid))


def _bias_rule(ns: str, gemv: bool = False):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        t = _mm_rule(ns, gemv)(args[:2], attrs)
        bias = expect_tile(args, 2, "bias", _BIAS + _MAT) if ns == "tile" else expect_same_kind(ns, args, 2, "bias")
        want = (1, getattr(t.shape[1], "value", None))  # type: ignore[attr-defined]
        got = tuple(getattr(d, "value", None) for d in bias.shape)
        if len(got) != 2 or got[0] != 1 or not dims_equal(bias.shape[1], t.shape[1]):  # type: ignore[attr-defined]
            raise OpTypeError(f"argument 'bias' must have shape [1, {want[1]}], got {shape_str(bias.shape)}")
        acc = acc_dtype(args[0].type.dtype)  # type: ignore[attr-defined]
        if bias.dtype is not acc:
            raise OpTypeError(f"argument 'bias' must have the accumulator dtype {acc.name}, got {bias.dtype.name}")
        return t
    return rule


def _restrict_k(a: Any, b: Any, valid: tuple | None, a_trans: bool, b_trans: bool) -> tuple[Any, Any]:
    """Operands as [M, K] and [K, N] with K cut to the common valid extent."""
    a = a.T if a_trans else a
    b = b.T if b_trans else b
    if not valid:
        return a, b
    va, vb = valid[0], valid[1]
    k = a.shape[1]
    if va is not None:
        k = min(k, va[0] if a_trans else va[1])
    if vb is not None:
        k = min(k, vb[1] if b_trans else vb[0])
    return a[:, :k], b[:k, :]


def _mm(a: Any, b: Any, out_dtype: Any = None, a_trans: bool = False, b_trans: bool = False,
        valid: tuple | None = None) -> Any:
    acc = torch.float32 if a.is_floating_point() else torch.int64
    a, b = _restrict_k(a, b, valid, a_trans, b_trans)
    r = torch.matmul(a.to(acc), b.to(acc))
    if out_dtype is not None:
        return r.to(out_dtype.value_torch())
    return r if acc is torch.float32 else r.to(torch.int32)


def _mm_acc(acc: Any, a: Any, b: Any, a_trans: bool = False, b_trans: bool = False,
            valid: tuple | None = None) -> Any:
    return acc + _mm(a, b, a_trans=a_trans, b_trans=b_trans, valid=valid).to(acc.dtype)


def _mm_bias(a: Any, b: Any, bias: Any, a_trans: bool = False, b_trans: bool = False,
             valid: tuple | None = None) -> Any:
    return _mm(a, b, a_trans=a_trans, b_trans=b_trans, valid=valid).to(bias.dtype) + bias


def _overlap(x: Any, y: Any) -> bool:
    """Whether two tensors may share bytes (conservative for non-contiguous views)."""
    if x.untyped_storage().data_ptr() != y.untyped_storage().data_ptr():
        return False
    if not (x.is_contiguous() and y.is_contiguous()):
        return True
    x0, y0 = x.data_ptr(), y.data_ptr()
    return x0 < y0 + y.numel() * y.element_size() and y0 < x0 + x.numel() * x.element_size()


def _fp32_operands(dst: Any, a: Any, b: Any, a_trans: bool, b_trans: bool, valid: tuple | None) -> Any:
    """FP32 [M, K] and [K, N] operands for a product written into FP32 `dst`, or None when the
    in-place form does not apply (integer operands, another result dtype, `dst` overlapping them)."""
    if dst.dtype is not torch.float32 or not a.is_floating_point() or not dst.is_contiguous() \
            or _overlap(dst, a) or _overlap(dst, b):
        return None
    a, b = _restrict_k(a, b, valid, a_trans, b_trans)
    return a.to(torch.float32), b.to(torch.float32)


def _mm_into(dst: Any, a: Any, b: Any, out_dtype: Any = None, a_trans: bool = False, b_trans: bool = False,
             valid: tuple | None = None) -> Any:
    ops = None if out_dtype is not None else _fp32_operands(dst, a, b, a_trans, b_trans, valid)
    if ops is None:
        return _mm(a, b, out_dtype, a_trans, b_trans, valid)
    torch.mm(*ops, out=dst)
    return None


def _mm_acc_into(dst: Any, acc: Any, a: Any, b: Any, a_trans: bool = False, b_trans: bool = False,
                 valid: tuple | None = None) -> Any:
    """acc + a @ b into `dst`: accumulated in place when `dst` is `acc` (the usual carried Acc
    tile), written with `out=` when they are apart."""
    ops = _fp32_operands(dst, a, b, a_trans, b_trans, valid) if acc.dtype is torch.float32 else None
    if ops is not None:
        if dst.data_ptr() == acc.data_ptr() and dst.shape == acc.shape and dst.stride() == acc.stride():
            dst.addmm_(*ops)
            return None
        if not _overlap(dst, acc):
            torch.addmm(acc, *ops, out=dst)
            return None
    return _mm_acc(acc, a, b, a_trans=a_trans, b_trans=b_trans, valid=valid)


def _mm_site(with_acc: bool) -> Any:
    """`OpSpec.specialize` of `tile.matmul` (`with_acc` False) and `tile.matmul_acc` / `tile.gemv_acc`
    (True) for float operands and an FP32 result whose buffer the operands do not share: the
    transposition and the cut of K to the valid extent are fixed at the site, leaving the same
    torch calls as `_mm_into` / `_mm_acc_into` (so the same numbers): the FP32 operands, then
    `torch.mm(out=)`, `addmm_` when the result is `acc`'s own buffer, or `torch.addmm(out=)`.
    Untransposed 16-bit operands are converted into two FP32 buffers kept by the site (an exact
    conversion into buffers of the same layout as `.to`'s, without allocating them per run)."""

    def specialize(site: KernelSite) -> Any:
        i = 1 if with_acc else 0
        f32 = torch.float32
        ta, tb = torch_dtype(site.types[i]), torch_dtype(site.types[i + 1])
        sa, sb = static_dims(site.types[i]), static_dims(site.types[i + 1])
        if torch_dtype(site.dst) is not f32 or ta is None or ta is not tb or not ta.is_floating_point \
                or sa is None or sb is None or len(sa) != 2 or len(sb) != 2 \
                or not (site.apart[i] and site.apart[i + 1]) or set(site.attrs) - {"a_trans", "b_trans", "valid"}:
            return None
        at, bt = bool(site.attrs.get("a_trans")), bool(site.attrs.get("b_trans"))
        va, vb = site.attrs.get("valid") or (None, None)
        full = sa[0] if at else sa[1]
        k = min([full] + ([] if va is None else [va[0] if at else va[1]])
                + ([] if vb is None else [vb[1] if bt else vb[0]]))
        if at or bt or k != full:
            def operands(a: Any, b: Any) -> tuple[Any, Any]:
                a = a.T if at else a
                b = b.T if bt else b
                return a[:, :k].to(f32), b[:k, :].to(f32)
        elif ta is f32:
            def operands(a: Any, b: Any) -> tuple[Any, Any]:
                return a, b   # what `.to(f32)` gives
        else:   # converted into FP32 buffers of this site: like `.to(f32)` of the contiguous tiles
            wa, wb = torch.empty(sa, dtype=f32), torch.empty(sb, dtype=f32)

            def operands(a: Any, b: Any) -> tuple[Any, Any]:
                return wa.copy_(a), wb.copy_(b)
        if not with_acc:
            def mm(dst: Any, a: Any, b: Any) -> None:
                torch.mm(*operands(a, b), out=dst)
            return mm
        if torch_dtype(site.types[0]) is not f32 or static_dims(site.types[0]) != static_dims(site.dst):
            return None
        if site.same[0]:
            def mm_acc(dst: Any, acc: Any, a: Any, b: Any) -> None:
                dst.addmm_(*operands(a, b))
            return mm_acc
        if site.apart[0]:
            def mm_acc_out(dst: Any, acc: Any, a: Any, b: Any) -> None:
                torch.addmm(acc, *operands(a, b), out=dst)
            return mm_acc_out
        return None
    return specialize


_LANEWISE: dict[tuple, bool] = {}
"""Per batched GEMM form, lane count, thread count and layout: whether a batched call gave other
bits than one-lane calls (then lane by lane). Checked once per process (`forget_batch_checks`)."""
_OPERANDS_CACHE: dict[tuple, tuple[Any, Any, Any]] = {}


def forget_batch_checks() -> None:
    """Forget every batched GEMM's check (`_mm_batch_site`): the next batch of each form checks
    again. For tests that replace a BLAS call."""
    _LANEWISE.clear()


def _check_operands(a: Any, b: Any, acc: Any, zeros: bool) -> tuple[Any, Any, Any]:
    """Random operands of the shapes and dtypes of `a`, `b` (and FP32 `acc`, or None) for a batched
    GEMM's check; with `zeros`, operands whose products are zeros of mixed signs (which sign a sum
    of zeros gets depends on the order). One lane's values, made once per tile shape (seeded) and
    repeated over the lanes: what is checked is that each lane is computed like a one-lane GEMM."""
    lanes = a.shape[0]
    key = (tuple(a.shape[1:]), a.dtype, tuple(b.shape[1:]), b.dtype,
           None if acc is None else tuple(acc.shape[1:]), zeros)
    hit = _OPERANDS_CACHE.get(key)
    if hit is None:
        g = torch.Generator().manual_seed(1 + zeros)
        ra = torch.randn((1, *a.shape[1:]), generator=g).to(a.dtype)
        rb = torch.randn((1, *b.shape[1:]), generator=g).to(b.dtype)
        rc = torch.randn((1, *acc.shape[1:]), generator=g) if acc is not None else None
        if zeros:
            signs = [torch.where(torch.rand(x.shape, generator=g) < 0.5, -1.0, 1.0) for x in (ra, rb)]
            ra = torch.where(torch.rand(ra.shape, generator=g) < 0.5, 0.0 * signs[0], ra).to(a.dtype)
            rb = (0.0 * signs[1]).to(b.dtype)
            rc = None if rc is None else 0.0 * torch.where(rc < 0, -1.0, 1.0)
        if len(_OPERANDS_CACHE) >= 64:
            _OPERANDS_CACHE.clear()
        hit = _OPERANDS_CACHE[key] = (ra, rb, rc)
    ra, rb, rc = hit
    return ra.repeat(lanes, 1, 1), rb.repeat(lanes, 1, 1), None if rc is None else rc.repeat(lanes, 1, 1)


def _mm_batch_site(with_acc: bool) -> Any:
    """`OpSpec.batch` of `tile.matmul` (`with_acc` False) and `tile.matmul_acc` / `tile.gemv_acc`
    (True), at the sites `_mm_site` specialises: the lanes' FP32 operands (converted into buffers
    of this site per lane count), then `torch.bmm(out=)`, `baddbmm_` when the result is `acc`'s
    own buffer, or `torch.baddbmm(out=)` — per lane the torch calls of `_mm_site`.

    A batched GEMM computes each product like the one-lane GEMM for most shapes on the BLAS
    libraries torch ships with, but not for all (a one-row product may take another kernel) and
    nothing promises it: the first call in the process of each form, lane count, intra-op thread
    count and layout compares the batched call with one-lane `torch.mm` / `addmm_` on one thread,
    byte for byte, on its own operands, on random ones and on signed zeros, and if any byte differs
    computes lane by lane for that count from then on (`runtime/sim/batch.py`). A call of at least
    `threads.WIDE_MACS` multiply-accumulates runs on the caller's intra-op threads (`ops/threads.py`)."""
    one = _mm_site(with_acc)

    def batch(site: KernelSite) -> Any:
        if one(site) is None:   # the same conditions (and the same numbers per lane) as the one-lane form
            return None
        i = 1 if with_acc else 0
        f32 = torch.float32
        sa, sb = static_dims(site.types[i]), static_dims(site.types[i + 1])
        at, bt = bool(site.attrs.get("a_trans")), bool(site.attrs.get("b_trans"))
        va, vb = site.attrs.get("valid") or (None, None)
        full = sa[0] if at else sa[1]
        k = min([full] + ([] if va is None else [va[0] if at else va[1]])
                + ([] if vb is None else [vb[1] if bt else vb[0]]))
        convert = torch_dtype(site.types[i]) is not f32
        macs = (sa[1] if at else sa[0]) * k * (sb[0] if bt else sb[1])   # per lane
        buffers: dict[int, tuple[Any, Any]] = {}

        def operands(a: Any, b: Any) -> tuple[Any, Any]:
            if at or bt or k != full:
                a = a.transpose(-1, -2) if at else a
                b = b.transpose(-1, -2) if bt else b
                return a[..., :k].to(f32), b[..., :k, :].to(f32)
            if not convert:
                return a, b
            n = a.shape[0]
            w = buffers.get(n)
            if w is None:
                w = buffers[n] = (torch.empty((n, *sa), dtype=f32), torch.empty((n, *sb), dtype=f32))
            wide_copy(w[0], a)
            wide_copy(w[1], b)
            return w

        same = with_acc and site.same[0]

        temps: dict[int, Any] = {}

        def product(dst: Any, acc: Any, a: Any, b: Any, threads: int) -> None:
            """The batched call for all lanes. On several threads into a strided `dst` (lanes of
            the chip's memory), into a contiguous buffer first: torch splits a batched GEMM over
            its threads only for a contiguous result (measured: 10 lanes of 128^3, 192 -> 160 us)."""
            out = dst
            if threads > 1 and not dst.is_contiguous():
                out = temps.get(a.shape[0])
                if out is None:
                    out = temps[a.shape[0]] = torch.empty(dst.shape, dtype=dst.dtype)
            if not with_acc:
                torch.bmm(a, b, out=out)
            elif same and out is dst:
                dst.baddbmm_(a, b)
            else:
                torch.baddbmm(acc, a, b, out=out)
            if out is not dst:
                dst.copy_(out)

        def lane(dst: Any, acc: Any, a: Any, b: Any) -> Any:
            """The one-lane calls of `_mm_site` for lane after lane (a new tensor per lane)."""
            if not with_acc:
                return torch.stack([torch.mm(a[j], b[j]) for j in range(a.shape[0])])
            return torch.stack([acc[j].clone().addmm_(a[j], b[j]) for j in range(a.shape[0])])

        def agrees(dst: Any, acc: Any, a: Any, b: Any, threads: int) -> bool:
            """Whether the batched call on `threads` intra-op threads gives the bits of the one-lane
            calls on one thread: on these operands, on random ones and on ones whose products are
            zeros of mixed signs — in a buffer laid out like `dst` (the same call path), compared
            byte for byte (so -0.0 differs from 0.0)."""
            n = a.shape[0]
            cases = [(acc, a, b, False)]
            for zeros in (False, True):   # one lane's values in every lane: one reference product
                ra, rb, rc = _check_operands(a, b, dst if with_acc else None, zeros)
                cases.append((rc, ra, rb, True))
            for c, x, y, repeated in cases:
                with wide(1):
                    if repeated:
                        want = lane(None, None if c is None else c[:1], x[:1], y[:1]).expand(n, -1, -1)
                    else:
                        want = lane(None, c, x, y)
                got = torch.empty_strided(dst.shape, dst.stride(), dtype=dst.dtype)
                if same:
                    got.copy_(c)
                with wide(threads):
                    product(got, c, x, y, threads)
                if not torch.equal(got.contiguous().view(torch.int32), want.view(torch.int32)):
                    return False
            return True

        form = (with_acc, same, at, bt, sa, sb, k)

        def run(dst: Any, acc: Any, a: Any, b: Any) -> None:
            lanes = a.shape[0]
            # the threads torch gives the batched call (one while another run is in progress: `wide`)
            with wide(wide_threads() if lanes * macs >= WIDE_MACS else 1) as threads:
                key = (form, lanes, threads, a.dtype, b.dtype, dst.dtype, dst.stride(),
                       None if acc is None else acc.stride())
                mode = _LANEWISE.get(key)
                if mode is None:   # first call in the process: check the batched call
                    mode = _LANEWISE[key] = not agrees(dst, acc, a, b, threads)
                if mode:
                    with wide(1):
                        dst.copy_(lane(dst, acc, a, b))
                else:
                    product(dst, acc, a, b, threads)

        if not with_acc:
            def mm(dst: Any, a: Any, b: Any) -> None:
                run(dst, None, *operands(a, b))
            return mm

        def mm_acc(dst: Any, acc: Any, a: Any, b: Any) -> None:
            run(dst, acc, *operands(a, b))
        return mm_acc
    return batch


_CUBE = frozenset({"cube"})
_DT = _OPERANDS.text
_TRANS = {"a_trans": False, "b_trans": False}
register(OpSpec("tile.matmul", ("lhs", "rhs"), _mm_rule("tile"), _mm, compute_into=_mm_into, attrs=dict(_TRANS),
                specialize=_mm_site(False), batch=_mm_batch_site(False),
                reads=(0, 1),
                traits=_CUBE, operand_spaces={0: _LEFT, 1: _RIGHT}, valid_args=(0, 1), pto="pto.tmatmul",
                cost=cube(), family="matmul", dtypes=_DT,
                doc="lhs [M, K] (Left) @ rhs [K, N] (Right) -> [M, N] in Acc, accumulated in FP32 "
                    "(INT32 for integer operands); `a_trans`/`b_trans` take an operand transposed."))
register(OpSpec("tile.matmul_acc", ("acc", "lhs", "rhs"), _acc_rule, _mm_acc, compute_into=_mm_acc_into,
                specialize=_mm_site(True), batch=_mm_batch_site(True),
                attrs=dict(_TRANS), inplace=(0,),
                reads=(0, 1, 2), traits=_CUBE,
                operand_spaces={0: _ACC, 1: _LEFT, 2: _RIGHT}, valid_args=(1, 2), pto="pto.tmatmul.acc",
                cost=cube(), family="matmul", dtypes=_DT,
                doc="acc + lhs @ rhs, in Acc; `a_trans`/`b_trans` take an operand transposed."))
register(OpSpec("tile.matmul_bias", ("lhs", "rhs", "bias"), _bias_rule("tile"), _mm_bias, attrs=dict(_TRANS),
                reads=(0, 1, 2),
                traits=_CUBE, operand_spaces={0: _LEFT, 1: _RIGHT, 2: _BIAS}, valid_args=(0, 1),
                pto="pto.tmatmul.bias", cost=cube(), family="matmul", dtypes=_DT,
                doc="lhs @ rhs + bias in Acc; `bias` is a [1, N] row in Bias memory with the "
                    "accumulator dtype, added to every row."))
register(OpSpec("tile.gemv", ("lhs", "rhs"), _mm_rule("tile", gemv=True), _mm, reads=(0, 1), traits=_CUBE,
                operand_spaces={0: _LEFT, 1: _RIGHT}, valid_args=(0, 1), pto="pto.tgemv", cost=cube(),
                family="matmul", dtypes=_DT, doc="A row vector [1, K] (Left) times rhs [K, N] (Right) -> "
                                                "[1, N] in Acc."))
def _bmm_rule(ns: str, acc: bool = False):
    """[B, M, K] @ [B, K, N] -> [B, M, N] (SPEC §13 `batch_matmul`): one product per leading index."""
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        k = 1 if acc else 0
        a, b = _operands(ns, args, k)
        if len(a.shape) != 3 or len(b.shape) != 3:
            raise OpTypeError(f"batch_matmul operands must be 3-D [B, M, K] and [B, K, N], got "
                              f"{shape_str(a.shape)} and {shape_str(b.shape)}")
        if not dims_equal(a.shape[0], b.shape[0]):
            raise OpTypeError(f"batch sizes differ: lhs {shape_str(a.shape)} and rhs {shape_str(b.shape)}")
        if a.view is not None and getattr(a.view, "valid_shape", None) is not None or \
                b.view is not None and getattr(b.view, "valid_shape", None) is not None:
            raise OpTypeError("batch_matmul operands must be fully valid")
        m, n = _mm_shape(a.shape[1:], b.shape[1:], bool(attrs.get("a_trans")), bool(attrs.get("b_trans")))
        shape = (a.shape[0], m, n)
        if ns == "tensor":
            return TensorType(shape, attrs.get("out_dtype") or acc_dtype(a.dtype))
        out = TileType(shape, acc_dtype(a.dtype), MemorySpace.Acc)
        if acc:
            c = expect_tile(args, 0, "acc", _ACC)
            if not all(dims_equal(x, y) for x, y in zip(c.shape, shape)) or len(c.shape) != 3 or \
                    c.dtype is not out.dtype:
                raise OpTypeError(f"accumulator {shape_str(c.shape)} {c.dtype.name} does not match the "
                                  f"product {shape_str(shape)} {out.dtype.name}")
        return out
    return rule


def _bmm(a: Any, b: Any, out_dtype: Any = None, a_trans: bool = False, b_trans: bool = False) -> Any:
    acc = torch.float32 if a.is_floating_point() else torch.int64
    a = a.transpose(-1, -2) if a_trans else a
    b = b.transpose(-1, -2) if b_trans else b
    r = torch.bmm(a.to(acc), b.to(acc))
    if out_dtype is not None:
        return r.to(out_dtype.value_torch())
    return r if acc is torch.float32 else r.to(torch.int32)


def _bmm_acc(acc: Any, a: Any, b: Any, a_trans: bool = False, b_trans: bool = False) -> Any:
    return acc + _bmm(a, b, a_trans=a_trans, b_trans=b_trans).to(acc.dtype)


register(OpSpec("tile.batch_matmul", ("lhs", "rhs"), _bmm_rule("tile"), _bmm, attrs=dict(_TRANS), reads=(0, 1),
                traits=_CUBE, operand_spaces={0: _LEFT, 1: _RIGHT}, pto="pto.tbatchmatmul", cost=cube(),
                family="matmul", dtypes=_DT,
                doc="lhs [B, M, K] (Left) @ rhs [B, K, N] (Right) -> [B, M, N] in Acc: B independent "
                    "products (SPEC §13); `a_trans`/`b_trans` transpose each operand's last two axes."))
register(OpSpec("tile.batch_matmul_acc", ("acc", "lhs", "rhs"), _bmm_rule("tile", acc=True), _bmm_acc,
                attrs=dict(_TRANS), inplace=(0,), reads=(0, 1, 2), traits=_CUBE,
                operand_spaces={0: _ACC, 1: _LEFT, 2: _RIGHT}, pto="pto.tbatchmatmul.acc", cost=cube(),
                family="matmul", dtypes=_DT, doc="acc + batch_matmul(lhs, rhs), in Acc (SPEC §13)."))
register(OpSpec("tensor.batch_matmul", ("lhs", "rhs"), _bmm_rule("tensor"), _bmm,
                attrs={"out_dtype": None, **_TRANS}, reads=(0, 1), traits=_CUBE, tile_op="tile.batch_matmul",
                cost=cube(), family="matmul", dtypes=_DT,
                doc="B independent matrix products of 3-D tensors [B, M, K] @ [B, K, N] -> [B, M, N] "
                    "(SPEC §13); the result dtype is `out_dtype` or the accumulator dtype."))
register_unified("batch_matmul", "tensor", None, "tensor.batch_matmul")
register_unified("batch_matmul", "tile", None, "tile.batch_matmul")
register_unified("batch_matmul_acc", "tile", None, "tile.batch_matmul_acc")


register(OpSpec("tile.gemv_acc", ("acc", "lhs", "rhs"), lambda a, k: _acc_rule(a, k, gemv=True), _mm_acc,
                compute_into=_mm_acc_into, specialize=_mm_site(True), batch=_mm_batch_site(True), inplace=(0,),
                reads=(0, 1, 2), traits=_CUBE,
                operand_spaces={0: _ACC, 1: _LEFT, 2: _RIGHT}, valid_args=(1, 2), pto="pto.tgemv.acc",
                cost=cube(), family="matmul", dtypes=_DT,
                doc="acc + lhs @ rhs for a row vector lhs [1, K] (Left), rhs [K, N] (Right), acc [1, N] "
                    "in Acc (SPEC §13)."))
register(OpSpec("tile.gemv_bias", ("lhs", "rhs", "bias"), _bias_rule("tile", gemv=True), _mm_bias,
                reads=(0, 1, 2), traits=_CUBE, operand_spaces={0: _LEFT, 1: _RIGHT, 2: _BIAS},
                valid_args=(0, 1), pto="pto.tgemv.bias", cost=cube(), family="matmul", dtypes=_DT,
                doc="lhs @ rhs + bias for a row vector lhs [1, K]; `bias` is a [1, N] row in Bias memory "
                    "with the accumulator dtype (SPEC §13)."))
register(OpSpec("tensor.gemv_bias", ("lhs", "rhs", "bias"), _bias_rule("tensor", gemv=True), _mm_bias,
                reads=(0, 1, 2), traits=_CUBE, tile_op="tile.gemv_bias", valid_args=(0, 1), cost=cube(),
                family="matmul", dtypes=_DT,
                doc="A row vector [1, K] times a [K, N] tensor plus a [1, N] `bias` row in the "
                    "accumulator dtype (SPEC §13)."))
register(OpSpec("tensor.matmul", ("lhs", "rhs"), _mm_rule("tensor"), _mm,
                attrs={"out_dtype": None, **_TRANS}, reads=(0, 1), traits=_CUBE, tile_op="tile.matmul",
                valid_args=(0, 1), cost=cube(), family="matmul", dtypes=_DT,
                doc="Matrix product of two 2-D tensors; the result dtype is `out_dtype` or the "
                    "accumulator dtype (FP32 for float operands)."))
register(OpSpec("tensor.matmul_acc", ("acc", "lhs", "rhs"), _tensor_acc_rule, _mm_acc, attrs=dict(_TRANS),
                inplace=(0,), reads=(0, 1, 2), traits=_CUBE, tile_op="tile.matmul_acc", valid_args=(1, 2),
                cost=cube(), family="matmul", dtypes=_DT,
                doc="acc + lhs @ rhs for an accumulator tensor of the product's shape in the accumulator "
                    "dtype (FP32 for float operands): the cube unit adds into its Acc tile "
                    "(`tile.matmul_acc`). TileTensorBlocks writes it for K blocks and for a user's "
                    "`acc = acc + pl.matmul(...)` loop."))
register(OpSpec("tensor.matmul_bias", ("lhs", "rhs", "bias"), _bias_rule("tensor"), _mm_bias,
                attrs=dict(_TRANS), reads=(0, 1, 2),
                traits=_CUBE, tile_op="tile.matmul_bias", valid_args=(0, 1), cost=cube(), family="matmul",
                dtypes=_DT, doc="lhs @ rhs + bias for a [1, N] `bias` row in the accumulator dtype."))
register(OpSpec("tensor.gemv", ("lhs", "rhs"), _mm_rule("tensor", gemv=True), _mm, reads=(0, 1), traits=_CUBE,
                tile_op="tile.gemv", valid_args=(0, 1), cost=cube(), family="matmul", dtypes=_DT,
                doc="A row vector [1, K] times a [K, N] tensor -> [1, N] in the accumulator dtype."))
for _name in ("matmul", "matmul_bias", "gemv", "gemv_bias"):
    for _ns in ("tensor", "tile"):
        register_unified(_name, _ns, None, f"{_ns}.{_name}")
register_unified("matmul_acc", "tile", None, "tile.matmul_acc")
register_unified("matmul_acc", "tensor", None, "tensor.matmul_acc")
register_unified("gemv_acc", "tile", None, "tile.gemv_acc")
