"""IR call builders per op namespace (upstream path `pypto.ir.op`, SPEC §13).

`ir.op.tensor.add(a, b)`, `ir.op.tile.load(t, [0, 0], [16, 16])`, `ir.op.system.bar_all()` return
the `ir.Call` the parser would build for the same op: the registry's type rule runs, attribute
defaults are filled in, and the call's result type is the inferred one. Arguments are IR
expressions; Python numbers become constants (int → INDEX, float → FP32, bool → BOOL) and lists or
tuples become `MakeTuple`s (offsets, shapes). Keyword arguments are the op's attributes
(`target_memory=pl.Mem.Mat`); `span=` locates the call.

`make_call(op_name, args, attrs, span)` is the shared builder (the passes use it too).
"""

from __future__ import annotations

from typing import Any

from ...core.dtype import FP32, INDEX
from ...core.errors import CompileError
from ...core.span import Span
from ...ops import OpTypeError, all_ops, get_op
from ..expr import Call, ConstBool, ConstFloat, ConstInt, Expr, MakeTuple

__all__ = ["make_call", "tensor", "tile", "system", "array"]


def make_call(op: str, args: list[Expr] | tuple[Expr, ...], attrs: dict[str, Any] | None = None,
              span: Span | None = None) -> Call:
    """A Call of registered `op` with the op's attribute defaults filled in.

    Raises:
        KeyError: `op` is not registered.
        CompileError: the op's type rule rejects the arguments (the message names the op).
    """
    spec = get_op(op)
    full = dict(spec.attrs)
    full.update(attrs or {})
    try:
        rt = spec.infer(list(args), full)
    except OpTypeError as e:
        raise CompileError(f"{op}: {e}", span) from None
    return Call(op, tuple(args), tuple(full.items()), rt, span=span or Span.unknown())


def _to_expr(value: Any) -> Expr:
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool):
        return ConstBool(value)
    if isinstance(value, int):
        return ConstInt(value, INDEX)
    if isinstance(value, float):
        return ConstFloat(value, FP32)
    if isinstance(value, (list, tuple)):
        return MakeTuple(tuple(_to_expr(v) for v in value))
    raise TypeError(f"cannot use {value!r} ({type(value).__name__}) as an IR argument")


class _Namespace:
    """`ir.op.<ns>`: one builder per registered op of the namespace, under its Python spelling."""

    def __init__(self, ns: str) -> None:
        self._ns = ns
        self._names = {s.python_name.split(".", 1)[1]: s.name for s in all_ops() if s.namespace == ns}

    def __getattr__(self, name: str) -> Any:
        try:
            op = self._names[name]
        except KeyError:
            raise AttributeError(f"ir.op.{self._ns} has no op {name!r}") from None

        def build(*args: Any, span: Span | None = None, **attrs: Any) -> Call:
            return make_call(op, [_to_expr(a) for a in args], attrs, span)

        build.__name__ = name
        build.__doc__ = get_op(op).doc
        return build

    def __dir__(self) -> list[str]:
        return sorted(self._names)


tensor = _Namespace("tensor")
tile = _Namespace("tile")
system = _Namespace("system")
array = _Namespace("array")
