"""Op attributes (`Call.kwargs`) as an MLIR attribute dictionary: `{mode = "round", a_trans = false}`.

Attributes a PTO type already spells (element types, memory spaces) are left out; `None` values
(defaults that were not given) too.
"""

from __future__ import annotations

import enum
from typing import Any

from ...core.dtype import FP32, DataType
from ...core.enums import MemorySpace
from .scalars import float_literal

__all__ = ["format_attrs"]


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{float_literal(v, FP32)} : f32"
    if isinstance(v, enum.Enum):
        return f'"{v.name}"'
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_attrs(kwargs: tuple[tuple[str, Any], ...]) -> str:
    """` {k = v, ...}` for the kwargs that carry information, or "" when none do."""
    items = [f"{k} = {_value(v)}" for k, v in kwargs
             if v is not None and not isinstance(v, (DataType, MemorySpace))]
    return " {" + ", ".join(items) + "}" if items else ""
