"""Cost-model entries of ops: what work an op call does, as data (DESIGN idea 5).

Every `OpSpec` carries a `Cost` record saying which hardware unit executes it, on which pipe, and
how its amount of work is measured from the call's types. The simulator's cycle model turns a
`Work` (unit, pipe, measure, amount) into cycles with per-SoC throughputs; nothing here knows
about cycles.

Units and pipes (Ascend AI core):

| unit     | pipe  | executes                                                            |
|----------|-------|---------------------------------------------------------------------|
| "vector" | V     | AIV vector unit: elementwise, reductions, broadcasts, gathers, sort |
| "cube"   | M     | AIC cube unit: matmul / gemv                                        |
| "mte"    | MTE2  | DDR -> Vec/Mat loads                                                |
| "mte"    | MTE3  | Vec -> DDR stores                                                   |
| "mte"    | MTE1  | on-chip moves (Mat -> Left/Right/Bias, Vec -> Vec, ...)             |
| "mte"    | FIX   | Acc -> DDR/Mat/Vec (fix-pipe) — a cycle model may refine MTE1/MTE3  |
|          |       | by the source memory space of the call                              |
| "scalar" | S     | scalar unit: element reads/writes, block ids, sync flags             |
| "link"   | MTE2/3, S | a transfer to / from another rank (`pld.*`, SPEC §8): link latency |
|          |       | plus bytes / link bandwidth (MTE2 reads, MTE3 writes, S a signal)     |
| "none"   | NONE  | metadata only (views, valid-shape changes, buffer creation)          |

Measures (`Cost.measure`; `amount = factor * measure`):

| measure     | counts                                                                  |
|-------------|-------------------------------------------------------------------------|
| "out_elems" | elements of the result (full tile/tensor shape, not just its valid part) |
| "in_elems"  | elements of argument 0                                                  |
| "out_bytes" | bytes of the result                                                     |
| "in_bytes"  | bytes of argument 0                                                     |
| "mac"       | multiply-accumulates M*N*K of a matmul (lhs is the param named 'lhs')    |
| "xfer_bytes"| bytes of a region transfer: its `shape` argument if given, else argument 0 |
| "one"       | 1 (a single scalar or synchronisation instruction)                       |
| "zero"      | 0                                                                       |

`factor` is the relative work per measured unit against a simple op of the same unit (an add is
1.0; division, square roots and exponentials cost more; sorts do several passes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..ir.types import TensorType, TileType, Type

if TYPE_CHECKING:
    from ..ir.expr import Call

__all__ = ["Cost", "Work", "UNITS", "PIPES", "MEASURES", "work_of", "vector", "cube", "mte",
           "scalar", "free"]

UNITS = frozenset({"vector", "cube", "mte", "scalar", "link", "none"})
PIPES = frozenset({"V", "M", "MTE1", "MTE2", "MTE3", "FIX", "S", "NONE"})


@dataclass(frozen=True, slots=True)
class Cost:
    """How to measure the work of one op (see the module docstring for the vocabulary).

    Raises ValueError at construction for an unknown unit, pipe or measure.
    """

    unit: str
    pipe: str
    measure: str
    factor: float = 1.0

    def __post_init__(self) -> None:
        if self.unit not in UNITS or self.pipe not in PIPES or self.measure not in MEASURES:
            raise ValueError(f"bad Cost({self.unit!r}, {self.pipe!r}, {self.measure!r})")

    def describe(self) -> str:
        """Short text for the reference page: `vector/V: 2 x out_elems`."""
        f = f"{self.factor:g} x " if self.factor != 1.0 else ""
        return f"{self.unit}/{self.pipe}: {f}{self.measure}"


@dataclass(frozen=True, slots=True)
class Work:
    """The work of one call: `amount` is None when a shape it depends on is dynamic."""

    unit: str
    pipe: str
    measure: str
    amount: float | None


def _elems(t: Type) -> int | None:
    if not isinstance(t, (TensorType, TileType)):
        return None
    n = 1
    for d in t.shape:
        v = getattr(d, "value", None)
        if not isinstance(v, int):
            return None
        n *= v
    return n


def _bytes(t: Type) -> int | None:
    n = _elems(t)
    if n is None:
        return None
    return t.dtype.storage_bytes(n)  # type: ignore[attr-defined]


def _mac(params: tuple[str, ...], args: list[Any], result: Type) -> int | None:
    if "lhs" not in params:
        return None
    lhs = args[params.index("lhs")].type
    out = _elems(result)
    if out is None or not isinstance(lhs, (TensorType, TileType)) or len(lhs.shape) != 2:
        return None
    k = getattr(lhs.shape[1], "value", None)
    return out * k if isinstance(k, int) else None


def _xfer(params: tuple[str, ...], args: list[Any], result: Type) -> int | None:
    """Bytes a region transfer moves: its `shape` argument (when given, constant) of argument 0's dtype,
    else all of argument 0."""
    if not args:
        return None
    if "shape" in params and params.index("shape") < len(args):
        dims = [getattr(d, "value", None) for d in getattr(args[params.index("shape")], "elements", ())]
        if not dims or not all(isinstance(d, int) for d in dims):
            return None
        n = 1
        for d in dims:
            n *= d
        return args[0].type.dtype.storage_bytes(n)
    return _bytes(args[0].type)


MEASURES: dict[str, Callable[[tuple[str, ...], list[Any], Type], int | None]] = {
    "out_elems": lambda p, a, r: _elems(r),
    "in_elems": lambda p, a, r: _elems(a[0].type) if a else None,
    "out_bytes": lambda p, a, r: _bytes(r),
    "in_bytes": lambda p, a, r: _bytes(a[0].type) if a else None,
    "mac": _mac,
    "xfer_bytes": _xfer,
    "one": lambda p, a, r: 1,
    "zero": lambda p, a, r: 0,
}


def work_of(call: Call) -> Work:
    """The `Work` of a registered-op `call`, from its OpSpec's `cost` and the call's types.

    Raises:
        KeyError: if the op is unknown; ValueError if the op has no cost entry.
    """
    from .registry import get_op

    spec = get_op(call.op)  # type: ignore[arg-type]
    c = spec.cost
    if c is None:
        raise ValueError(f"op {spec.name} has no cost-model entry")
    n = MEASURES[c.measure](spec.params, list(call.args), call.type)
    return Work(c.unit, c.pipe, c.measure, None if n is None else n * c.factor)


# ---- shorthands used by the op families ------------------------------------------------------

def vector(factor: float = 1.0, measure: str = "out_elems") -> Cost:
    return Cost("vector", "V", measure, factor)


def cube() -> Cost:
    return Cost("cube", "M", "mac")


def mte(pipe: str, measure: str = "out_bytes") -> Cost:
    return Cost("mte", pipe, measure)


def scalar() -> Cost:
    return Cost("scalar", "S", "one")


def free() -> Cost:
    return Cost("none", "NONE", "zero")
