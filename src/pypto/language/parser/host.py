"""Parsing HOST-level functions of distributed programs (SPEC §8 "Three levels", "Host dispatch").

A HOST orchestrator (`@pl.jit.host`, or `@pl.function(level=pl.Level.HOST,
role=pl.Role.Orchestrator)` in a `@pl.program`) runs on the host CPU: it allocates window buffers,
loops over the ranks and dispatches chip orchestration functions to them. This module holds what
the parser checks and builds there:

- (`ExprParser.check_op_placement`: only ops with the "host" trait — `pypto.ops.distributed_host`,
  host-level collectives — are legal in a host orchestrator; "host_only" ops are illegal elsewhere.)
- `rank_subscript`: `x[r]` of a world-shaped host tensor `[NR, ...]` is `pld.rank_view(x, r)`.
- `function_call`: the rules for calling program functions across levels — a chip orchestration
  function is called from the host only with `device=r`; a HOST SubWorker only from the host and
  without it; kernels never from the host; `device=` nowhere else.
- `check_dispatch_loops`: after the body is parsed, every `device=` names the variable of an
  enclosing loop that covers exactly `[0, world size)` with step 1 (`pl.range(pld.world_size())`,
  or a `pl.dynamic` leading dimension of a host tensor parameter, which is bound to the world size).

Every error is a ParserError subclass located at the user's line.
"""

from __future__ import annotations

import ast
from typing import Any

from ...core.enums import FunctionType, Level, Role
from ...core.errors import ParserSyntaxError, ParserTypeError
from ...ir.expr import Call, ConstInt, Expr, GlobalVar, Var
from ...ir.function import Function
from ...ir.stmt import AssignStmt, EvalStmt, ForStmt
from ...ir.types import ScalarType
from ...ir.visitor import IRVisitor
from ...ops.distributed_host import DEVICE_ATTR, dispatch_device, world_dims

__all__ = ["is_host_orchestrator", "is_sub_worker", "rank_subscript", "function_call",
           "check_dispatch_loops"]

_KERNEL_TYPES = frozenset({FunctionType.InCore, FunctionType.AIC, FunctionType.AIV, FunctionType.Group,
                           FunctionType.Spmd})
_LOOP_HINT = "for r in pl.range(pld.world_size()): ..."


def is_host_orchestrator(level: Level | None, role: Role | None, func_type: FunctionType | None) -> bool:
    """Whether a function with these decorator options is the HOST orchestrator of a distributed
    program (SPEC §8): level HOST, not a SubWorker, and not of type Orchestration — the functions
    OutlineHierarchyScopes makes of `pl.at(level=pl.Level.HOST)` regions of a single-chip program
    are HOST-level *chip* orchestrations (type Orchestration) and keep the chip's rules."""
    return level is Level.HOST and role is not Role.SubWorker and func_type is not FunctionType.Orchestration


def is_sub_worker(level: Level | None, role: Role | None) -> bool:
    """Whether a function with these decorator options is a HOST SubWorker (a Python callback)."""
    return level is Level.HOST and role is Role.SubWorker


def _where(parser: Any) -> str:
    if is_host_orchestrator(parser.level, parser.role, parser.func_type):
        return f"HOST orchestrator '{parser.fdef.name}'"
    return f"{parser.func_type.name} function '{parser.fdef.name}'"


def rank_subscript(parser: Any, base: Expr, node: ast.Subscript) -> Expr:
    """`x[r]` in a host orchestrator: rank r's part of world-shaped tensor `x` (`pld.rank_view`)."""
    if isinstance(node.slice, (ast.Slice, ast.Tuple)):
        raise ParserTypeError(
            f"in a HOST orchestrator a tensor is indexed by rank only: x[r] selects rank r's part of a "
            f"world-shaped tensor [NR, ...]; slice '{ast.unparse(node)}' inside the chip orchestration "
            f"function instead", parser.span(node))
    rank = parser.parse_expr(node.slice)
    return parser.call_op("pld.rank_view", [base, rank], {}, node)


def _callee(parser: Any, name: str) -> tuple[FunctionType | None, Level | None, Role | None]:
    ctx = parser.program
    f = ctx.external.get(name)
    if f is not None:
        return f.func_type, f.level, f.role
    h = ctx.headers.get(name)
    return (h.func_type, getattr(h, "level", None), getattr(h, "role", None)) if h is not None else (None, None, None)


def _kind_text(ft: FunctionType | None, level: Level | None, role: Role | None) -> str:
    if is_sub_worker(level, role):
        return "a HOST SubWorker"
    if is_host_orchestrator(level, role, ft):
        return "a HOST orchestrator"
    if ft in _KERNEL_TYPES:
        return f"an {ft.name} kernel" if ft.name[0] in "AI" else f"a {ft.name} kernel"  # type: ignore[union-attr]
    return f"a {ft.name} function" if ft is not None else "a function"


