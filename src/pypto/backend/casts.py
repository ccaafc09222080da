"""Native dtype conversions of each target and the chains that legalize the others (SPEC §5).

One hardware conversion instruction (`pto.tcvt`) converts between a *native* pair of dtypes. Which
pairs are native depends on the architecture — the seeds' example: INT32 → FP16 is one instruction
on Ascend910B, while Ascend950 has no such instruction and converts INT32 → FP32 → FP16. A cast of
a non-native pair is legalized (pass LegalizeTileCast) into a chain of native casts.

Native pairs (→ one way, ↔ both ways):

| pair | Ascend910B | Ascend950 |
|---|---|---|
| FP32 ↔ FP16, FP32 ↔ BF16 | yes | yes |
| FP32 ↔ INT32, FP32 ↔ INT16, FP32 ↔ INT64 | yes | yes |
| FP16 ↔ INT32 except INT32 → FP16, FP16 ↔ INT16, FP16 ↔ INT8, FP16 ↔ UINT8, FP16 ↔ INT4 | yes | yes |
| BF16 → INT32 | yes | yes |
| INT32 ↔ INT64, INT32 → INT16 | yes | yes |
| INT32 → FP16 | yes | no (INT32 → FP32 → FP16) |
| FP32 ↔ FP8E4M3FN, FP32 ↔ FP8E5M2, FP32 ↔ HF8, BF16 ↔ FP4, FP8E8M0 → FP32 | no | yes |
| BOOL → UINT8, INDEX ↔ INT64 (reinterpretations: same bytes, same values) | yes | yes |

Not convertible on either target, with the reason `cast_refusal` gives: anything → BOOL (a
mask is the result of a comparison, `pl.cmps(x, 0, cmp_type="ne")`, not of a conversion);
UINT16 / UINT32 / UINT64 and UINT4 (no conversion instruction reads or writes them); HF4 (no
instruction converts it); FP8 / FP4 / HF8 / FP8E8M0 on Ascend910B (no low-precision float
hardware; Ascend950 has it). FP8E8M0 (a power-of-two scale) only widens to FP32. A BOOL mask from
the host is one byte per element holding 0 or 1 (docs/architecture.md), so BOOL → UINT8 reads
the same bytes and every other conversion from BOOL chains through UINT8.

Expanded pairs are not written by hand: `cast_chain` finds, over the native pairs, the chain that
(1) passes only through *safe* intermediate types — ones that hold every value of the source or
every value of the destination, so no intermediate wraps or overflows a value the direct conversion
would keep (INT32 → INT16 → FP16 would wrap 40000; INT32 → FP32 → FP16 does not) —, then (2) has the
fewest *inexact* hops (a hop is exact when its type holds every value of the source, so widening
first never loses anything), then (3) the fewest hops; ties break on the order of
`dtype.ALL_DTYPES`. `expanded_casts(backend)` lists every expanded pair with its
chain; examples: INT8 → INT32 is INT8 → FP16 → INT32 (2 hops, exact) on both targets; INT32 → FP16
is 1 hop on Ascend910B and 2 on Ascend950. A chain with two inexact hops can differ from a directly
rounded conversion by one unit in the last place of the destination (double rounding).
"""

from __future__ import annotations

import heapq
from functools import cache

from ..core import dtype as D
from ..core.dtype import DataType

__all__ = ["NATIVE_CASTS", "cast_chain", "cast_refusal", "expanded_casts", "holds_all_values"]


def _both(*pairs: tuple[DataType, DataType]) -> set[tuple[DataType, DataType]]:
    return {p for a, b in pairs for p in ((a, b), (b, a))}


_COMMON = _both((D.FP32, D.FP16), (D.FP32, D.BF16), (D.FP32, D.INT32), (D.FP32, D.INT16),
                (D.FP32, D.INT64), (D.FP16, D.INT16), (D.FP16, D.INT8), (D.FP16, D.UINT8),
                (D.FP16, D.INT4), (D.INT32, D.INT64), (D.INDEX, D.INT64)) | {
    (D.FP16, D.INT32), (D.BF16, D.INT32), (D.INT32, D.INT16), (D.BOOL, D.UINT8)}

#  target name  → native (src, dst) pairs; keyed by name so `pypto.backend.soc` can import this table
NATIVE_CASTS: dict[str, frozenset[tuple[DataType, DataType]]] = {
    "Ascend910B": frozenset(_COMMON | {(D.INT32, D.FP16)}),
    "Ascend950": frozenset(_COMMON | _both((D.FP32, D.FP8E4M3FN), (D.FP32, D.FP8E5M2), (D.FP32, D.HF8),
                                           (D.BF16, D.FP4)) | {(D.FP8E8M0, D.FP32)}),
}

