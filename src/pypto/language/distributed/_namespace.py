"""The `pld` op objects, generated from the op registry like `pl.tensor` / `pl.tile` (SPEC §8).

Every registered op named `pld.<ns>.<op>` becomes `pld.<ns>.<op>` (an `OpRef`, parsed, not called);
`pld.<op>` ops (no sub-namespace) are the top-level names. Short forms (`pld.notify`,
`pld.remote_store`, ...) come from `pypto.ops.distributed.SHORT_FORMS`; one that means a tile or a
tensor op by the kind of its first argument is a `ShortForm`.
"""

from __future__ import annotations

import ast
from typing import Any

from ... import ops as _ops
from ...core.errors import ParserTypeError
from ...ir.types import TensorType, TileType
from ..op_wrappers import OpRef

__all__ = ["ops_under", "ShortForm", "short_forms", "SUB_NAMESPACES"]

SUB_NAMESPACES = ("system", "tile", "tensor")


def ops_under(prefix: str) -> dict[str, OpRef]:
    """{leaf: OpRef} of the registered ops named `<prefix><leaf>` with no further dot in the leaf."""
    out = {}
    for spec in _ops.all_ops():
        if spec.name.startswith(prefix):
            leaf = spec.name[len(prefix):]
            if "." not in leaf:
                out[leaf] = OpRef(spec.name)
    return out


class ShortForm:
    """`pld.<name>`: the tile or the tensor form of an op, by the kind of the first argument."""

    def __init__(self, name: str, table: dict[str, str]) -> None:
        self.name, self.table = name, table
        self.__doc__ = _ops.get_op(next(iter(table.values()))).doc

    def __repr__(self) -> str:
        return f"pld.{self.name}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self!r}(...) can only be used inside a @pl.function / @pl.jit body")

    def __pypto_call__(self, parser: Any, node: ast.Call) -> Any:
        """Parse the call: pick `pld.tile.X` for a Tile first argument, `pld.tensor.X` for a Tensor."""
        args = [parser.parse_value(a) for a in node.args]
        kwargs = {k.arg: parser.parse_value(k.value) for k in node.keywords}
        first = parser.to_expr(args[0], node).type if args else None
        kind = "tile" if isinstance(first, TileType) else "tensor" if isinstance(first, TensorType) else None
        op = self.table.get(kind or "")
        if op is None:
            kinds = " or ".join(k.capitalize() for k in self.table)
            got = type(first).__name__.replace("Type", "") if first is not None else "nothing"
            raise ParserTypeError(f"{self!r} expects a {kinds} as first argument, got {got}", parser.span(node))
        return parser.call_op(op, args, kwargs, node)


def short_forms() -> dict[str, Any]:
    """{name: OpRef or ShortForm} of the `pld.<name>` short forms."""
    from ...ops.distributed import SHORT_FORMS

    out: dict[str, Any] = {}
    for name, table in SHORT_FORMS.items():
        out[name] = OpRef(table[""]) if set(table) == {""} else ShortForm(name, table)
    return out
