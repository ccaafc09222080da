"""Helper functions of generated PyTorch scripts (copied verbatim into every script).

This module imports nothing but `torch` and `math`: `torch_codegen` pastes its source text into the
scripts it writes, so they run without PyPTO installed. The per-op templates of `torch_ops` call
these helpers for the ops whose semantics take more than one torch call (partial tiles, casts with
rounding modes, matmul accumulation, ...). They are the reference meaning of the ops for the
accuracy workflow; `tests/debug` checks them against the simulator.

Conventions: tensors and tiles are torch tensors; offsets / shapes are tuples of ints; `valid` is
the tuple of valid shapes (or None) of an op's partially valid operands. Outside a valid region a
value is zero here (the simulator poisons it instead, so a leak shows up as a divergence).
"""

import math  # noqa: F401  (scripts use it for scalar math)

import torch

# the identity of the running kernel instance; a Group call's runner (torch_cluster) sets the
# vector subblock of each kernel it resumes
BLOCK = {"block_idx": 0, "block_num": 1, "subblock_idx": 0, "subblock_num": 1}
# the chip's core counts (pl.system.available_aiv_count / available_cluster_count): Ascend910B's;
# edit them to mimic another chip (Ascend950: 72 / 36)
CHIP = {"aiv_count": 48, "cluster_count": 24}


def _region(offsets, shape):
    return tuple(slice(o, o + s) for o, s in zip(offsets, shape))


def _lead(shape):
    return tuple(slice(0, n) for n in shape)


def _tile(x, dtype, shape):
    """A tile value of `dtype` and `shape`: converted, a scalar broadcast, never a view."""
    if not isinstance(x, torch.Tensor):
        return torch.full(shape, x, dtype=dtype)
    if x.dim() == 0 and len(shape):
        return x.to(dtype).expand(shape).clone()
    if x.dtype != dtype:
        return x.to(dtype)
    return x.clone() if x._base is not None else x


def _as(x, dtype):
    """A tensor value of `dtype` (converted when the op produced another dtype)."""
    if isinstance(x, torch.Tensor) and dtype is not None and x.dtype != dtype:
        return x.to(dtype)
    return x


def _is_int(x):
    if isinstance(x, torch.Tensor):
        return not x.is_floating_point() and not x.is_complex()
    return isinstance(x, int)


def _div(a, b):
    if _is_int(a) and _is_int(b):
        return torch.div(a, b, rounding_mode="trunc")
    return torch.div(a, b)


def _precise(fn, *args, high_precision=False):
    """`fn(*args)`; with high_precision, float operands computed in float64 and rounded once."""
    ts = [a for a in args if isinstance(a, torch.Tensor)]
    if not high_precision or not any(t.is_floating_point() for t in ts):
        return fn(*args)
    out = torch.result_type(*args) if len(args) > 1 else ts[0].dtype
    return fn(*[a.double() if isinstance(a, torch.Tensor) else a for a in args]).to(out)


def _maximum(a, b):
    return torch.maximum(a, b) if isinstance(b, torch.Tensor) else torch.clamp(a, min=b)


def _minimum(a, b):
    return torch.minimum(a, b) if isinstance(b, torch.Tensor) else torch.clamp(a, max=b)


