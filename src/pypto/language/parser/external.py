"""Hand-written C++ kernels in the front end (SPEC §10; docs/tools.md "External C++ kernels").

`@pl.function(type=pl.FunctionType.AIV | AIC, external_source="k.cpp")` (and `@pl.jit.extern`)
declares a kernel whose body is `...`: the Python signature — parameter order, directions and
return — is the whole contract with the C++ `kernel_entry`. This module checks such a declaration
and turns its options into an `ir.ExternalKernel`:

- the type must be AIV or AIC (the core the kernel runs on);
- the body must be `...` (a docstring before it is allowed);
- a relative `external_source` / `include_dirs` entry is relative to the defining `.py` file; the
  source file and the include directories must exist;
- `cost=` is cycles (an int >= 0), a Python expression over the parameter names (str; e.g.
  `"x.numel() // 64"`), or a Python callable taking the kernel's arguments; a callable is kept in
  an in-process table and the IR names it by a token (`"callable:<name>#<n>"`);
- `core_num=` (int >= 1) launches each call over that many blocks (SPMD).

A missing return annotation means "the Out / InOut parameters in order" (what a kernel call stands
for); a declared one must say exactly that. Every mistake is a ParserError at the user's line.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from typing import Any

from ...core.enums import FunctionType, ParamDirection
from ...core.errors import ParserSyntaxError, ParserTypeError
from ...core.span import Span
from ...ir.function import ExternalKernel
from ...ir.types import Type
from .source import SourceInfo

__all__ = ["ExternalOptions", "external_kernel", "check_external_body", "external_return_types",
           "COST_NAMES", "CALLABLE_PREFIX", "cost_callable"]

CALLABLE_PREFIX = "callable:"
# Names a cost formula may use besides the kernel's parameter names.
COST_NAMES: dict[str, Any] = {"min": min, "max": max, "abs": abs, "int": int, "len": len,
                              "round": round}
_CALLABLES: dict[str, Callable[..., Any]] = {}
_OUT = (ParamDirection.Out, ParamDirection.InOut)


def register_cost_callable(fn: Callable[..., Any]) -> str:
    """The IR token of cost callable `fn` (registered once per object, valid in this process)."""
    for token, f in _CALLABLES.items():
        if f is fn:
            return token
    name = getattr(fn, "__qualname__", type(fn).__name__)
    token = f"{CALLABLE_PREFIX}{name}#{len(_CALLABLES)}"
    _CALLABLES[token] = fn
    return token


def cost_callable(token: str) -> Callable[..., Any] | None:
    """The callable a `"callable:..."` cost token names, or None when this process has none
    (e.g. a program loaded with `CompiledProgram.from_dir`)."""
    return _CALLABLES.get(token)


class ExternalOptions:
    """The raw external-kernel options of a decorator, resolved by `external_kernel`."""

    __slots__ = ("source", "include_dirs", "cost", "core_num", "base_dir", "what")

    def __init__(self, source: Any, include_dirs: Any = (), cost: Any = None, core_num: Any = 1,
                 base_dir: str | None = None, what: str = "@pl.function") -> None:
        self.source, self.include_dirs, self.cost, self.core_num = source, include_dirs, cost, core_num
        self.base_dir, self.what = base_dir, what


def _keyword_span(fdef: ast.FunctionDef, info: SourceInfo, *names: str) -> Span:
    """Where one of keywords `names` is written in the decorators of `fdef` (else the def line)."""
    for dec in fdef.decorator_list:
        for k in getattr(dec, "keywords", ()):
            if k.arg in names:
                return info.span(k)
    return info.span(fdef)


def _resolve(path: Any, base: str) -> str:
    path = os.fspath(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(base, path))


def external_kernel(opts: ExternalOptions, func_type: FunctionType, fdef: ast.FunctionDef,
                    info: SourceInfo, param_names: list[str]) -> ExternalKernel:
    """Check the options of external kernel `fdef` and build its `ExternalKernel`.

    Raises:
        ParserTypeError: a type other than AIV / AIC, a source or include dir that is not a path, a
            bad `cost=` or `core_num=`.
        ParserSyntaxError: the source file or an include directory does not exist.
    """
    what, name = opts.what, fdef.name
    if func_type not in (FunctionType.AIV, FunctionType.AIC):
        raise ParserTypeError(
            f"external kernel '{name}' has type={func_type!r}; a hand-written C++ kernel runs on one "
            f"core: use type=pl.FunctionType.AIV (vector core) or pl.FunctionType.AIC (cube core)",
            _keyword_span(fdef, info, "type", "core_type"))
    base = opts.base_dir or (os.path.dirname(os.path.abspath(info.filename))
                             if not info.filename.startswith("<") else os.getcwd())
    src_span = _keyword_span(fdef, info, "external_source", "source")
    if not isinstance(opts.source, (str, os.PathLike)) or not os.fspath(opts.source):
        raise ParserTypeError(f"{what}: the C++ source of external kernel '{name}' must be a path "
                              f"(str), got {opts.source!r}", src_span)
    source = _resolve(opts.source, base)
    if not os.path.isfile(source):
        raise ParserSyntaxError(f"C++ source of external kernel '{name}' not found: {source} (a relative "
                                f"path is relative to the file defining the kernel, {base})", src_span)
    dirs_span = _keyword_span(fdef, info, "include_dirs")
    raw_dirs = opts.include_dirs or ()
    if isinstance(raw_dirs, (str, os.PathLike)) or not isinstance(raw_dirs, (list, tuple)):
        raise ParserTypeError(f"{what}(include_dirs=...) expects a list of directories, got {raw_dirs!r}",
                              dirs_span)
    dirs = []
    for d in raw_dirs:
        if not isinstance(d, (str, os.PathLike)):
            raise ParserTypeError(f"{what}(include_dirs=...): {d!r} is not a path", dirs_span)
        full = _resolve(d, base)
        if not os.path.isdir(full):
            raise ParserSyntaxError(f"include directory of external kernel '{name}' not found: {full}",
                                    dirs_span)
        dirs.append(full)
    core_num = opts.core_num
    if isinstance(core_num, bool) or not isinstance(core_num, int) or core_num < 1:
        raise ParserTypeError(f"{what}(core_num=...) expects an int >= 1 (blocks per call), got {core_num!r}",
                              _keyword_span(fdef, info, "core_num"))
    cost = _check_cost(opts.cost, param_names, _keyword_span(fdef, info, "cost"), what)
    return ExternalKernel(source, tuple(dirs), cost, core_num)


def _check_cost(cost: Any, params: list[str], span: Span, what: str) -> int | str | None:
    if cost is None:
        return None
    if isinstance(cost, bool):
        raise ParserTypeError(f"{what}(cost=...) expects cycles (int), a formula (str) or a callable, "
                              f"got {cost!r}", span)
    if isinstance(cost, int):
        if cost < 0:
            raise ParserTypeError(f"{what}(cost={cost}): cycles cannot be negative", span)
        return cost
    if isinstance(cost, str):
        if cost.startswith(CALLABLE_PREFIX):  # printed IR: a registered callable's token
            return cost
        try:
            tree = ast.parse(cost, mode="eval")
        except SyntaxError as e:
            raise ParserTypeError(f"{what}(cost={cost!r}) is not a Python expression: {e.msg}", span) from None
        allowed = set(params) | set(COST_NAMES) | {"block_num"}
        for n in ast.walk(tree):
            if isinstance(n, ast.Name) and n.id not in allowed:
                raise ParserTypeError(f"{what}(cost={cost!r}) uses '{n.id}', which is not a parameter "
                                      f"({', '.join(params) or 'none'}), block_num or one of "
                                      f"{', '.join(COST_NAMES)}", span)
        return cost
    if callable(cost):
        return register_cost_callable(cost)
    raise ParserTypeError(f"{what}(cost=...) expects cycles (int), a formula (str) or a callable, "
                          f"got {type(cost).__name__}", span)


def check_external_body(fdef: ast.FunctionDef, info: SourceInfo) -> None:
    """The body of an external kernel must be `...` (after an optional docstring).

    Raises:
        ParserSyntaxError: at the first statement that is not.
    """
    body = list(fdef.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str) and len(body) > 1:
        body = body[1:]
    ok = len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and body[0].value.value is Ellipsis
    if not ok:
        bad = next((s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                           and s.value.value is Ellipsis)), body[-1] if body else fdef)
        raise ParserSyntaxError(f"the body of external kernel '{fdef.name}' must be '...': its code is "
                                f"the C++ source, the Python signature is only its contract",
                                info.span(bad))


def external_return_types(fdef: ast.FunctionDef, info: SourceInfo, params: list[Any],
                          directions: list[ParamDirection], declared: list[Type] | None) -> list[Type]:
    """Return types of an external kernel: its Out / InOut parameter types in order. A declared
    return annotation must say the same (ParserTypeError at the annotation otherwise)."""
    from .stmts import type_compatible, type_text

    outs = [p.type for p, d in zip(params, directions) if d in _OUT]
    if declared is None:
        return outs
    if len(declared) != len(outs) or not all(type_compatible(a, b) and type_compatible(b, a)
                                             for a, b in zip(declared, outs)):
        want = ", ".join(type_text(t) for t in outs) or "nothing"
        raise ParserTypeError(f"external kernel '{fdef.name}' returns what its Out / InOut parameters "
                              f"hold ({want}); remove the return annotation or make it match",
                              info.span(fdef.returns or fdef))
    return outs