#  float dtype → (exponent bits, mantissa bits), to decide whether one type holds another's values
_FLOAT_BITS = {"FP32": (8, 23), "FP16": (5, 10), "BF16": (8, 7), "FP8E4M3FN": (4, 3),
               "FP8E5M2": (5, 2), "FP8E8M0": (8, 0), "HF8": (5, 3), "FP4": (2, 1), "HF4": (2, 1)}


def _int_range(t: DataType) -> tuple[int, int]:
    if t.is_unsigned_int():
        return 0, (1 << t.bits) - 1
    return -(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1


def holds_all_values(src: DataType, dst: DataType) -> bool:
    """True when every value of `src` is exactly representable in `dst` (a widening)."""
    if src is dst:
        return True
    if src.is_bool():   # 0 and 1: every number type except FP8E8M0 (powers of two, no zero)
        return dst.is_int() or (dst.name in _FLOAT_BITS and dst is not D.FP8E8M0)
    if src.is_int() and dst.is_int():
        (a0, a1), (b0, b1) = _int_range(src), _int_range(dst)
        return b0 <= a0 and a1 <= b1
    if src.is_int() and dst.name in _FLOAT_BITS:
        lo, hi = _int_range(src)
        return max(-lo, hi) <= 1 << (_FLOAT_BITS[dst.name][1] + 1)
    if src.name in _FLOAT_BITS and dst.name in _FLOAT_BITS:
        (e1, m1), (e2, m2) = _FLOAT_BITS[src.name], _FLOAT_BITS[dst.name]
        return e1 <= e2 and m1 <= m2
    return False


@cache
def cast_chain(backend: str, src: DataType, dst: DataType) -> tuple[DataType, ...] | None:
    """The dtypes a cast from `src` to `dst` passes through on `backend` (a BackendType name),
    ending with `dst` and excluding `src`: `(dst,)` for a native pair (or `src is dst`), a longer
    chain for an expanded pair, None when no chain of native casts exists. See the module docstring.
    """
    if src is dst:
        return (dst,)
    native = NATIVE_CASTS[backend]
    order = {t: i for i, t in enumerate(D.ALL_DTYPES)}
    # cost: (unsafe intermediates, inexact hops, hops, dtype order of the path) — lexicographic
    heap: list[tuple[tuple[int, int, int], tuple[int, ...], tuple[DataType, ...]]] = [((0, 0, 0), (), ())]
    done: set[DataType] = set()
    while heap:
        cost, key, path = heapq.heappop(heap)
        cur = path[-1] if path else src
        if cur is dst:
            return path
        if cur in done:
            continue
        done.add(cur)
        for a, nxt in native:
            if a is not cur or nxt in done or nxt is src:
                continue
            unsafe = nxt is not dst and not (holds_all_values(src, nxt) or holds_all_values(dst, nxt))
            step = (cost[0] + unsafe, cost[1] + (not holds_all_values(src, nxt)), cost[2] + 1)
            heapq.heappush(heap, (step, key + (order[nxt],), path + (nxt,)))
    return None


def expanded_casts(backend: str) -> dict[tuple[DataType, DataType], tuple[DataType, ...]]:
    """Every non-native pair that a chain legalizes on `backend`, with its chain (see `cast_chain`)."""
    types = sorted({t for pair in NATIVE_CASTS[backend] for t in pair}, key=D.ALL_DTYPES.index)
    out = {}
    for a in types:
        for b in types:
            chain = cast_chain(backend, a, b) if a is not b else None
            if chain is not None and len(chain) > 1:
                out[(a, b)] = chain
    return out


def cast_refusal(backend: str, src: DataType, dst: DataType) -> str:
    """Why `backend` cannot convert `src` to `dst` (for a pair `cast_chain` returns None for), as
    a sentence a user can act on."""
    native = NATIVE_CASTS[backend]
    if dst.is_bool():
        return ("no instruction converts to BOOL: a mask is the result of a comparison, e.g. "
                "pl.cmps(x, 0, cmp_type=\"ne\") (a UINT8 mask that pl.sel takes like a BOOL one)")
    for t, role, side in ((src, "from", 0), (dst, "to", 1)):
        if not any(pair[side] is t for pair in native):
            other = [b for b in NATIVE_CASTS if b != backend and any(p[side] is t for p in NATIVE_CASTS[b])]
            where = f" ({', '.join(other)} has one)" if other else ""
            return f"{backend} has no conversion instruction {role} {t.name}{where}"
    reach = [t.name for t in D.ALL_DTYPES if (src, t) in native]
    return (f"no chain of native conversions leads from {src.name} to {dst.name} on {backend} "
            f"({src.name} converts to {', '.join(reach)})")
