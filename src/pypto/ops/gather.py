"""Gather, scatter and sorting (SPEC §3 "Gather/scatter").

Indices are INT32 values; an index outside the source raises at run time.
- `gather(src, indices)`: out[i, j] = src[i, indices[i, j]] (per-row gather along the last axis).
- `gather_row(src, indices)`: out[i, :] = src[indices[i, 0], :] for an [M, 1] index column.
- `scatter(dst, indices, src)`: `dst` with dst[i, indices[i, j]] = src[i, j].
- `scatter_update(dst, indices, src)`: `dst` with dst[indices[i, 0], :] = src[i, :] (row update,
  e.g. a KV cache).
Like every tile op, scatters produce a new value (the argument tile is unchanged; memory planning
may give the result the argument's buffer when the argument is dead). Write the result back to DDR
with store / assemble.
- `sort32(src, idx)`: each row of FP32 `src` [M, N] is cut into blocks of 32 elements; each block
  is sorted by value, descending (ties: lower index first), carrying the INT32 index from `idx`.
  The result [M, 2N] holds (value, index) pairs: value at even columns, the index at the next odd
  column as an FP32 number (exact below 2**24; the hardware stores its INT32 bit pattern there).
- `mrgsort(src, block_len)`: rows of (value, index) pairs made of sorted runs of `block_len` pairs
  are merged into one descending run per row (ties: lower index first; the simulator sorts the
  whole row, which equals the merge when the runs are sorted).
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.dtype import FP32, INDEX
from ..ir.expr import ConstInt, Expr
from ..ir.types import Type
from .cost import vector
from .registry import OpSpec, OpTypeError, register, register_unified
from .typing_rules import (
    ANY,
    INDEX_DTYPES,
    attr_int,
    dims_equal,
    expect_dtype,
    expect_same_kind,
    rank2,
    shape_str,
    shaped_like,
)
from .valid import require_full

__all__ = ["SORT_BLOCK"]

SORT_BLOCK = 32


def _operand(ns: str, args: list[Expr], i: int, name: str, dclass: Any = ANY) -> Any:
    t = expect_same_kind(ns, args, i, name)
    rank2(t, name)
    expect_dtype(t, name, dclass)
    require_full(t, name, name.replace("_", " ") + " indexing")
    return t


def _rows_match(a: Any, b: Any, na: str, nb: str) -> None:
    if not dims_equal(a.shape[0], b.shape[0]):
        raise OpTypeError(f"arguments '{na}' {shape_str(a.shape)} and '{nb}' {shape_str(b.shape)} must have "
                          f"the same number of rows")


def _column(t: Any, name: str) -> None:
    if getattr(t.shape[1], "value", None) != 1:
        raise OpTypeError(f"argument '{name}' must be an index column [M, 1], got {shape_str(t.shape)}")


def _gather_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        src = _operand(ns, args, 0, "src")
        idx = _operand(ns, args, 1, "indices", INDEX_DTYPES)
        _rows_match(src, idx, "src", "indices")
        return shaped_like(ns, idx.shape, src.dtype, src)
    return rule


def _gather_row_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        src = _operand(ns, args, 0, "src")
        idx = _operand(ns, args, 1, "indices", INDEX_DTYPES)
        _column(idx, "indices")
        return shaped_like(ns, (idx.shape[0], src.shape[1]), src.dtype, src)
    return rule


def _scatter_rule(ns: str, rows: bool):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        dst = _operand(ns, args, 0, "dst")
        idx = _operand(ns, args, 1, "indices", INDEX_DTYPES)
        src = _operand(ns, args, 2, "src")
        if src.dtype is not dst.dtype:
            raise OpTypeError(f"arguments 'src' and 'dst' must have the same dtype, got {src.dtype.name} "
                              f"and {dst.dtype.name}")
        if rows:
            _column(idx, "indices")
            _rows_match(idx, src, "indices", "src")
            if not dims_equal(src.shape[1], dst.shape[1]):
                raise OpTypeError(f"argument 'src' rows {shape_str(src.shape)} must be as wide as 'dst' "
                                  f"{shape_str(dst.shape)}")
        else:
            _rows_match(dst, idx, "dst", "indices")
            if not all(dims_equal(x, y) for x, y in zip(idx.shape, src.shape)):
                raise OpTypeError(f"arguments 'indices' {shape_str(idx.shape)} and 'src' {shape_str(src.shape)} "
                                  f"must have the same shape")
        return dst
    return rule


def _gather(src: Any, indices: Any) -> Any:
    return torch.gather(src, -1, indices.long())


def _gather_row(src: Any, indices: Any) -> Any:
    return src[indices[:, 0].long()]


def _scatter(dst: Any, indices: Any, src: Any) -> Any:
    return dst.clone().scatter_(-1, indices.long(), src)


def _scatter_update(dst: Any, indices: Any, src: Any) -> Any:
    out = dst.clone()
    out[indices[:, 0].long()] = src
    return out


def _sort32_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        src = _operand(ns, args, 0, "src")
        if src.dtype is not FP32:
            raise OpTypeError(f"argument 'src' must have dtype FP32, got {src.dtype.name}")
        idx = _operand(ns, args, 1, "idx", INDEX_DTYPES)
        if not all(dims_equal(x, y) for x, y in zip(src.shape, idx.shape)):
            raise OpTypeError(f"arguments 'src' {shape_str(src.shape)} and 'idx' {shape_str(idx.shape)} must "
                              f"have the same shape")
        n = getattr(src.shape[1], "value", None)
        if n is None:
            raise OpTypeError("argument 'src' must have a static number of columns")
        return shaped_like(ns, (src.shape[0], ConstInt(2 * n, INDEX)), FP32, src)
    return rule


def _pairs_sorted(values: Any, index: Any) -> Any:
    """(value, index) rows sorted by value descending, ties by index ascending; interleaved."""
    order = torch.argsort(index, dim=-1, stable=True)
    v, i = torch.gather(values, -1, order), torch.gather(index, -1, order)
    order = torch.argsort(v, dim=-1, descending=True, stable=True)
    v, i = torch.gather(v, -1, order), torch.gather(i, -1, order)
    return torch.stack([v, i.to(values.dtype)], dim=-1).flatten(-2)


def _sort32(src: Any, idx: Any) -> Any:
    blocks = []
    for c in range(0, src.shape[1], SORT_BLOCK):
        blocks.append(_pairs_sorted(src[:, c:c + SORT_BLOCK], idx[:, c:c + SORT_BLOCK].to(torch.int64)))
    return torch.cat(blocks, dim=-1)


def _mrgsort_rule(ns: str):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        src = _operand(ns, args, 0, "src")
        if src.dtype is not FP32:
            raise OpTypeError(f"argument 'src' must have dtype FP32 (sort32 pairs), got {src.dtype.name}")
        n = getattr(src.shape[1], "value", None)
        if n is None or n % 2:
            raise OpTypeError(f"argument 'src' must have an even static number of columns (pairs), "
                              f"got {shape_str(src.shape)}")
        attr_int(attrs, "block_len", 1, n // 2)
        return src
    return rule


def _mrgsort(src: Any, block_len: int = SORT_BLOCK) -> Any:
    pairs = src.reshape(src.shape[0], -1, 2)
    return _pairs_sorted(pairs[..., 0], pairs[..., 1].to(torch.int64))


_VEC = frozenset({"vector"})
_ROWS = [  # name, params, rule, fn, reads, writes, pto, work per element, doc
    ("gather", ("src", "indices"), _gather_rule, _gather, (0, 1), (), "tgather", 1.0,
     "out[i, j] = src[i, indices[i, j]]: a per-row gather along the last axis."),
    ("gather_row", ("src", "indices"), _gather_row_rule, _gather_row, (0, 1), (), "tgatherb", 1.0,
     "out[i, :] = src[indices[i, 0], :]: whole rows selected by an [M, 1] index column."),
    ("scatter", ("dst", "indices", "src"), lambda ns: _scatter_rule(ns, False), _scatter, (0, 1, 2), (),
     "tscatter", 1.0, "A copy of `dst` with dst[i, indices[i, j]] = src[i, j]."),
    ("scatter_update", ("dst", "indices", "src"), lambda ns: _scatter_rule(ns, True), _scatter_update,
     (0, 1, 2), (), "tscatter", 1.0,
     "A copy of `dst` with dst[indices[i, 0], :] = src[i, :] (row update, e.g. a KV cache)."),
    ("sort32", ("src", "idx"), _sort32_rule, _sort32, (0, 1), (), "tsort32", 5.0,
     "Sort every 32-element block of each FP32 row, descending, into (value, index) pairs [M, 2N]."),
    ("mrgsort", ("src",), _mrgsort_rule, _mrgsort, (0,), (), "tmrgsort", 4.0,
     "Merge the sorted runs of `block_len` (value, index) pairs of each row into one descending run."),
]

for _name, _params, _rule, _fn, _reads, _writes, _pto, _f, _doc in _ROWS:
    _attrs = {"block_len": SORT_BLOCK} if _name == "mrgsort" else {}
    for _ns in ("tensor", "tile"):
        _t = _ns == "tile"
        register(OpSpec(f"{_ns}.{_name}", _params, _rule(_ns), _fn, attrs=dict(_attrs), reads=_reads,
                        writes=_writes, traits=_VEC, tile_op=None if _t else f"tile.{_name}",
                        pto=f"pto.{_pto}" if _t else None, cost=vector(_f), family="gather",
                        dtypes="FP32 (indices INT32)" if "sort" in _name else f"{ANY.text} (indices INT32)",
                        doc=_doc))
        register_unified(_name, _ns, None, f"{_ns}.{_name}")
