"""`pl.tensor.*`, `pl.tile.*`, `pl.system.*` and unified `pl.*` op objects, generated from the registry (SPEC §3).

An `OpRef` names one registered op; a `UnifiedOp` picks `tensor.X` / `tile.X` (or the scalar form
`X`s) from the types of its arguments using `pypto.ops.UNIFIED`. Both are parsed, not called.
"""

from __future__ import annotations

import types
from typing import Any

from .. import ops as _ops
from ..ir.types import ScalarType, TensorType, TileType, Type

__all__ = ["OpRef", "UnifiedOp", "tensor", "tile", "system", "array", "unified_ops", "resolve_unified"]


class _ParsedOnly:
    name: str

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self!r}(...) can only be used inside a @pl.function / @pl.jit body")


class OpRef(_ParsedOnly):
    """A specific registered op, e.g. `pl.tile.add` → `tile.add`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__doc__ = _ops.get_op(name).doc

    def __repr__(self) -> str:
        return _ops.get_op(self.name).dsl_name


class UnifiedOp(_ParsedOnly):
    """`pl.X`: dispatches to the tensor or tile form by the first argument's type."""

    def __init__(self, name: str) -> None:
        self.name = name
        first = next(iter(_ops.UNIFIED[name].values()))
        self.__doc__ = _ops.get_op(first).doc

    def __repr__(self) -> str:
        return f"pl.{self.name}"


def resolve_unified(name: str, arg_types: list[Type]) -> str:
    """The op name `pl.<name>` means for arguments of `arg_types`.

    Raises:
        ValueError: with a message naming the accepted argument kinds.
    """
    table = _ops.UNIFIED[name]
    first = arg_types[0] if arg_types else None
    ns = "tensor" if isinstance(first, TensorType) else "tile" if isinstance(first, TileType) else None
    scalar = len(arg_types) > 1 and isinstance(arg_types[1], ScalarType)
    if ns is not None and (ns, scalar) in table:
        return table[(ns, scalar)]
    if len(set(table.values())) == 1:
        return next(iter(table.values()))
    kinds = sorted({k[0] for k in table})
    got = type(first).__name__.replace("Type", "") if first is not None else "nothing"
    raise ValueError(f"pl.{name} expects a {' or '.join(k.capitalize() for k in kinds)} as first "
                     f"argument, got {got}")


def _namespace(ns: str) -> types.SimpleNamespace:
    """`pl.<ns>`: one OpRef per registered op of `ns`, under its Python spelling (`and_`)."""
    entries = {}
    for spec in _ops.all_ops():
        if spec.namespace == ns:
            entries[spec.python_name.split(".", 1)[1]] = OpRef(spec.name)
    return types.SimpleNamespace(**entries)


tensor = _namespace("tensor")
tile = _namespace("tile")
system = _namespace("system")
array = _namespace("array")  # pl.array.* (SPEC §13; pypto.ops.array)
unified_ops: dict[str, UnifiedOp] = {name: UnifiedOp(name) for name in _ops.UNIFIED}


def export_namespace(module_globals: dict[str, Any], ns: str) -> list[str]:
    """Put the OpRefs of `pl.<ns>` into a module's globals; returns their names for `__all__`.

    Used by the upstream-path modules `pypto.language.op.<ns>_ops` (SPEC §13).
    """
    entries = vars({"tensor": tensor, "tile": tile, "system": system}[ns])
    module_globals.update(entries)
    return sorted(entries)
