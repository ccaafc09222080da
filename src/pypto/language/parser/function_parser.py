"""Parse one Python function definition into an `ir.Function` (SPEC §2.3, §2.4).

Every exception raised while parsing is a ParserError at the user's file:line:col; anything else
escaping a handler is converted into a ParserError located at the statement being parsed, so users
never see an internal traceback for a bad kernel (TVMScript's rule).
"""

from __future__ import annotations

import ast
import types as pytypes
from dataclasses import dataclass, field
from typing import Any

from ...core.enums import FunctionType, Level, ParamDirection, Role
from ...core.errors import InternalError, ParserError, ParserSyntaxError, ParserTypeError
from ...core.span import Span
from ...ir.expr import Expr, Var
from ...ir.function import Function
from ...ir.types import TupleType, Type
from ..typing import AnnotationError, DirectionAnnotation, to_ir_type
from .conditions import ConditionParser
from .core_side import CORE_SIDE, check_core_level, check_core_side
from .exprs import ExprParser
from .host import check_dispatch_loops, is_host_orchestrator
from .source import Namespace, SourceInfo
from .stmts import PendingYield, StmtParser

__all__ = ["FunctionParser", "ProgramContext", "FunctionHeader", "parse_header"]


@dataclass
class FunctionHeader:
    """A function's signature, parsed before any body so calls between functions type-check."""

    name: str
    params: list[Var]
    directions: list[ParamDirection]
    return_types: list[Type] | None  # None: infer from the return statement
    func_type: FunctionType | None = None  # from the decorator, when known (pl.submit checks it)
    level: Level | None = None  # from the decorator (calls across levels check them: parser/host.py)
    role: Role | None = None


@dataclass
class ProgramContext:
    """The program being built: headers by name (for `self.f(...)`), plus external functions."""

    name: str
    headers: dict[str, FunctionHeader] = field(default_factory=dict)
    external: dict[str, Function] = field(default_factory=dict)

    def has_function(self, name: str) -> bool:
        return name in self.headers or name in self.external

    def signature(self, name: str) -> tuple[list[Var], list[ParamDirection], list[Type]]:
        if name in self.external:
            f = self.external[name]
            return list(f.params), list(f.param_directions), list(f.return_types)
        h = self.headers[name]
        if h.return_types is None:
            raise InternalError(f"return types of {name} unknown")
        return h.params, h.directions, h.return_types


def eval_annotation(ns: Namespace, info: SourceInfo, node: ast.expr, local_vars: dict[str, Any] | None = None,
                    what: str = "type annotation") -> Any:
    """Evaluate a compile-time expression (annotation, decorator argument); any failure becomes a
    ParserError located at `node`."""
    try:
        return ns.eval(node, info, local_vars)
    except NameError as e:
        from ...core.errors import UndefinedVariableError

        raise UndefinedVariableError(f"Undefined name in {what}: {e}", info.span(node)) from None
    except AnnotationError as e:
        raise ParserTypeError(str(e), info.span(node)) from None
    except Exception as e:
        raise ParserTypeError(f"invalid {what} '{ast.unparse(node)}': {type(e).__name__}: {e}",
                              info.span(node)) from None