def function_call(parser: Any, gv: GlobalVar, args: list[Expr], device: ast.keyword | None,
                  node: ast.Call) -> tuple[tuple[Expr, ...], tuple[tuple[str, Any], ...]]:
    """The arguments and attributes of a call of program function `gv` under the level rules of
    the module doc (a dispatch call gets the rank as its last argument and `device=True`)."""
    ft, level, role = _callee(parser, gv.name)
    host = is_host_orchestrator(parser.level, parser.role, parser.func_type)
    kind = _kind_text(ft, level, role)
    chip_orch = ft is FunctionType.Orchestration
    if not host:
        if device is not None:
            raise ParserSyntaxError(
                f"device= dispatches a chip orchestration function to a rank, which only a HOST "
                f"orchestrator does (@pl.jit.host, or @pl.function(level=pl.Level.HOST, "
                f"role=pl.Role.Orchestrator)); {_where(parser)} is not one", parser.span(device))
        if is_sub_worker(level, role) or is_host_orchestrator(level, role, ft):
            raise ParserSyntaxError(f"'{gv.name}' is {kind}: only a HOST orchestrator can call it",
                                    parser.span(node))
        return tuple(args), ()
    if is_sub_worker(level, role):
        if device is not None:
            raise ParserSyntaxError(f"'{gv.name}' is a HOST SubWorker (a Python callback on the host): "
                                    f"call it without device=", parser.span(device))
        return tuple(args), ()
    if not chip_orch:
        at = device if device is not None else node
        what = "device= dispatches a chip orchestration function" if device is not None else \
            "a HOST orchestrator calls chip orchestration functions (with device=r) and SubWorkers"
        raise ParserSyntaxError(
            f"{what}, but '{gv.name}' is {kind}; call it from a chip orchestration function "
            f"(@pl.jit, or @pl.function(type=pl.FunctionType.Orchestration)) and dispatch that one",
            parser.span(at))
    if device is None:
        raise ParserSyntaxError(
            f"'{gv.name}' is a chip orchestration function: a HOST orchestrator dispatches it to one rank "
            f"with device=r inside the rank loop ({_LOOP_HINT} {gv.name}(..., device=r))", parser.span(node))
    rank = parser.parse_expr(device.value)
    if not (isinstance(rank.type, ScalarType) and rank.type.dtype.is_int()):
        raise ParserTypeError("device= takes an integer rank (the rank loop's variable)", parser.span(device))
    return (*args, rank), ((DEVICE_ATTR, True),)


class _DispatchLoops(IRVisitor):
    """Walks a host orchestrator with the enclosing loops and the values of assigned names."""

    def __init__(self, func: Function) -> None:
        self.world = world_dims(func)
        self.values: dict[Var, Expr] = {}
        self.loops: list[ForStmt] = []
        self.statements: set[int] = set()  # ids of dispatch calls that are whole statements

    def is_world(self, e: Expr) -> bool:
        while isinstance(e, Var) and e in self.values:
            e = self.values[e]
        if isinstance(e, Call) and e.op == "pld.world_size":
            return True
        return isinstance(e, Var) and e in self.world

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.values[s.var] = s.value
        super().visit_AssignStmt(s)

    def visit_EvalStmt(self, s: EvalStmt) -> None:
        if isinstance(s.expr, Call) and dispatch_device(s.expr) is not None:
            self.statements.add(id(s.expr))
        super().visit_EvalStmt(s)

    def visit_ForStmt(self, s: ForStmt) -> None:
        self.loops.append(s)
        try:
            super().visit_ForStmt(s)
        finally:
            self.loops.pop()

    def visit_Call(self, e: Call) -> None:
        rank = dispatch_device(e)
        if rank is not None:
            if id(e) not in self.statements:
                raise ParserSyntaxError(
                    f"a dispatch runs '{e.op_name}' on rank r asynchronously and gives the host no value: "
                    f"write it as a statement, {e.op_name}(..., device=r); its Out/InOut arguments (e.g. "
                    f"ys[r]) receive the results", e.span)
            self.check(e, rank)
        super().visit_Call(e)

    def check(self, call: Call, rank: Expr) -> None:
        loop = next((lp for lp in reversed(self.loops) if lp.loop_var is rank), None)
        if loop is None:
            raise ParserSyntaxError(
                f"device= of '{call.op_name}' must be the variable of the enclosing rank loop, so that "
                f"every rank gets the dispatch ({_LOOP_HINT} {call.op_name}(..., device=r))", call.span)
        ok = (isinstance(loop.start, ConstInt) and loop.start.value == 0 and isinstance(loop.step, ConstInt)
              and loop.step.value == 1 and self.is_world(loop.stop))
        if not ok:
            from ...ir.printer import python_print

            got = f"pl.range({python_print(loop.start)}, {python_print(loop.stop)}, {python_print(loop.step)})"
            raise ParserSyntaxError(
                f"a dispatch loop must cover exactly the ranks [0, N), N = pld.world_size() (or the "
                f"pl.dynamic rank count of a world-shaped parameter), with step 1; this one is {got}: "
                f"write {_LOOP_HINT}", loop.span)


def check_dispatch_loops(func: Function) -> None:
    """Raise ParserSyntaxError (at the call or the loop) for a dispatch outside a full rank loop."""
    _DispatchLoops(func).visit_function(func)
