"""Suggestions for Python habits that a kernel body does not support (SPEC §2.4 diagnostics).

A kernel body is parsed, not run, so `x.shape[0]`, a call of a plain Python helper on kernel
values, or a misspelt enum member (`pl.Level.CORE`) cannot work; these helpers turn each into an
error that says what to write instead.
"""

from __future__ import annotations

import enum
import inspect
from typing import Any

from ...core.errors import ParserSyntaxError
from ...core.span import Span
from ...ir.expr import Expr, Var
from ...ir.types import ScalarType, TensorType, TileType

__all__ = ["ir_attribute_error", "attribute_hint", "python_helper_hint"]


def _shape_text(t: TensorType | TileType) -> str:
    from ...ops.typing_rules import shape_str

    return shape_str(tuple(t.shape))


def ir_attribute_error(text: str, attr: str, value: Expr, span: Span) -> ParserSyntaxError:
    """The error for `<text>.<attr>` on an IR value (`x.shape`, `t.dtype`, ...)."""
    t = value.type
    if attr == "shape" and isinstance(t, TensorType):
        dynamic = [d.name for d in t.shape if isinstance(d, Var)]
        sizes = "a number for a static dimension" + (
            f", the pl.dynamic variable for a dynamic one ({', '.join(dynamic)})" if dynamic else "")
        how = (f"write pl.dim({text}, i) for the size of dimension i (pl.dim({text}, 0) for "
               f"{text}.shape[0]) or the size itself ({sizes})")
        return ParserSyntaxError(
            f"'{text}.shape' is not available in a kernel body: {text} is a tensor of shape "
            f"{_shape_text(t)}; {how}. pl.static_assert(pl.dim({text}, i) == n) checks a static size "
            f"at compile time", span)
    if attr == "shape" and isinstance(t, TileType):
        return ParserSyntaxError(
            f"'{text}.shape' is not available in a kernel body: {text} is a tile of shape "
            f"{_shape_text(t)}, fixed when the kernel is compiled; use those sizes (or the names "
            f"you built it from)", span)
    if attr == "dtype" and isinstance(t, (TensorType, TileType, ScalarType)):
        return ParserSyntaxError(
            f"'{text}.dtype' is not available in a kernel body: {text} has dtype pl.{t.dtype.name}, "
            f"fixed when the kernel is compiled; write pl.{t.dtype.name}", span)
    return ParserSyntaxError(f"attribute access '.{attr}' on an IR value is not supported", span)


def dtype_spelling_hint(attr: str) -> str:
    """"; did you mean pl.FP32?" when `attr` spells a data type another way (`float32`, `fp32`,
    `torch.bfloat16`'s `bfloat16`), else ""."""
    from ...core.dtype import ALL_DTYPES, dtype_from_name

    try:
        return f"; did you mean pl.{dtype_from_name(attr).name}?"
    except KeyError:
        pass
    for dt in ALL_DTYPES:
        if dt.name not in ("INDEX", "TASK_ID") and str(dt.to_torch(strict=False)) == f"torch.{attr}":
            return f"; did you mean pl.{dt.name}? (PyPTO data types are pl.FP32, pl.BF16, pl.INT32, ...)"
    return ""


def attribute_hint(base: Any, base_text: str, attr: str, err: AttributeError) -> str:
    """Text to append to "Undefined name '<base_text>.<attr>'": the valid members of a pl enum (its
    own AttributeError lists them), a data type spelt another way, else the closest public attribute."""
    if isinstance(base, enum.EnumMeta) and str(err) != attr:
        return f": {err}"
    if getattr(base, "__name__", None) == "pypto.language" and dtype_spelling_hint(attr):
        return dtype_spelling_hint(attr)
    import difflib

    close = difflib.get_close_matches(attr, [n for n in dir(base) if not n.startswith("_")], n=1)
    return f"; did you mean '{base_text}.{close[0]}'?" if close else ""


_BUILTIN_TWINS = {min: "pl.min(a, b) for scalars, pl.minimum(a, b) for tensors and tiles",
                  max: "pl.max(a, b) for scalars, pl.maximum(a, b) for tensors and tiles",
                  abs: "pl.abs(x)"}


def python_helper_hint(fn: Any, name: str) -> str:
    """For a plain Python function (not a builtin, not PyPTO's own) called in a kernel body: how to
    make it a kernel helper; for the builtins min / max / abs, the PyPTO op to call instead. Empty
    for anything else."""
    if fn in _BUILTIN_TWINS:
        return f"; use {_BUILTIN_TWINS[fn]}"
    if not inspect.isfunction(fn) or (fn.__module__ or "").startswith("pypto."):
        return ""
    return (f"; to use '{name}' as a kernel helper, decorate it with @pl.inline (parameters annotated "
            f"with their types) or @pl.jit.inline (a parameter annotated bare pl.Tensor takes the type of "
            f"its argument), so its body is spliced in here")