def annotation_to_type(ann: Any, info: SourceInfo, node: ast.AST) -> Type:
    """IR type of an evaluated annotation; deprecation warnings point at the annotation's line."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if isinstance(ann, pytypes.GenericAlias) and ann.__origin__ is tuple:
                ty: Type = TupleType(tuple(to_ir_type(a) for a in ann.__args__))
            else:
                ty = to_ir_type(ann)
        except AnnotationError as e:
            raise ParserTypeError(str(e), info.span(node)) from None
    span = info.span(node)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, span.filename, span.begin_line)
    return ty


def parse_header(fdef: ast.FunctionDef, info: SourceInfo, ns: Namespace, *, is_method: bool,
                 overrides: dict[str, Type] | None = None,
                 evaluated: dict[str, Any] | None = None, jit: bool = False) -> FunctionHeader:
    """Parameters (with directions) and declared return types of `fdef`.

    `overrides` supplies types for parameters (used by `@pl.jit` for bare `pl.Tensor`, and by
    `@pl.jit.inline` for unannotated parameters, typed by each call's arguments). `jit`: a `@pl.jit`
    family function, whose return annotation may use bare `pl.Tensor` (`-> pl.Tensor`,
    `-> pl.Tuple[pl.Tensor, pl.Tensor]`): its return types are then those of the returned values.
    `evaluated` is the function's `__annotations__` as Python evaluated them at definition time
    (names used only in annotations, e.g. an enclosing function's locals, are visible there).
    Raises ParserSyntaxError for a missing annotation ("Parameter 'a' missing type annotation").
    """
    args = fdef.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
        raise ParserSyntaxError("kernel functions take plain positional parameters only", info.span(fdef))
    params = list(args.args)
    if is_method:
        if not params or params[0].arg != "self":
            raise ParserSyntaxError(f"method '{fdef.name}' of a @pl.program class must take 'self' first",
                                    info.span(fdef))
        params = params[1:]
    overrides = overrides or {}
    vars_, dirs = [], []
    for p in params:
        if p.annotation is None and p.arg in overrides:
            # an unannotated @pl.jit.inline parameter: its type comes from the call site
            vars_.append(Var(p.arg, overrides[p.arg], span=info.span(p)))
            dirs.append(ParamDirection.In)
            continue
        if p.annotation is None:
            raise ParserSyntaxError(f"Parameter '{p.arg}' missing type annotation", info.span(p))
        ann = _annotation(p.arg, p.annotation, evaluated, ns, info)
        direction = ParamDirection.In
        if isinstance(ann, DirectionAnnotation):
            direction, ann = ann.direction, ann.inner
        ty = overrides.get(p.arg) or annotation_to_type(ann, info, p.annotation)
        vars_.append(Var(p.arg, ty, span=info.span(p)))
        dirs.append(direction)
    rets: list[Type] | None = None
    if fdef.returns is not None:
        ann = _annotation("return", fdef.returns, evaluated, ns, info)
        if ann is None:
            rets = []
        elif jit and any(_is_bare(a) for a in _ann_parts(ann)):
            rets = None  # bare pl.Tensor in a jit return annotation: infer
        else:
            t = annotation_to_type(ann, info, fdef.returns)
            rets = list(t.types) if isinstance(t, TupleType) else [t]
    return FunctionHeader(fdef.name, vars_, dirs, rets)


def declares_returns(what: str, n: int) -> str:
    """`"<what> declares <n> return value(s)"`: the start of a return-count mismatch message."""
    return f"{what} declares {n} return value{'' if n == 1 else 's'}"


def _own_calls(node: ast.AST) -> list[ast.Call]:
    """The calls in statement `node`'s own expressions (not in the statements nested in its body,
    which are parsed, and checked, one by one)."""
    out, todo = [], [c for c in ast.iter_child_nodes(node) if not isinstance(c, ast.stmt)]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Call):
            out.append(n)
        todo.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.stmt))
    return out


def reject_unpacking(node: ast.stmt, span: Any) -> None:
    """Raise a located ParserSyntaxError for `*args` / `**kwargs` in a call of statement `node`:
    the parser reads every call's arguments as written (an op's, a loop's `pl.pipeline(...)`, a
    kernel call's), so an unpacked tuple or dict would otherwise be dropped without a word.
    `span` maps an AST node to its Span."""
    for call in _own_calls(node):
        bad = [a for a in call.args if isinstance(a, ast.Starred)]
        bad += [k for k in call.keywords if k.arg is None]
        if bad:
            b = min(bad, key=lambda n: (n.lineno, n.col_offset))
            text = ast.unparse(b.value)
            stars = "**" if isinstance(b, ast.keyword) else "*"
            raise ParserSyntaxError(
                f"argument unpacking '{stars}{text}' is not supported in a call inside a PyPTO function "
                f"('{ast.unparse(call.func)}(...)'): the parser reads the arguments as written, so "
                f"write each one out (e.g. stage=2 instead of **{{'stage': 2}})", span(b))


def _is_placeholder(body: list[ast.stmt]) -> bool:
    """A body of only `...`, `pass` and docstrings: a signature written down without code (the
    language guide's parameter-direction and dynamic-shape examples), which need no return."""
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                           and (isinstance(s.value.value, str) or s.value.value is Ellipsis))
               for s in body)


