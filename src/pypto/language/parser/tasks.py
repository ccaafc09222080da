"""Scopes and tasks in kernel source (SPEC §13): runtime scopes, `pl.submit` and TaskIds, SPMD.

    with pl.manual_scope():                                # = pl.scope(mode=pl.ScopeMode.MANUAL)
        a2, t0 = pl.submit(self.k, a, a2)                  # outputs..., TaskId
        with pl.at(level=pl.Level.CORE_GROUP, deps=[t0], name_hint="mid") as t1:
            b[:] = pl.add(a2, 1.0)
        c2, _ = pl.submit(self.k, b, c2, deps=[t1])
    with pl.spmd(core_num=4):                              # every task of the body: 4 blocks
        out = self.k(x, out)                               # pl.get_block_idx() inside k
    for blk in pl.spmd(4):                                 # the loop form names the block index
        with pl.at(level=pl.Level.CORE_GROUP):
            ...                                            # blk is the block index

IR: a runtime scope is `ScopeStmt(Runtime, mode=...)`; `with pl.at(...) as tid` binds
`ScopeStmt.task_id`; `pl.submit(k, *args)` is the call of `k` with the attribute `submit=True`
whose result is the tuple (outputs..., TaskId); `pl.spmd_submit` adds `core_num` (and
`sync_start`); an SPMD scope is `ScopeStmt(Spmd, attrs=(core_num, sync_start), block_var=...)`.

Errors (at the user's line): a TaskId used as data — an operand of an op or of arithmetic, a
kernel argument (ParserTypeError); `pl.submit` of something that is not a kernel (ParserTypeError);
`as tid` on anything but `pl.at` (ParserSyntaxError); wrong argument types of `pl.scope` /
`pl.spmd` / `pl.at` (ParserTypeError); submitting, SPMD and runtime scopes inside kernel code
(InvalidOperationError).
"""

from __future__ import annotations

import ast
from typing import Any

from ...core.dtype import INDEX
from ...core.enums import FunctionType, Level, ScopeKind, ScopeMode
from ...core.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from ...core.span import Span
from ...ir.expr import Call, Expr, GlobalVar, Var
from ...ir.stmt import AssignStmt, EvalStmt, ScopeStmt, Stmt
from ...ir.tasks import TASK_ID_TYPE, submit_result_type
from ...ir.tasks import is_task_id as _is_task_id
from ...ir.types import ScalarType, TensorType, TupleType
from ...ir.visitor import IRVisitor
from .. import dsl
from .core_side import CORE_SIDE, check_core_side
from .deps import HOST_TYPES, parse_deps

__all__ = ["parse_with", "parse_submit", "spmd_loop", "reject_task_id", "is_task_id", "TASK_ID_TYPE",
           "SUBMITTABLE", "submit_result_type"]

# Functions a pl.submit may submit: kernels and the functions that group kernels into one task.
SUBMITTABLE = frozenset({FunctionType.InCore, FunctionType.AIC, FunctionType.AIV, FunctionType.Group,
                         FunctionType.Spmd})
_AT_KEYS = ("level", "optimizations", "deps", "no_dep_args", "name_hint", "allow_early_resolve")


def is_task_id(e: Any) -> bool:
    """Whether `e` is an IR value of type `pl.TaskId` (Scalar[TASK_ID])."""
    return isinstance(e, Expr) and _is_task_id(e)


def reject_task_id(parser: Any, values: Any, node: ast.AST, what: str) -> None:
    """ParserTypeError when one of `values` is a TaskId: it orders tasks and carries no data."""
    for v in values:
        if is_task_id(v):
            name = getattr(v, "name", "a TaskId")
            raise ParserTypeError(f"'{name}' is a pl.TaskId, which only orders tasks (deps=[{name}]); "
                                  f"it cannot be used as {what}", parser.span(node))


def _host_only(parser: Any, node: ast.AST, what: str) -> None:
    if parser.func_type not in HOST_TYPES or parser.incore_depth > 0:
        kind = parser.func_type.name
        where = "a pl.at region" if parser.incore_depth and parser.func_type in HOST_TYPES \
            else f"{'an' if kind[0] in 'AEIOU' else 'a'} {kind} function"
        raise InvalidOperationError(f"{what} is not allowed inside {where}: only orchestration code "
                                    f"submits tasks", parser.span(node))


