"""`pl.func_attr({...})` (SPEC §13 "Directives and helpers"): a function's attributes, written as the
first statement of its body (after an optional docstring); the older `@pl.function(attrs={...})`
says the same.

Keys with a meaning of their own are decorator options: "level" (a `pl.Level` or its name), "role"
(a `pl.Role` or its name) and "optimizations" (a list of `pl.split(...)` / `pl.cross_core_slot(...)`);
giving one both ways with different values is an error. Every other key is metadata: kept on
`Function.attrs` (sorted by key), printed back as `pl.func_attr({...})`, serialized, compared
structurally, and copied into the build's `kernel_config.py` / `compiled_meta.json`; its value
must be JSON-able: a bool, int, finite float, str or None, or a list of those.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from ...core.enums import Level, Role
from ...core.errors import ParserSyntaxError, ParserTypeError

__all__ = ["FuncAttrError", "split_attrs", "MAPPED_KEYS", "func_attr_call", "parse_func_attr"]

MAPPED_KEYS = ("level", "role", "optimizations")
_SCALARS = (bool, int, float, str, type(None))


class FuncAttrError(ValueError):
    """A bad `pl.func_attr` / `attrs=` entry; the caller attaches the location."""


def _meta_value(key: str, v: Any) -> Any:
    """`v` as stored in `Function.attrs`: a scalar, or a tuple of scalars for a list."""
    if isinstance(v, (list, tuple)):
        for x in v:
            _check_scalar(key, x)
        return tuple(v)
    _check_scalar(key, v)
    return v


def _check_scalar(key: str, v: Any) -> None:
    if not isinstance(v, _SCALARS):
        raise FuncAttrError(f"pl.func_attr: the value of {key!r} must be a bool, int, float, str, None or a "
                            f"list of those, got {type(v).__name__}")
    if isinstance(v, float) and not math.isfinite(v):
        raise FuncAttrError(f"pl.func_attr: the value of {key!r} must be a finite number, got {v!r}")


def _enum(key: str, v: Any, cls: type) -> Any:
    if isinstance(v, cls):
        return v
    if isinstance(v, str) and v in cls.__members__:
        return cls[v]
    raise FuncAttrError(f"pl.func_attr: {key!r} must be a pl.{cls.__name__} or one of "
                        f"{', '.join(cls.__members__)}, got {v!r}")


def split_attrs(attrs: dict[str, Any]) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...]]:
    """Split an attribute dict into decorator options ({"level": Level, "role": Role,
    "optimizations": ((name, params), ...)}) and the metadata pairs of `Function.attrs`.

    Raises FuncAttrError for a key that is not a str, a bad option or a value that is not JSON-able.
    """
    from ..dsl import Optimization

    options: dict[str, Any] = {}
    meta: list[tuple[str, Any]] = []
    for k, v in attrs.items():
        if not isinstance(k, str):
            raise FuncAttrError(f"pl.func_attr: keys must be strings, got {k!r}")
        if k == "level":
            options[k] = _enum(k, v, Level)
        elif k == "role":
            options[k] = _enum(k, v, Role)
        elif k == "optimizations":
            if not isinstance(v, (list, tuple)) or not all(isinstance(o, Optimization) for o in v):
                raise FuncAttrError("pl.func_attr: 'optimizations' must be a list of pl.split(...) / "
                                    f"pl.cross_core_slot(...), got {v!r}")
            options[k] = tuple((o.name, o.params) for o in v)
        else:
            meta.append((k, _meta_value(k, v)))
    return options, tuple(sorted(meta))


def merge_options(current: dict[str, Any], attrs: dict[str, Any]) -> dict[str, Any]:
    """`current` decorator options (level, role, optimizations; None / () when not given) updated by
    the options of a `pl.func_attr`. Raises FuncAttrError when both give one with different values."""
    out = dict(current)
    for k, v in attrs.items():
        have = current.get(k)
        if have not in (None, ()) and have != v:
            raise FuncAttrError(f"pl.func_attr: {k!r} is {v!r} here but {have!r} in the decorator")
        out[k] = v
    return out


def func_attr_call(parser: Any, body: list[ast.stmt]) -> int | None:
    """The index in `body` of a leading `pl.func_attr(...)` statement (after an optional
    docstring), None when there is none."""
    i = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and isinstance(body[0].value.value, str) else 0
    if i < len(body) and isinstance(body[i], ast.Expr) and parser.is_builtin_call(body[i].value, "func_attr"):
        return i
    return None


def parse_func_attr(parser: Any, call: ast.Call) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...]]:
    """Options and metadata (`split_attrs`) of the statement `pl.func_attr({...})`.

    Raises ParserSyntaxError unless the one argument is a dict literal; ParserTypeError (at the
    entry) for a bad key or value."""
    span = parser.span(call)
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.Dict):
        raise ParserSyntaxError("pl.func_attr takes one dict literal: pl.func_attr({\"key\": value, ...})", span)
    d = call.args[0]
    attrs: dict[str, Any] = {}
    for kn, vn in zip(d.keys, d.values):
        if kn is None:
            raise ParserSyntaxError("pl.func_attr: '**' is not supported in the dict; write each key", span)
        key, value = parser.parse_value(kn), parser.parse_value(vn)
        try:
            split_attrs({key: value})
        except FuncAttrError as e:
            raise ParserTypeError(str(e), parser.span(vn)) from None
        if key in attrs:
            raise ParserTypeError(f"pl.func_attr: key {key!r} given twice", parser.span(kn))
        attrs[key] = value
    return split_attrs(attrs)