def _annotation(key: str, node: ast.expr, evaluated: dict[str, Any] | None, ns: Namespace,
                info: SourceInfo) -> Any:
    if evaluated is not None and key in evaluated and not isinstance(evaluated[key], str):
        return evaluated[key]
    return eval_annotation(ns, info, node)


def _ann_parts(ann: Any) -> list[Any]:
    """The annotations of a return annotation's values: `tuple[...]` / `pl.Tuple[...]` (a Python
    tuple) or a single one."""
    if isinstance(ann, pytypes.GenericAlias):
        return list(ann.__args__)
    if isinstance(ann, tuple):
        return list(ann)
    return [ann]


def _is_bare(a: Any) -> bool:
    from ..typing import Tensor

    return a is Tensor


class FunctionParser(ConditionParser, ExprParser, StmtParser):
    """Parses the body of one function. Create one per function; call `parse()` once."""

    def __init__(self, fdef: ast.FunctionDef, header: FunctionHeader, info: SourceInfo, ns: Namespace, *,
                 func_type: FunctionType, level: Level | None = None, role: Role | None = None,
                 strict_ssa: bool = False, auto_scope: bool = True, optimizations: tuple = (),
                 program: ProgramContext | None = None, external: Any = None, attrs: tuple = ()) -> None:
        self.fdef, self.header, self.info, self.ns = fdef, header, info, ns
        self.external = external  # parser.external.ExternalOptions of a hand-written C++ kernel
        self.func_type, self.level, self.role = func_type, level, role
        self.strict_ssa, self.auto_scope, self.optimizations = strict_ssa, auto_scope, optimizations
        self.attrs = attrs  # Function.attrs (pl.func_attr metadata; parser.func_attr)
        self.program = program
        self.env: dict[str, Expr] = {v.name: v for v in header.params}
        self.param_dirs = dict(zip(header.params, header.directions))
        self.param_root: dict[Var, Var] = {v: v for v in header.params}  # DDR aliases of params
        self.created_tensors: dict[Var, str] = {}  # Var -> the tensor op whose value it was bound to
        self.block: list = []
        self.pending_yield: PendingYield | None = None
        self.construct_depth = 0
        self.incore_depth = 1 if func_type in (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV) else 0
        # what makes the code being parsed run on the cores (a pl.at may not open another region there)
        self.core_region: str | None = (f"the body of {func_type.name} function '{fdef.name}', which runs on "
                                        f"the cores" if self.incore_depth else None)
        self.loop_stack: list = []
        self.loop_vars: set[Var] = set()
        self.returns: list[tuple[Expr, ...]] = []
        self.loop_local: dict[str, Expr] = {}  # names last bound inside a loop body (see loop_body)
        self.loop_before: dict[str, tuple[Expr, Expr]] = {}  # see loop_names.note_loop_rebinds
        self.branch_reuse: dict[str, Var] = {}  # names the then-branch bound (see stmt_If)
        level_text = f", level={level!r}" if level is not None else ""
        self.decorator = f"@pl.function(type={func_type!r}{level_text})"  # how errors name it

    def span(self, node: ast.AST) -> Span:
        return self.info.span(node)

    def eval_type(self, node: ast.expr) -> Type:
        """The type a body annotation denotes. Dimensions may be index expressions over scalars in
        scope (the valid shape of a partial tile: `pl.TileView(valid_shape=[pl.min(16, n - i), 64])`),
        so leaves are parsed as DSL expressions while the annotation's structure is evaluated."""
        try:
            ann = self.eval_annotation_node(node)
        except ParserError:
            raise
        except Exception as e:
            raise ParserTypeError(f"invalid type annotation '{ast.unparse(node)}': {type(e).__name__}: {e}",
                                  self.span(node)) from None
        return annotation_to_type(ann, self.info, node)

    def eval_annotation_node(self, node: ast.expr) -> Any:
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.eval_annotation_node(e) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Subscript):
            return self.eval_annotation_node(node.value)[self.eval_annotation_node(node.slice)]
        if isinstance(node, ast.Call):
            from .. import dsl

            f = self.eval_annotation_node(node.func)
            if isinstance(f, dsl.DSLBuiltin):
                return self.parse_value(node)  # pl.min / pl.max / pl.const: an index expression
            args = [self.eval_annotation_node(a) for a in node.args]
            kwargs = {k.arg: self.eval_annotation_node(k.value) for k in node.keywords}
            try:
                return f(*args, **kwargs)
            except AnnotationError as e:
                raise ParserTypeError(str(e), self.span(node)) from None
        return self.parse_value(node)

    def parse_stmt(self, node: ast.stmt) -> None:
        reject_unpacking(node, self.span)
        try:
            StmtParser.parse_stmt(self, node)
        except ParserError:
            raise
        except RecursionError:
            raise ParserSyntaxError("statement nesting too deep", self.span(node)) from None
        except Exception as e:  # never leak an internal traceback for a user's statement
            raise ParserError(f"cannot parse statement: {type(e).__name__}: {e}", self.span(node)) from e

    def parse(self) -> Function:
        if self.external is not None:
            return self._parse_external()
        stmts = self.take_func_attr(self.fdef.body)  # may set level= (pl.func_attr)
        if self.func_type is FunctionType.InCore:
            at = next((k for d in self.fdef.decorator_list for k in getattr(d, "keywords", ())
                       if k.arg == "level"), self.fdef)
            check_core_level(self.level, "@pl.function(type=pl.FunctionType.InCore, ", self.span(at))
        body, py = self.parse_block(stmts)
        if py is not None:
            raise ParserSyntaxError("pl.yield_ outside a loop or if body", py.span)
        rets = self.header.return_types
        if rets is None:
            rets = [v.type for v in self.returns[-1]] if self.returns else []
            self.header.return_types = rets
        declared = declares_returns(f"function '{self.fdef.name}'", len(rets))
        if rets and not self.returns and not _is_placeholder(stmts):  # callers would get nothing
            raise ParserSyntaxError(f"{declared} but has no return statement", self.span(self.fdef))
        for vals in self.returns:
            if len(vals) != len(rets):
                raise ParserTypeError(f"{declared} but returns {len(vals)}", self.span(self.fdef))
        if self.func_type is FunctionType.InCore and self.level in CORE_SIDE:
            check_core_side(body, self.level, f"kernel '{self.fdef.name}' is {self.decorator}")  # type: ignore[arg-type]
        func = Function(self.fdef.name, self.func_type, tuple(self.header.params),
                        tuple(self.header.directions), tuple(rets), body, self.level, self.role,
                        self.strict_ssa, self.auto_scope, self.optimizations, attrs=self.attrs,
                        span=self.span(self.fdef))
        if is_host_orchestrator(self.level, self.role, self.func_type):
            check_dispatch_loops(func)
        return func

    def take_func_attr(self, body: list[ast.stmt]) -> list[ast.stmt]:
        """`body` without its leading `pl.func_attr({...})`, whose options and metadata this
        function takes (SPEC §13; `parser.func_attr`)."""
        from .func_attr import FuncAttrError, func_attr_call, merge_options, parse_func_attr

        i = func_attr_call(self, body)
        if i is None:
            return body
        call = body[i].value
        assert isinstance(call, ast.Call)
        options, meta = parse_func_attr(self, call)
        try:
            merged = merge_options({"level": self.level, "role": self.role,
                                    "optimizations": self.optimizations}, options)
        except FuncAttrError as e:
            raise ParserTypeError(str(e), self.span(call)) from None
        self.level, self.role, self.optimizations = merged["level"], merged["role"], merged["optimizations"]
        if self.attrs and meta and dict(self.attrs) != dict(meta):
            raise ParserTypeError("pl.func_attr: the decorator's attrs= differ from this pl.func_attr", self.span(call))
        self.attrs = meta or self.attrs
        return body[:i] + body[i + 1:]

    def _parse_external(self) -> Function:
        """A hand-written C++ kernel (SPEC §10): no body, its signature is the contract."""
        from ...ir.stmt import SeqStmts
        from .external import check_external_body, external_kernel, external_return_types

        h = self.header
        ext = external_kernel(self.external, self.func_type, self.fdef, self.info, [p.name for p in h.params])
        check_external_body(self.fdef, self.info)
        rets = external_return_types(self.fdef, self.info, h.params, h.directions, h.return_types)
        h.return_types = rets
        return Function(self.fdef.name, self.func_type, tuple(h.params), tuple(h.directions), tuple(rets),
                        SeqStmts((), span=self.span(self.fdef)), self.level, self.role, self.strict_ssa,
                        self.auto_scope, self.optimizations, ext, attrs=self.attrs, span=self.span(self.fdef))
