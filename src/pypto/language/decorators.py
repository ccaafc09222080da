"""`@pl.function`, `@pl.program`, `@pl.inline` (SPEC §2.3; Language Guide "Programs and Functions").

`@pl.function` on a plain function parses it at once into an `ir.Function`. On a method of a
`@pl.program` class it only records the options: the class decorator parses all methods together
(so `self.f(...)` calls type-check) and returns an `ir.Program`.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from typing import Any

from ..core.enums import FunctionType, Level, Role
from ..core.errors import ParserTypeError, user_call_span, user_facing
from ..ir.function import Function, Program
from .parser.entry import FunctionOptions, inline_call, parse_function, parse_program

__all__ = ["function", "program", "inline", "InlineFunction", "MethodDef"]


class MethodDef:
    """A `@pl.function` method awaiting its `@pl.program` class."""

    def __init__(self, fn: Callable, opts: FunctionOptions) -> None:
        self.__pypto_pyfunc__ = fn
        self.opts = opts


def _is_method(fn: Callable) -> bool:
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False
    return bool(params) and params[0] == "self" and "." in fn.__qualname__ and "<locals>" != \
        fn.__qualname__.split(".")[-2]


@user_facing
@user_facing
def function(fn: Callable | None = None, *, type: FunctionType = FunctionType.Opaque,
             level: Level | None = None, role: Role | None = None, strict_ssa: bool = False,
             auto_scope: bool = True, optimizations: list | tuple = (), external_source: Any = None,
             include_dirs: Any = None, cost: Any = None, core_num: Any = None, attrs: dict | None = None) -> Any:
    """Parse a Python function into an `ir.Function` (or mark a `@pl.program` method).

    `optimizations=[pl.split(...), pl.cross_core_slot(...)]` records the cross-core options of a
    kernel or Group function (Language Guide "InCore Scopes").
    `external_source="k.cpp"` (type AIV or AIC, body `...`) declares a hand-written C++ kernel,
    with `include_dirs=[...]`, `cost=` (simulated cycles: int, formula str or callable) and
    `core_num=` (blocks per call) — SPEC §10, docs/tools.md "External C++ kernels".

    `attrs={...}` is the older spelling of the body's first statement `pl.func_attr({...})` (SPEC §13;
    `parser.func_attr`).

    Raises the ParserError subclasses of SPEC §2.4 at the user's file and line (a wrong `type=`
    or `optimizations=` value: ParserTypeError at the decorator, as inside a `@pl.program`).
    """
    try:
        opts = FunctionOptions(type, level, role, strict_ssa, auto_scope, optimizations, external_source,
                               include_dirs, cost, core_num, attrs=attrs)
    except TypeError as e:
        raise ParserTypeError(str(e), user_call_span()) from None

    @user_facing
    def wrap(f: Callable) -> Function | MethodDef:
        if _is_method(f):
            return MethodDef(f, opts)
        return parse_function(f, opts)

    return wrap(fn) if fn is not None else wrap


@user_facing
def program(cls: type) -> Program:
    """Turn a class of `@pl.function` methods into an `ir.Program` named after the class."""
    return parse_program(cls)


class InlineFunction:
    """`@pl.inline`: the body is spliced into each caller; no function of its own in the program."""

    def __init__(self, fn: Callable, infer_types: bool = False, auto_scope: bool = True) -> None:
        self.__pypto_pyfunc__ = fn
        self.infer_types = infer_types
        self.auto_scope = auto_scope
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__

    def __pypto_call__(self, parser: Any, node: ast.Call) -> Any:
        return inline_call(parser, self.__pypto_pyfunc__, node, overrides_from_args=self.infer_types)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"inline function '{self.__name__}' can only be called inside a kernel body")


def inline(fn: Callable) -> InlineFunction:
    """`@pl.inline`: define a helper whose body is expanded at each call site."""
    return InlineFunction(fn)
