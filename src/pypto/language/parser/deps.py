"""Explicit task dependencies in kernel source: `deps=[x, y]` (SPEC §1).

Source order in an Orchestration function does not order tasks; the runtime orders two tasks
through overlapping tensor regions with a write, or through an explicit dependency. A call of a
program function (a kernel, an InCore / Group function, a nested orchestration function) and an
InCore region take one:

    y = self.consume(b_bottom, y, deps=[t0])            # waits for every earlier writer of t0
    with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]):   # the region's task waits too
        ...

Each entry is a `pl.TaskId` (of a `pl.submit` or a `with pl.at(...) as tid`: the task(s) it names,
SPEC §13) or a tensor value in scope: a parameter, the result of an earlier call or region, an
element `r[i]` of a tuple result, or a view of one (`b[0:16]`). The task(s) of the call wait for
every earlier task of the run that wrote any part of that tensor (its region: the whole buffer for
a parameter, the box for a view), on top of the region-derived dependencies. Only code that submits
tasks may say this: an Orchestration, Opaque or Inline function, outside `pl.at`.

Errors (all at the user's line): `deps=` on an op call or an inline helper (ParserTypeError), in an
InCore / AIC / AIV / Group function or inside a `pl.at` body (InvalidOperationError), a value that
is not a list (ParserSyntaxError), an entry that is neither a tensor nor a TaskId (ParserTypeError) or that calls a
program function (ParserSyntaxError: it would submit a task), an unknown name
(UndefinedVariableError).
"""

from __future__ import annotations

import ast
from typing import Any

from ...core.enums import FunctionType
from ...core.errors import InvalidOperationError, ParserError, ParserSyntaxError, ParserTypeError
from ...ir.expr import Expr
from ...ir.types import TensorType

__all__ = ["parse_deps", "reject_deps", "HOST_TYPES"]

# Functions whose calls submit tasks (the orchestration side; a Spmd function submits the kernels
# of an SPMD launch, SPEC §13).
HOST_TYPES = frozenset({FunctionType.Orchestration, FunctionType.Opaque, FunctionType.Inline, FunctionType.Spmd})


def _check_place(parser: Any, node: ast.AST) -> None:
    """deps= only where tasks are submitted: host functions, outside `pl.at`."""
    ft = parser.func_type
    if ft is FunctionType.Group:
        raise InvalidOperationError(
            "deps= is not allowed inside a Group function: its kernels run together as one cluster "
            "task; put deps= on the call of the Group function", parser.span(node))
    if ft not in HOST_TYPES:
        raise InvalidOperationError(
            f"deps= is not allowed inside an {ft.name} function: only orchestration code submits "
            f"tasks; put deps= on the call of this kernel", parser.span(node))
    if parser.incore_depth > 0:
        raise InvalidOperationError(
            "deps= is not allowed inside a pl.at region: its body runs as one InCore task; put it on "
            "the region instead: with pl.at(..., deps=[...])", parser.span(node))


def parse_deps(parser: Any, value: ast.expr, node: ast.AST) -> tuple[Expr, ...]:
    """The IR of `deps=<value>` on the call or `pl.at` at `node` (see the module docstring).

    Returns the tensor-typed Exprs (Vars, TupleGetItems of a tuple result, views), duplicates
    removed, in source order. Raises the ParserErrors listed in the module docstring.
    """
    _check_place(parser, node)
    if not isinstance(value, (ast.List, ast.Tuple)):
        raise ParserSyntaxError(f"deps= takes a list of tensor variables, e.g. deps=[x, y]; got "
                                f"'{ast.unparse(value)}'", parser.span(value))
    out: list[Expr] = []
    for elt in value.elts:
        if any(isinstance(n, ast.Call) and _is_function(parser, n) for n in ast.walk(elt)):
            raise ParserSyntaxError(f"deps= entries name tensors; '{ast.unparse(elt)}' calls a program "
                                    f"function (it would submit a task): call it before and name "
                                    f"its result", parser.span(elt))
        v = parser.to_expr(parser.parse_value(elt), elt)
        if not isinstance(v.type, TensorType) and not _is_task_id(v):
            from .stmts import type_text

            raise ParserTypeError(f"deps= entry '{ast.unparse(elt)}' is a {type_text(v.type)}, not a "
                                  f"tensor or a pl.TaskId; only those order tasks", parser.span(elt))
        if not any(v is x for x in out):
            out.append(v)
    return tuple(out)


def _is_task_id(e: Expr) -> bool:
    from ...core.dtype import TASK_ID
    from ...ir.types import ScalarType

    return isinstance(e.type, ScalarType) and e.type.dtype is TASK_ID


def _is_function(parser: Any, call: ast.Call) -> bool:
    """Whether `call` calls a program function (`self.f`, a kernel or inline helper object)."""
    from ...ir.expr import GlobalVar
    from ...ir.function import Function

    f = call.func
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "self":
        return True
    try:
        callee = parser.parse_value(f)
    except ParserError:
        return False  # reported when the entry itself is parsed
    return isinstance(callee, (GlobalVar, Function)) or hasattr(callee, "__pypto_call__")


def reject_deps(parser: Any, node: ast.Call, what: str) -> None:
    """A ParserTypeError when the call at `node` (an op or an inline helper, `what`) has deps=."""
    for k in node.keywords:
        if k.arg == "deps":
            raise ParserTypeError(f"deps= applies to calls of program functions (kernels, "
                                  f"orchestration functions) and pl.at regions, not to {what}",
                                  parser.span(node))