def _const_kw(parser: Any, call: ast.Call, allowed: tuple[str, ...], what: str) -> dict[str, ast.expr]:
    got = {}
    for k in call.keywords:
        if k.arg not in allowed:
            raise ParserTypeError(f"{what} takes keyword arguments {', '.join(a + '=' for a in allowed)}; "
                                  f"got '{k.arg}='", parser.span(k.value))
        got[k.arg] = k.value
    return got


def _bool_arg(parser: Any, node: ast.expr, what: str) -> bool:
    v = parser.parse_value(node)
    if not isinstance(v, bool):
        raise ParserTypeError(f"{what} must be True or False, got '{ast.unparse(node)}'", parser.span(node))
    return v


def _core_num(parser: Any, node: ast.expr) -> int:
    v = parser.parse_value(node)
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ParserTypeError(f"core_num must be a positive int known at compile time, got "
                              f"'{ast.unparse(node)}'", parser.span(node))
    return v


def _task_attrs(parser: Any, kws: dict[str, ast.expr]) -> list[tuple[str, Any]]:
    attrs: list[tuple[str, Any]] = []
    if "name_hint" in kws:
        name = parser.parse_value(kws["name_hint"])
        if not isinstance(name, str) or not name:
            raise ParserTypeError(f"name_hint must be a non-empty string, got '{ast.unparse(kws['name_hint'])}'",
                                  parser.span(kws["name_hint"]))
        attrs.append(("name_hint", name))
    if "allow_early_resolve" in kws:
        attrs.append(("allow_early_resolve", _bool_arg(parser, kws["allow_early_resolve"], "allow_early_resolve")))
    return attrs


def _no_dep_args(parser: Any, node: ast.expr) -> tuple[Expr, ...]:
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise ParserSyntaxError(f"no_dep_args= takes a list of tensors, e.g. no_dep_args=[x]; got "
                                f"'{ast.unparse(node)}'", parser.span(node))
    out: list[Expr] = []
    for elt in node.elts:
        v = parser.to_expr(parser.parse_value(elt), elt)
        if not isinstance(v.type, TensorType):
            raise ParserTypeError(f"no_dep_args= entry '{ast.unparse(elt)}' is not a tensor", parser.span(elt))
        if not any(v is x for x in out):
            out.append(v)
    return tuple(out)


# ---- with-statements ---------------------------------------------------------------------------
def parse_with(parser: Any, node: ast.With) -> None:
    """`with pl.at(...) [as tid]:`, `with pl.scope(mode=...):`, `with pl.manual_scope():`,
    `with pl.spmd(core_num=N, sync_start=...):` (see the module docstring)."""
    if len(node.items) != 1:
        raise ParserSyntaxError("use one scope per 'with' statement, e.g. 'with pl.at(...):'", parser.span(node))
    item = node.items[0]
    call = item.context_expr
    helper = parser.parse_value(call.func) if isinstance(call, ast.Call) else None
    names = ("at", "scope", "manual_scope", "spmd", "cluster")
    if not isinstance(helper, dsl.DSLBuiltin) or helper.name not in names:
        raise ParserSyntaxError("only 'with pl.at(...)', 'with pl.scope()', 'with pl.manual_scope()', "
                                "'with pl.spmd(...)' and 'with pl.cluster()' are supported", parser.span(node))
    if item.optional_vars is not None and helper.name != "at":
        raise ParserSyntaxError(f"'with pl.{helper.name}(...) as ...' binds nothing; only 'with pl.at(...) as "
                                f"tid' binds a TaskId", parser.span(item.optional_vars))
    if item.optional_vars is not None and not isinstance(item.optional_vars, ast.Name):
        raise ParserSyntaxError("'with pl.at(...) as tid' binds one name", parser.span(item.optional_vars))
    if helper.name == "at":
        head = _at_head(parser, call, node)
    elif helper.name == "spmd":
        head = _spmd_head(parser, _spmd_kws(parser, call, "pl.spmd needs core_num=N"), node)
    elif helper.name == "cluster":
        if call.args or call.keywords:
            raise ParserTypeError("pl.cluster() takes no arguments", parser.span(call))
        _host_only(parser, call, "pl.cluster()")
        head = {"kind": ScopeKind.Cluster}
    else:
        head = _scope_head(parser, helper.name, call)
    _parse_scope_body(parser, node, head, item.optional_vars)


