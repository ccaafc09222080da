"""`fast_replace`: `dataclasses.replace` for IR nodes, without the generic path (the passes'
mutators rebuild many nodes; DESIGN "IR is data": nodes are frozen, slotted dataclasses)."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

__all__ = ["fast_replace"]

_FIELDS: dict[type, tuple[str, ...] | None] = {}  # per class: its fields, None when not plain
_UNSEEN = object()


def fast_replace(obj: Any, **changes: Any) -> Any:
    """`dataclasses.replace(obj, **changes)` for the IR's frozen slotted node classes, without the
    generic path: a class whose `__init__` only stores its fields (no `__post_init__`, every field
    an init field) gets a new object with the fields set directly; any other through `replace`."""
    cls = type(obj)
    names = _FIELDS.get(cls, _UNSEEN)
    if names is _UNSEEN:
        fs = fields(cls)
        plain = not hasattr(cls, "__post_init__") and all(f.init for f in fs)
        names = _FIELDS[cls] = tuple(f.name for f in fs) if plain else None
    if names is None:
        return replace(obj, **changes)
    assert isinstance(names, tuple)
    new = object.__new__(cls)
    known = 0
    for n in names:
        if n in changes:
            _set(new, n, changes[n])
            known += 1
        else:
            _set(new, n, getattr(obj, n))
    return new if known == len(changes) else replace(obj, **changes)  # replace names the unknown field


_set = object.__setattr__
