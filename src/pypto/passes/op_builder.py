"""Building op calls inside passes: the registry's type rule runs on every call a pass creates."""

from __future__ import annotations

from typing import Any

from ..core.dtype import INDEX
from ..core.errors import CompileError
from ..core.span import Span
from ..ir.expr import Call, ConstInt, Expr
from ..ir.types import Type
from ..ops import OpTypeError, get_op

__all__ = ["build_call", "zeros_like_offsets"]


def build_call(op: str, args: list[Expr], attrs: dict[str, Any], span: Span | None = None) -> Call:
    """A Call of registered `op` with defaults filled in. Raises CompileError if the rule rejects it."""
    spec = get_op(op)
    full = dict(spec.attrs)
    full.update(attrs)
    try:
        rt = spec.infer(list(args), full)
    except OpTypeError as e:
        raise CompileError(f"{op}: {e}", span) from None
    return Call(op, tuple(args), tuple(full.items()), rt, span=span or Span.unknown())


def zeros_like_offsets(t: Type) -> tuple[Expr, ...]:
    return tuple(ConstInt(0, INDEX) for _ in t.shape)  # type: ignore[attr-defined]