def _scope_head(parser: Any, name: str, call: ast.Call) -> dict[str, Any]:
    if name == "manual_scope":
        if call.args or call.keywords:
            raise ParserTypeError("pl.manual_scope() takes no arguments", parser.span(call))
        mode = ScopeMode.MANUAL
    else:
        given = [*call.args, *(k.value for k in call.keywords)]  # pl.scope(mode) or pl.scope(mode=mode)
        if len(given) > 1 or any(k.arg != "mode" for k in call.keywords):
            raise ParserTypeError("pl.scope() takes only mode=pl.ScopeMode.AUTO | MANUAL (and no deps=)",
                                  parser.span(call))
        mode = parser.parse_value(given[0]) if given else ScopeMode.AUTO
        if not isinstance(mode, ScopeMode):
            raise ParserTypeError(f"pl.scope(mode=...) must be a pl.ScopeMode, got {mode!r}", parser.span(call))
    _host_only(parser, call, f"pl.{name}()")
    return {"kind": ScopeKind.Runtime, "mode": mode}


def _spmd_head(parser: Any, kws: dict[str, ast.expr], node: ast.AST) -> dict[str, Any]:
    _host_only(parser, node, "pl.spmd")
    attrs = [("core_num", _core_num(parser, kws["core_num"]))]
    if "sync_start" in kws:
        attrs.append(("sync_start", _bool_arg(parser, kws["sync_start"], "sync_start")))
    return {"kind": ScopeKind.Spmd, "attrs": tuple(attrs)}


def _at_head(parser: Any, call: ast.Call, node: ast.With) -> dict[str, Any]:
    kws = _const_kw(parser, call, _AT_KEYS, "pl.at")
    if call.args:
        raise ParserTypeError("pl.at takes keyword arguments level=, optimizations=, deps=, no_dep_args=, "
                              "name_hint=, allow_early_resolve=", parser.span(call))
    deps = parse_deps(parser, kws["deps"], call) if "deps" in kws else ()
    level = parser.parse_value(kws["level"]) if "level" in kws else Level.CORE_GROUP
    if not isinstance(level, Level):
        raise ParserTypeError(f"pl.at level must be a pl.Level, got {level!r}", parser.span(call))
    if parser.core_region is not None:
        raise ParserSyntaxError(f"pl.at inside InCore code: this code is already {parser.core_region}, "
                                f"and InCore regions do not nest; remove this 'with pl.at(...)'",
                                parser.span(node))
    raw = parser.parse_value(kws["optimizations"]) if "optimizations" in kws else []
    if not isinstance(raw, (list, tuple)) or not all(isinstance(o, dsl.Optimization) for o in raw):
        raise ParserTypeError("optimizations must be a list of pl.split(...) / pl.split_aiv(...) / "
                              "pl.cross_core_slot(...)", parser.span(call))
    head: dict[str, Any] = {"kind": ScopeKind.InCore, "level": level,
                            "optimizations": tuple((o.name, o.params) for o in raw), "deps": deps}
    if "no_dep_args" in kws:
        head["no_dep_args"] = _no_dep_args(parser, kws["no_dep_args"])
    head["attrs"] = tuple(_task_attrs(parser, kws))
    if head["attrs"] or "no_dep_args" in head:
        if level.level_number != 0:
            raise ParserTypeError(f"name_hint= / no_dep_args= / allow_early_resolve= are options of one task: "
                                  f"they apply to a core-level pl.at (CORE_GROUP, AIC, AIV), not to "
                                  f"{level!r}", parser.span(call))
        _host_only(parser, call, "name_hint= / no_dep_args= / allow_early_resolve=")
    return head


