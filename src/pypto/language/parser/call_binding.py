"""Python's argument binding for calls of kernels and helpers inside a kernel body.

`f(x, y=y)`, `helper(x, scale=3.0)` and `helper(x)` with `def helper(x, scale=2.0)` mean in a
kernel what they mean in Python: `positional_call` rewrites such a call's AST into the purely
positional call the parsers of function calls (`call_function`, `@pl.jit` sub-functions) and of
inline helpers (`inline_call`) take — keywords naming a parameter moved to its position, missing
trailing parameters filled from constant defaults. Keywords that are not parameters (`deps=`,
`device=`) stay keywords for those parsers.
"""

from __future__ import annotations

import ast
import enum
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from ...core.errors import ParserSyntaxError, ParserTypeError
from ...core.span import Span

__all__ = ["positional_call", "python_defaults"]

_CONSTANT_DEFAULT = (bool, int, float, str, type(None))


def python_defaults(fn: Callable) -> dict[str, Any]:
    """The default values of `fn`'s parameters (name -> value); those without one are left out."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    return {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}


def positional_call(node: ast.Call, names: Sequence[str], callee: str, span: Span,
                    defaults: dict[str, Any] | None = None) -> ast.Call:
    """`node` with every keyword argument that names a parameter of `names` moved to its position
    and missing parameters taken from `defaults` (constants, enum members). The same node when
    there is nothing to move or fill; a call with too many positional arguments is returned as it
    is (the caller reports the count).

    Raises:
        ParserSyntaxError: `*args` / `**kwargs` in the call.
        ParserTypeError: a parameter given twice, or one left without a value (its name is said).
    """
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        raise ParserSyntaxError(f"*args / **kwargs are not supported in a call of '{callee}'", span)
    defaults = defaults or {}
    by_name = [k for k in node.keywords if k.arg in names]
    if len(node.args) > len(names) or (not by_name and len(node.args) == len(names)):
        return node
    slots: list[ast.expr | None] = list(node.args) + [None] * (len(names) - len(node.args))
    for k in by_name:
        i = list(names).index(k.arg)  # type: ignore[arg-type]
        if slots[i] is not None:
            raise ParserTypeError(f"'{callee}' got multiple values for argument '{k.arg}'", span)
        slots[i] = k.value
    missing = []
    for i, (n, s) in enumerate(zip(names, slots)):
        if s is None and n in defaults and isinstance(defaults[n], (*_CONSTANT_DEFAULT, enum.Enum)):
            slots[i] = _constant(defaults[n], node)
        elif s is None:
            missing.append(n)
    if missing:
        raise ParserTypeError(f"'{callee}' is missing argument{'s' if len(missing) > 1 else ''} "
                              f"{', '.join(repr(m) for m in missing)}", span)
    out = ast.Call(node.func, slots, [k for k in node.keywords if k.arg not in names])
    return ast.copy_location(out, node)


def _constant(v: Any, at: ast.AST) -> ast.expr:
    """An expression node whose value is the default `v` (the parser takes an `ast.Constant`'s
    value as it is, an enum member included), located at the call `at`."""
    return ast.copy_location(ast.Constant(v), at)
