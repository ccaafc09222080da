"""`json.dumps(data, indent=2)` text, made faster for the small reports of a build.

The standard library encodes with its C accelerator only when `indent` is None; with an indent it
runs a pure-Python generator per token, which is a visible part of `ir.compile` (five JSON files per
build). `dumps_indented` writes the very same text with one recursive pass over dicts, lists,
tuples, strings (`json.encoder.encode_basestring_ascii`, the C escaper `json.dumps` uses), ints,
floats, bools and None; anything else — or a dict key that is not a string — goes to
`json.dumps` itself, so its results and errors are exactly those of `json.dumps(data, indent=2)`.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring_ascii
from typing import Any

__all__ = ["dumps_indented"]

_INF = float("inf")


class _Other(Exception):
    """A value `_emit` leaves to `json.dumps`."""


def _float(x: float) -> str:
    if x != x:
        return "NaN"
    if x == _INF:
        return "Infinity"
    if x == -_INF:
        return "-Infinity"
    return float.__repr__(x)


def _emit(x: Any, out: list[str], nl: str) -> None:
    t = type(x)
    if t is str:
        out.append(encode_basestring_ascii(x))
    elif x is None:
        out.append("null")
    elif x is True:
        out.append("true")
    elif x is False:
        out.append("false")
    elif t is int:
        out.append(int.__repr__(x))
    elif t is float:
        out.append(_float(x))
    elif t is dict:
        if not x:
            out.append("{}")
            return
        inner = nl + "  "
        sep = "{" + inner
        for k, v in x.items():
            if type(k) is not str:
                raise _Other
            out.append(sep)
            out.append(encode_basestring_ascii(k))
            out.append(": ")
            _emit(v, out, inner)
            sep = "," + inner
        out.append(nl + "}")
    elif t is list or t is tuple:
        if not x:
            out.append("[]")
            return
        inner = nl + "  "
        sep = "[" + inner
        for v in x:
            out.append(sep)
            _emit(v, out, inner)
            sep = "," + inner
        out.append(nl + "]")
    else:
        raise _Other


def dumps_indented(data: Any) -> str:
    """`json.dumps(data, indent=2)`: the same text, and the same errors (TypeError for a value JSON
    cannot hold, ValueError for a circular reference)."""
    out: list[str] = []
    try:
        _emit(data, out, "\n")
    except (_Other, RecursionError):
        return json.dumps(data, indent=2)
    return "".join(out)