def _parse_scope_body(parser: Any, node: ast.stmt, head: dict[str, Any], target: ast.expr | None,
                      block_var: Var | None = None, body: list[ast.stmt] | None = None) -> None:
    kind = head["kind"]
    level = head.get("level")
    if target is not None and (kind is not ScopeKind.InCore or level is None or level.level_number != 0):
        raise ParserSyntaxError("'as tid' binds the TaskId of a core-level pl.at region (level CORE_GROUP, "
                                "AIC or AIV)", parser.span(target))
    if target is not None:
        _host_only(parser, target, "'with pl.at(...) as tid'")
    saved_region = parser.core_region
    if kind is ScopeKind.InCore and level.level_number == 0:
        parser.core_region = (f"in the InCore region of the pl.at at line {parser.span(node).begin_line} "
                              f"(put any optimizations on that one)")
    # a pl.at above the core level (CHIP, CLUSTER_k, ...) becomes an Orchestration function of that
    # level (OutlineHierarchyScopes): its body is orchestration code, not InCore code
    incore = kind is ScopeKind.InCore and (level is None or level.level_number == 0)
    parser.incore_depth += incore
    saved_bv = parser.env.get(block_var.name) if block_var is not None else None
    if block_var is not None:
        parser.env[block_var.name] = block_var
        parser.loop_vars.add(block_var)
    try:
        seq, py = parser.parse_block(body if body is not None else node.body)  # type: ignore[attr-defined]
    finally:
        parser.incore_depth -= incore
        parser.core_region = saved_region
        if block_var is not None:
            parser.loop_vars.discard(block_var)
            if saved_bv is None:
                parser.env.pop(block_var.name, None)
            else:
                parser.env[block_var.name] = saved_bv
    if py is not None:  # a yield inside a scope belongs to the enclosing construct
        parser.pending_yield = py
    if kind is ScopeKind.InCore and level in CORE_SIDE:
        check_core_side(seq, level, f"this code is in the 'with pl.at(level={level!r})' region at "
                                    f"line {parser.span(node).begin_line}")
    tid = parser.new_binding(target.id, TASK_ID_TYPE, parser.span(target)) if target is not None else None
    parser.emit(ScopeStmt(kind, seq, level, head.get("optimizations", ()), head.get("deps", ()),
                          head.get("mode", ScopeMode.AUTO), head.get("no_dep_args", ()), head.get("attrs", ()),
                          tid, block_var, span=parser.span(node)))


def _spmd_kws(parser: Any, call: ast.Call, missing: str) -> dict[str, Any]:
    """`core_num` (keyword or the one positional argument) and `sync_start` of a `pl.spmd(...)` call.
    Raises ParserTypeError with `missing` when there is no core count."""
    kws = _const_kw(parser, call, ("core_num", "sync_start"), "pl.spmd")
    if len(call.args) > 1:
        raise ParserTypeError("pl.spmd takes one positional argument, the core count", parser.span(call))
    if call.args:
        kws.setdefault("core_num", call.args[0])
    if "core_num" not in kws:
        raise ParserTypeError(missing, parser.span(call))
    return kws


def spmd_loop(parser: Any, node: ast.For, call: ast.Call) -> None:
    """`for b in pl.spmd(N, sync_start=...):` — an SPMD scope whose block index is `b`."""
    if not isinstance(node.target, ast.Name):
        raise ParserSyntaxError("the loop form of pl.spmd binds one name: for b in pl.spmd(N)",
                                parser.span(node.target))
    head = _spmd_head(parser, _spmd_kws(parser, call, "pl.spmd needs the core count: for b in pl.spmd(N)"), node)
    bv = Var(node.target.id, ScalarType(INDEX), span=parser.span(node.target))
    _parse_scope_body(parser, node, head, None, bv, node.body)
    bad = _host_uses(parser.block[-1].body, bv)
    if bad is not None:
        raise ParserTypeError(f"the block index '{bv.name}' of pl.spmd is known only on the cores: pass it "
                              f"to a kernel as an argument, or use it inside a pl.at region", bad)


