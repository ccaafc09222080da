"""Parser entry points: functions, `@pl.program` classes, inline splicing, and `pl.parse` text.

- `parse_function(pyfunc, ...)` → `ir.Function`
- `parse_program(cls)` → `ir.Program` (methods decorated with `@pl.function`, `self` stripped)
- `parse_text(code)` → the Program or Function that printed DSL text describes
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from enum import Enum
from typing import Any

from ...core.dtype import INDEX
from ...core.enums import FunctionType, Level, Role
from ...core.errors import ParserSyntaxError, ParserTypeError
from ...ir.expr import ConstBool, ConstFloat, ConstInt, Expr, GlobalVar, MakeTuple, Var
from ...ir.function import Function, Program
from ...ir.stmt import AssignStmt, ReturnStmt
from ...ir.structural import structural_equal
from ...ir.types import ScalarType, Type
from .call_binding import positional_call, python_defaults
from .deps import reject_deps
from .external import ExternalOptions
from .function_parser import FunctionParser, ProgramContext, declares_returns, parse_header
from .source import Namespace, SourceInfo, source_of, source_of_text
from .stmts import type_compatible, type_text

__all__ = ["FunctionOptions", "parse_function", "parse_program", "parse_text", "inline_call",
           "call_external", "find_def"]


class FunctionOptions:
    """Decorator options of `@pl.function(...)`.

    `optimizations` is a list of `pl.split(...)` / `pl.cross_core_slot(...)` entries (as in
    `pl.at(optimizations=[...])`), stored on the Function as (name, params) pairs.
    `external_source` (with `include_dirs`, `cost`, `core_num`) declares a hand-written C++ kernel
    (SPEC §10; checked by `parser.external`). Raises TypeError for a wrong `type` or
    `optimizations` value, or external-kernel options without `external_source`.
    """

    __slots__ = ("func_type", "level", "role", "strict_ssa", "auto_scope", "optimizations", "external", "attrs")

    def __init__(self, type: FunctionType = FunctionType.Opaque, level: Level | None = None,
                 role: Role | None = None, strict_ssa: bool = False, auto_scope: bool = True,
                 optimizations: list | tuple = (), external_source: Any = None,
                 include_dirs: Any = None, cost: Any = None, core_num: Any = None,
                 external: ExternalOptions | None = None, attrs: dict | None = None) -> None:
        from ..dsl import Optimization

        if external is None and external_source is not None:
            external = ExternalOptions(external_source, include_dirs or (), cost,
                                       1 if core_num is None else core_num)
        elif external is None and (include_dirs is not None or cost is not None or core_num is not None):
            raise TypeError("@pl.function(include_dirs=, cost=, core_num=) are options of a hand-written "
                            "C++ kernel: give its source with external_source=\"kernel.cpp\"")
        self.external = external

        if not isinstance(type, FunctionType):
            raise TypeError(f"@pl.function(type=...) expects a pl.FunctionType, got {type!r}")
        if not isinstance(optimizations, (list, tuple)) or \
                not all(isinstance(o, Optimization) for o in optimizations):
            raise TypeError("@pl.function(optimizations=...) expects a list of pl.split(...) / "
                            f"pl.cross_core_slot(...), got {optimizations!r}")
        self.func_type, self.level, self.role = type, level, role
        self.strict_ssa, self.auto_scope = strict_ssa, auto_scope
        self.optimizations = tuple((o.name, o.params) for o in optimizations)
        self.attrs: tuple = ()
        if attrs is not None:  # the older spelling of pl.func_attr({...}) (parser.func_attr)
            from .func_attr import FuncAttrError, merge_options, split_attrs

            if not isinstance(attrs, dict):
                raise TypeError(f"@pl.function(attrs=...) expects a dict, got {attrs!r}")
            try:
                options, self.attrs = split_attrs(attrs)
                merged = merge_options({"level": level, "role": role, "optimizations": self.optimizations},
                                       options)
            except FuncAttrError as e:
                raise TypeError(str(e).replace("pl.func_attr", "@pl.function(attrs=...)")) from None
            self.level, self.role, self.optimizations = merged["level"], merged["role"], merged["optimizations"]

    def kwargs(self) -> dict[str, Any]:
        return dict(func_type=self.func_type, level=self.level, role=self.role,
                    strict_ssa=self.strict_ssa, auto_scope=self.auto_scope,
                    optimizations=self.optimizations, external=self.external, attrs=self.attrs)


def find_def(info: SourceInfo, name: str | None = None) -> ast.FunctionDef | ast.ClassDef:
    for node in info.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and (name is None or node.name == name):
            return node
    raise ParserSyntaxError(f"no definition of {name or 'a function'} found in source",
                            info.span(info.tree.body[0]) if info.tree.body else None)


def parse_function(fn: Callable, opts: FunctionOptions, *, name: str | None = None,
                   overrides: dict[str, Type] | None = None,
                   program: ProgramContext | None = None, decorator: str | None = None) -> Function:
    """Parse a standalone Python function into an `ir.Function`. `decorator` is how errors name
    the declaration (default: the `@pl.function(...)` the options spell)."""
    info = source_of(fn)
    fdef = find_def(info)
    if not isinstance(fdef, ast.FunctionDef):
        raise ParserSyntaxError("expected a function definition", info.span(fdef))
    ns = Namespace.of_function(fn)
    header = parse_header(fdef, info, ns, is_method=False, overrides=overrides,
                          evaluated=getattr(fn, "__annotations__", None), jit=overrides is not None)
    if name:
        fdef.name = name
        header.name = name
    fp = FunctionParser(fdef, header, info, ns, program=program, **opts.kwargs())
    if decorator is not None:
        fp.decorator = decorator
    return fp.parse()


def _decorator_options(dec: ast.expr, ns: Namespace, info: SourceInfo) -> tuple[str, FunctionOptions] | None:
    """Recognise `@pl.function`, `@pl.function(...)` and `@pl.inline` on a method."""
    target = dec.func if isinstance(dec, ast.Call) else dec
    try:
        obj = ns.eval(target, info)
    except Exception:
        return None
    from .. import decorators

    if obj is decorators.function:
        if isinstance(dec, ast.Call):
            from .function_parser import eval_annotation

            kw = {k.arg: eval_annotation(ns, info, k.value, what="decorator argument") for k in dec.keywords}
            try:
                return "function", FunctionOptions(**kw)
            except TypeError as e:
                raise ParserTypeError(str(e), info.span(dec)) from None
        return "function", FunctionOptions()
    return None


def parse_program(cls: type | None, *, info: SourceInfo | None = None, ns: Namespace | None = None,
                  cdef: ast.ClassDef | None = None) -> Program:
    """Parse a `@pl.program` class: every `@pl.function` method becomes a Function."""
    if info is None:
        info = source_of(cls)  # type: ignore[arg-type]
        cdef = find_def(info, cls.__name__)  # type: ignore[union-attr]
        ns = _class_namespace(cls)  # type: ignore[arg-type]
    assert cdef is not None and ns is not None
    ctx = ProgramContext(cdef.name)
    methods: list[tuple[ast.FunctionDef, FunctionOptions]] = []
    for node in cdef.body:
        if isinstance(node, ast.FunctionDef):
            opts = None
            for dec in node.decorator_list:
                r = _decorator_options(dec, ns, info)
                if r is not None:
                    opts = r[1]
            if opts is None:
                raise ParserSyntaxError(f"method '{node.name}' of a @pl.program class must be decorated "
                                        f"with @pl.function", info.span(node))
            methods.append((node, opts))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # docstring
        elif not isinstance(node, ast.Pass):
            raise ParserSyntaxError("a @pl.program class may only contain @pl.function methods",
                                    info.span(node))
    headers = {}
    for fdef, fopts in methods:
        method = vars(cls).get(fdef.name) if cls is not None else None
        evaluated = getattr(getattr(method, "__pypto_pyfunc__", None), "__annotations__", None)
        headers[fdef.name] = parse_header(fdef, info, ns, is_method=True, evaluated=evaluated)
        headers[fdef.name].func_type = fopts.func_type
        headers[fdef.name].level, headers[fdef.name].role = fopts.level, fopts.role
    ctx.headers = headers
    funcs: dict[str, Function] = {}

    def build(fdef: ast.FunctionDef, opts: FunctionOptions) -> Function:
        if fdef.name not in funcs:
            fp = FunctionParser(fdef, headers[fdef.name], info, ns, program=ctx, **opts.kwargs())
            funcs[fdef.name] = fp.parse()
        return funcs[fdef.name]

    # Callees whose return types are not declared are parsed first (on demand).
    pending = {fdef.name: (fdef, opts) for fdef, opts in methods}
    original = ctx.signature

    def signature(name: str):  # type: ignore[no-untyped-def]
        h = headers.get(name)
        if h is not None and h.return_types is None:
            build(*pending[name])
        return original(name)

    ctx.signature = signature  # type: ignore[method-assign]
    for fdef, opts in methods:
        build(fdef, opts)
    ordered = [funcs[f.name] for f, _ in methods] + list(ctx.external.values())
    return Program(cdef.name, tuple(ordered), span=info.span(cdef))


def _class_namespace(cls: type) -> Namespace:
    """Globals of the module that defined `cls` (read from a method, which knows its real module
    even under runpy or a profiler) plus closure cells of its methods."""
    import sys

    g: dict[str, Any] | None = None
    closure: dict[str, Any] = {}
    for attr in vars(cls).values():
        fn = getattr(attr, "__pypto_pyfunc__", attr)
        if callable(fn) and hasattr(fn, "__globals__"):
            g = g if g is not None else fn.__globals__
            if getattr(fn, "__closure__", None):
                closure.update(Namespace.of_function(fn).closure)
    if g is None:
        mod = sys.modules.get(cls.__module__)
        g = vars(mod) if mod is not None else {}
    return Namespace(g, closure)


def parse_text(code: str, filename: str | None = None) -> Program | Function:
    """Parse printed DSL text (SPEC §4): a module with one `@pl.program` class or `@pl.function`."""
    import pypto.language as pl
    import pypto.language.distributed as pld

    info = source_of_text(code, filename)
    g: dict[str, Any] = {"pl": pl, "pld": pld}
    defs = []
    for node in info.tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:  # module-level constants and pl.dynamic(...) dims
                g[node.targets[0].id] = eval(compile(ast.Expression(node.value), info.filename, "eval"), g)  # noqa: S307
            except Exception as e:
                raise ParserSyntaxError(f"cannot evaluate module-level assignment: {getattr(e, 'message', e)}", info.span(node)) from None
            continue
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            defs.append(node)
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        raise ParserSyntaxError("expected a @pl.program class or @pl.function definition", info.span(node))
    if len(defs) != 1:
        raise ParserSyntaxError(f"expected exactly one @pl.program class or @pl.function, found {len(defs)}",
                                info.span(defs[1]) if len(defs) > 1 else None)
    ns = Namespace(g)
    node = defs[0]
    if isinstance(node, ast.ClassDef):
        return parse_program(None, info=info, ns=ns, cdef=node)
    opts = FunctionOptions()
    for dec in node.decorator_list:
        r = _decorator_options(dec, ns, info)
        if r is not None:
            opts = r[1]
    header = parse_header(node, info, ns, is_method=False)
    return FunctionParser(node, header, info, ns, **opts.kwargs()).parse()


# ---- calls from inside a body ------------------------------------------------------------------

def call_external(parser: FunctionParser, fn: Function, node: ast.Call) -> Expr:
    """`f(...)` of a standalone `@pl.function` inside a program: add it, call it by GlobalVar.

    Two calls may name the same function or structurally equal ones (e.g. a kernel factory called
    twice with the same sizes); two different functions of one name are a ParserSyntaxError.
    """
    if parser.program is None:
        raise ParserSyntaxError(f"calling function '{fn.name}' needs an enclosing @pl.program or @pl.jit",
                                parser.span(node))
    existing = parser.program.external.get(fn.name)
    if existing is None and fn.name in parser.program.headers:
        raise ParserSyntaxError(f"external function '{fn.name}' clashes with a method of the program",
                                parser.span(node))
    if existing is not None and existing is not fn and not structural_equal(existing, fn):
        # calls go by name: keeping one of two different functions would run the wrong body
        raise ParserSyntaxError(f"this program already calls a different function named '{fn.name}' "
                                f"(defined at {existing.span}); functions called in one program need "
                                f"distinct names", parser.span(node))
    parser.program.external[fn.name] = fn
    return parser.call_function(GlobalVar(fn.name, span=parser.span(node)), node)


def _assigned_names(fdef: ast.FunctionDef) -> set[str]:
    """Names the body of `fdef` assigns to (assignment, loop and `with ... as` targets)."""
    return {n.id for st in fdef.body for n in ast.walk(st)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


_STATIC_PARAM = ScalarType(INDEX)  # the (unused) IR type of a compile-time constant parameter


def _is_static(v: Any) -> bool:
    """Whether an inline call's argument is a compile-time constant passed as the Python object
    itself: an enum member (`pld.ReduceOp.Max`, `pl.PipeType...`), a string or None."""
    return isinstance(v, (Enum, str)) or v is None


def inline_call(parser: FunctionParser, pyfunc: Callable, node: ast.Call,
                overrides_from_args: bool = False) -> Expr:
    """Splice the body of an inline function at the call site; returns the value it returns.

    Names in the inline body resolve in the inline function's own module/closure, so an inline
    helper may call another inline helper (SPEC §9).

    Parameters behave like Python's: each argument is evaluated once, and a parameter the body
    assigns to is a variable of the helper. So a parameter stands directly for its argument only when
    the argument is a variable or a constant and the body never rebinds it; otherwise the argument is
    first bound to a fresh variable named after the parameter (`acc = <arg>` at the call site). This
    keeps a rebinding inside a loop loop-carried and leaves the caller's variables untouched.
    """
    info = source_of(pyfunc)
    fdef = find_def(info)
    ns = Namespace.of_function(pyfunc)
    reject_deps(parser, node, f"inline helper '{fdef.name}' (its body is spliced in: put deps= on the "
                              f"calls inside it)")
    node = positional_call(node, [a.arg for a in fdef.args.args], fdef.name, parser.span(node),
                           python_defaults(pyfunc))
    if node.keywords:
        raise ParserTypeError(f"inline helper '{fdef.name}' got an unexpected keyword argument "
                              f"'{node.keywords[0].arg}' (its parameters: "
                              f"{', '.join(a.arg for a in fdef.args.args)})", parser.span(node))
    values = [parser.parse_value(a) for a in node.args]
    args: list[Any] = [v if _is_static(v) else parser.to_expr(v, a) for v, a in zip(values, node.args)]
    names = [a.arg for a in fdef.args.args]
    # a compile-time constant argument (enum member, string, None) stands for itself in the body;
    # its parameter needs no IR type (nor an annotation)
    overrides: dict[str, Type] = {n: _STATIC_PARAM for n, a in zip(names, args) if _is_static(a)}
    if overrides_from_args:
        overrides.update({n: a.type for n, a in zip(names, args) if not _is_static(a)})
    header = parse_header(fdef, info, ns, is_method=False, overrides=overrides,
                          evaluated=getattr(pyfunc, "__annotations__", None), jit=overrides_from_args)
    if len(args) != len(header.params):
        raise ParserTypeError(f"inline function '{fdef.name}' takes {len(header.params)} arguments, got "
                              f"{len(args)}", parser.span(node))
    for p, a in zip(header.params, args):
        if _is_static(a):
            continue
        if not type_compatible(p.type, a.type):
            raise ParserTypeError(f"argument '{p.name}' of inline function '{fdef.name}' expects "
                                  f"{type_text(p.type)}, got {type_text(a.type)}", parser.span(node))
    rebound = _assigned_names(fdef)
    env: dict[str, Expr] = {}
    for p, a, a_node in zip(header.params, args, node.args):
        if _is_static(a) or (isinstance(a, (Var, ConstInt, ConstFloat, ConstBool)) and p.name not in rebound):
            env[p.name] = a
            continue
        var = Var(p.name, a.type, span=parser.span(a_node))
        parser.emit(AssignStmt(var, a, span=parser.span(a_node)))
        env[p.name] = var
    saved = (parser.info, parser.ns, parser.env, parser.returns)
    parser.info, parser.ns = info, ns
    parser.env = env
    parser.returns = []
    start = len(parser.block)
    try:
        for st in fdef.body:
            parser.parse_stmt(st)
        rets = parser.returns
    finally:
        parser.info, parser.ns, parser.env, parser.returns = saved
    tail = parser.block[start:]
    if not rets and header.return_types:  # `-> T` but nothing returned: the call has no value
        raise ParserSyntaxError(f"{declares_returns(f'inline function {fdef.name!r}', len(header.return_types))} "
                                f"but has no return statement", info.span(fdef))
    if not rets:
        return MakeTuple(())
    if len(rets) != 1 or not tail or not isinstance(tail[-1], ReturnStmt):
        raise ParserSyntaxError(f"inline function '{fdef.name}' must have a single return at its end",
                                info.span(fdef))
    parser.block.pop()  # the inline's return becomes the call's value
    vals = rets[0]
    return vals[0] if len(vals) == 1 else MakeTuple(tuple(vals), span=parser.span(node))