_ROUND = {"round": torch.round, "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc}


def _cast(x, dtype, mode="round"):
    """Float -> integer rounds with `mode` and saturates (NaN -> 0), as pypto.ops.cast. A packed
    4-bit `dtype` comes by name ("FP4", "INT4", "UINT4"); its values are held unpacked and rounded
    by `quantize` (pypto.core.packed, pasted after this prelude)."""
    if isinstance(dtype, str):
        if dtype != "FP4" and x.is_floating_point():
            lo, hi = (-8, 7) if dtype == "INT4" else (0, 15)
            x = _ROUND[mode](x).nan_to_num(nan=0.0).clamp(lo, hi)
        return quantize(x, dtype)  # noqa: F821  (defined by pypto.core.packed in the script)
    if x.is_floating_point() and not dtype.is_floating_point and dtype != torch.bool:
        info = torch.iinfo(dtype)
        r = _ROUND[mode](x).nan_to_num(nan=0.0, posinf=float("inf"), neginf=float("-inf"))
        hi, lo = r >= float(info.max), r <= float(info.min)
        out = torch.where(hi | lo, torch.zeros_like(r), r).to(dtype)
        return torch.where(hi, info.max, torch.where(lo, info.min, out)).to(dtype)
    return x.to(dtype)


_CMP = {"eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge}


def _cmp(a, b, cmp_type="eq"):
    return _CMP[cmp_type](a, b).to(torch.uint8)


def _ci(start, shape, dtype, descending=False):
    step = -1 if descending else 1
    row = start + step * torch.arange(shape[-1], dtype=torch.int64)
    return row.expand(shape).to(dtype).clone()


def _tri(shape, diagonal, dtype, upper=False):
    rows = torch.arange(shape[0]).unsqueeze(1)
    cols = torch.arange(shape[1]).unsqueeze(0)
    mask = cols >= rows + diagonal if upper else cols <= rows + diagonal
    return mask.to(dtype)


_REDUCE = {
    "sum": lambda x, a: torch.sum(x, dim=a, keepdim=True, dtype=x.dtype),
    "max": lambda x, a: torch.amax(x, dim=a, keepdim=True),
    "min": lambda x, a: torch.amin(x, dim=a, keepdim=True),
    "prod": lambda x, a: torch.prod(x, dim=a, keepdim=True, dtype=x.dtype),
    "argmax": lambda x, a: torch.argmax(x, dim=a, keepdim=True).to(torch.int32),
    "argmin": lambda x, a: torch.argmin(x, dim=a, keepdim=True).to(torch.int32),
}


def _reduce(kind, x, axis, valid=None):
    vs = valid[0] if valid else None
    if vs is None:
        return _REDUCE[kind](x, axis)
    r = _REDUCE[kind](x[_lead(vs)], axis)
    shape = list(x.shape)
    shape[axis] = 1
    out = torch.zeros(shape, dtype=r.dtype)
    out[_lead(r.shape)] = r
    return out


def _bmm(a, b, out_dtype=None, a_trans=False, b_trans=False):
    acc = torch.float32 if a.is_floating_point() else torch.int64
    a = a.transpose(-1, -2) if a_trans else a
    b = b.transpose(-1, -2) if b_trans else b
    r = torch.bmm(a.to(acc), b.to(acc))
    if out_dtype is not None:
        return r.to(out_dtype)
    return r if acc is torch.float32 else r.to(torch.int32)


def _mm(a, b, out_dtype=None, a_trans=False, b_trans=False, valid=None):
    acc = torch.float32 if a.is_floating_point() else torch.int64
    a = a.T if a_trans else a
    b = b.T if b_trans else b
    if valid:
        k = a.shape[1]
        if valid[0] is not None:
            k = min(k, valid[0][0] if a_trans else valid[0][1])
        if valid[1] is not None:
            k = min(k, valid[1][1] if b_trans else valid[1][0])
        a, b = a[:, :k], b[:k, :]
    r = torch.matmul(a.to(acc), b.to(acc))
    if out_dtype is not None:
        return r.to(out_dtype)
    return r if acc is torch.float32 else r.to(torch.int32)


def _mm_acc(acc, a, b, a_trans=False, b_trans=False, valid=None):
    return acc + _mm(a, b, None, a_trans, b_trans, valid).to(acc.dtype)


def _mm_bias(a, b, bias, a_trans=False, b_trans=False, valid=None):
    return _mm(a, b, None, a_trans, b_trans, valid).to(bias.dtype) + bias


def _load(t, offsets, shape, valid_shape=None):
    if valid_shape is None:
        return t[_region(offsets, shape)].clone()
    out = torch.zeros(shape, dtype=t.dtype)
    out[_lead(valid_shape)] = t[_region(offsets, valid_shape)]
    return out


def _store(tile, offsets, out, valid=None):
    vs = tuple(valid[0]) if valid and valid[0] is not None else tuple(tile.shape)
    out[_region(offsets, vs)].copy_(tile[_lead(vs)])
    return out


def _slice(x, shape, offset, valid_shape=None, pad="null"):
    view = x[_region(offset, shape)]
    if pad == "null":
        return view
    return _fillpad(view, pad, (tuple(valid_shape) if valid_shape is not None else tuple(view.shape),))


def _assemble(target, src, offset, valid=None):
    vs = tuple(valid[0]) if valid and valid[0] is not None else tuple(src.shape)
    target[_region(offset, vs)].copy_(src[_lead(vs)])
    return target


def _read(x, indices):
    return x[tuple(indices)].item()


def _write(x, indices, value):
    x[tuple(indices)] = value
    return x


def _pad_scalar(dtype, pad):
    if pad == "zero":
        return 0
    if dtype.is_floating_point:
        return math.inf if pad == "max" else -math.inf
    info = torch.iinfo(dtype)
    return info.max if pad == "max" else info.min


def _fillpad(x, pad="zero", valid=None):
    vs = valid[0] if valid else None
    out = x.clone()
    if vs is None:
        return out
    keep = torch.zeros(x.shape, dtype=torch.bool)
    keep[_lead(vs)] = True
    return out.masked_fill_(~keep, _pad_scalar(x.dtype, pad))


def _scatter_update(dst, indices, src):
    out = dst.clone()
    out[indices[:, 0].long()] = src
    return out


def _sorted_pairs(values, index):
    """(value, index) rows sorted by value descending, ties by index ascending, interleaved."""
    order = torch.argsort(index, dim=-1, stable=True)
    v, i = torch.gather(values, -1, order), torch.gather(index, -1, order)
    order = torch.argsort(v, dim=-1, descending=True, stable=True)
    v, i = torch.gather(v, -1, order), torch.gather(i, -1, order)
    return torch.stack([v, i.to(values.dtype)], dim=-1).flatten(-2)


def _sort32(src, idx, block=32):
    """Each 32-element block of every row sorted into (value, index) pairs: [M, N] -> [M, 2N]."""
    parts = [_sorted_pairs(src[:, c:c + block], idx[:, c:c + block].long()) for c in range(0, src.shape[1], block)]
    return torch.cat(parts, dim=-1)


def _mrgsort(src, block_len=32):
    """Rows of sorted runs of `block_len` (value, index) pairs merged into one descending run."""
    pairs = src.reshape(src.shape[0], -1, 2)
    return _sorted_pairs(pairs[..., 0], pairs[..., 1].long())


def _blocks(n):
    """The block indices of an SPMD launch of `n` blocks (SPEC §13), setting BLOCK for each; block
    0 of 1 again afterwards. Blocks run one after the other: they write disjoint parts."""
    for b in range(n):
        BLOCK.update(block_idx=b, block_num=n)
        yield b
    BLOCK.update(block_idx=0, block_num=1)


def _spmd_call(n, fn, *args):
    """`pl.spmd_submit(fn, *args, core_num=n)`: `fn` once per block; its result (the last block's)."""
    out = None
    for _ in _blocks(n):
        out = fn(*args)
    return out