def _host_uses(body: Stmt, bv: Var) -> Span | None:
    """Where orchestration code in `body` uses the block index `bv` other than as a whole argument
    of a kernel call (inside `pl.at` regions any use is kernel code); None when nowhere."""
    found: list[Span] = []

    class _Uses(IRVisitor):
        def __init__(self) -> None:
            self.where: list[Span] = []

        def visit_ScopeStmt(self, s: ScopeStmt) -> None:
            if s.kind is not ScopeKind.InCore:
                super().visit_ScopeStmt(s)

        def visit_AssignStmt(self, s: AssignStmt) -> None:
            self.where.append(s.span)
            super().visit_AssignStmt(s)
            self.where.pop()

        def visit_EvalStmt(self, s: EvalStmt) -> None:
            self.where.append(s.span)
            super().visit_EvalStmt(s)
            self.where.pop()

        def visit_Call(self, e: Call) -> None:
            if isinstance(e.op, GlobalVar):
                for a in (*e.args, *e.deps):
                    if a is not bv:
                        self.visit_expr(a)
            else:
                super().visit_Call(e)

        def visit_Var(self, e: Var) -> None:
            if e is bv and not found:
                found.append(self.where[-1] if self.where else bv.span)

    _Uses().visit_stmt(body)
    return found[0] if found else None


# ---- pl.submit / pl.spmd_submit --------------------------------------------------------------
def _callee_type(parser: Any, name: str) -> FunctionType | None:
    prog = parser.program
    if prog is None:
        return None
    if name in prog.external:
        return prog.external[name].func_type
    h = prog.headers.get(name)
    return getattr(h, "func_type", None)


def parse_submit(parser: Any, node: ast.Call, spmd: bool) -> Call:
    """`pl.submit(kernel, *args, deps=[...], no_dep_args=[...], name_hint=..., allow_early_resolve=...)`
    and `pl.spmd_submit(kernel, *args, core_num=N, sync_start=..., deps=[...])`: the call of
    `kernel` marked `submit=True`, typed (outputs..., TaskId)."""
    what = "pl.spmd_submit" if spmd else "pl.submit"
    _host_only(parser, node, what)
    if not node.args:
        raise ParserTypeError(f"{what}(kernel, *args) needs the kernel to submit", parser.span(node))
    allowed = ("deps", "no_dep_args", "name_hint", "allow_early_resolve") + (("core_num", "sync_start") if spmd else ())
    kws = _const_kw(parser, node, allowed, what)
    if spmd and "core_num" not in kws:
        raise ParserTypeError("pl.spmd_submit needs core_num=N", parser.span(node))
    inner = ast.copy_location(ast.Call(func=node.args[0], args=node.args[1:],
                                       keywords=[k for k in node.keywords if k.arg == "deps"]), node)
    target = parser.parse_value(node.args[0])
    from ...ir.function import Function

    def not_a_kernel(what_it_is: str) -> ParserTypeError:
        return ParserTypeError(f"{what} submits a kernel (an InCore / AIC / AIV / Group / Spmd function); "
                               f"'{ast.unparse(node.args[0])}' {what_it_is}", parser.span(node.args[0]))

    if not isinstance(target, (GlobalVar, Function)) and not hasattr(target, "__pypto_call__"):
        raise not_a_kernel("is not one")
    got = parser.parse_value(inner)
    if not (isinstance(got, Call) and isinstance(got.op, GlobalVar)):
        raise not_a_kernel("is not one")
    ftype = _callee_type(parser, got.op.name)
    if ftype is not None and ftype not in SUBMITTABLE:
        raise not_a_kernel(f"is an {ftype.name} function: call it directly")
    attrs: list[tuple[str, Any]] = [("submit", True)]
    if spmd:
        attrs.append(("core_num", _core_num(parser, kws["core_num"])))
        if "sync_start" in kws:
            attrs.append(("sync_start", _bool_arg(parser, kws["sync_start"], "sync_start")))
    if "no_dep_args" in kws:
        excluded = _no_dep_args(parser, kws["no_dep_args"])
        idx = tuple(i for i, a in enumerate(got.args) if any(a is x for x in excluded))
        missing = [x for x in excluded if not any(a is x for a in got.args)]
        if missing:
            raise ParserTypeError(f"no_dep_args= names '{getattr(missing[0], 'name', missing[0])}', which is "
                                  f"not an argument of this call", parser.span(kws["no_dep_args"]))
        attrs.append(("no_dep_args", idx))
    attrs += _task_attrs(parser, kws)
    rets = got.result_type.types if isinstance(got.result_type, TupleType) else (got.result_type,)
    if isinstance(got.result_type, TupleType) and not got.result_type.types:
        rets = ()
    return Call(got.op, got.args, tuple(attrs), submit_result_type(rets), got.deps, span=got.span)
