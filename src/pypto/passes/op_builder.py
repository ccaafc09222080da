"""Building op calls inside passes: the registry's type rule runs on every call a pass creates."""

from __future__ import annotations

from ..core.dtype import INDEX
from ..ir.expr import ConstInt, Expr
from ..ir.op import make_call
from ..ir.types import Type

__all__ = ["build_call", "zeros_like_offsets"]


build_call = make_call  # the registry's type rule runs on every call a pass creates (pypto.ir.op)


def zeros_like_offsets(t: Type) -> tuple[Expr, ...]:
    return tuple(ConstInt(0, INDEX) for _ in t.shape)  # type: ignore[attr-defined]
