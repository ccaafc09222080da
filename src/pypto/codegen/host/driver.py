"""The host driver of a distributed program: a HOST orchestrator function as Python (SPEC §8).

`render_host_driver(program, host)` returns the text of `orchestration/host_orch.py`. It defines
`def <host>(rt, <params...>)`, which the distributed runtime calls with its host runtime object `rt`
and the host arguments (torch tensors, Python numbers) in parameter order. The body uses only the
runtime API of the distributed design (docs/distributed.md "Host orchestrator"):

- `rt.world_size()`, `rt.alloc_window_buffer(nbytes)`, `rt.window(buf, shape, dtype_name)` — the
  Python forms of the host ops come from their OpSpecs (`OpSpec.host`, `pypto.ops.distributed_host`);
- `rt.dispatch(program, rank, args)` for `f(..., device=r)` (asynchronous; `program` is the chip
  build's name under `next_levels/`), `rt.call_sub_worker(name, args)` for a HOST SubWorker call;
- `rt.sync()` before it returns, so every dispatch has finished when the host call returns.

The tensor parameters are checked first (`pypto.runtime.dist.program.bind_host_args`: dtypes, static
dimensions, `pl.dynamic` dimensions — the leading dimension of a world-shaped tensor is bound to
the world size); dynamic dimensions become local variables of their own name. Scalars follow
Python semantics of the IR operators (`//` floor division, `%` floor modulo).

Raises CodegenError (located) for a statement or expression with no host form.
"""

from __future__ import annotations

import enum
import keyword
from typing import Any

from ...core.dtype import BOOL, DataType
from ...ir.expr import (
    BinaryExpr,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    Expr,
    GlobalVar,
    MakeTuple,
    TupleGetItem,
    UnaryExpr,
    Var,
)
from ...ir.function import Function, Program
from ...ir.stmt import (
    AssignStmt,
    BreakStmt,
    ContinueStmt,
    EvalStmt,
    ForStmt,
    IfStmt,
    ReturnStmt,
    ScopeStmt,
    SeqStmts,
    Stmt,
    WhileStmt,
    YieldStmt,
)
from ...ir.types import TensorType
from ...ir.visitor import IRVisitor
from ...ops import get_op
from ...ops.distributed_host import dispatch_args, dispatch_device, world_dims
from ..common import CodegenError

__all__ = ["render_host_driver", "HOST_DRIVER_FILE"]

HOST_DRIVER_FILE = "orchestration/host_orch.py"

_PY_BINOPS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//", "floormod": "%", "truediv": "/",
              "pow": "**", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
              "and": "and", "or": "or", "bit_and": "&", "bit_or": "|", "bit_xor": "^", "shl": "<<",
              "shr": ">>"}
# (name, import line) of what generated code may use; a driver imports only what it uses
_IMPORTS = (("_enums", "from pypto.core import enums as _enums"),
            ("_pld", "from pypto.ops import distributed_host as _pld"),
            ("_bind", "from pypto.runtime.dist.program import bind_host_args as _bind"),
            ("_dispatch_all", "from pypto.runtime.dist.program import dispatch_all as _dispatch_all"),
            ("_signal_window", "from pypto.runtime.dist.program import signal_window as _signal_window"))
_RESERVED = {"rt", "_dims", *(name for name, _ in _IMPORTS)}
_INDENT = "    "


class _Writer:
    def __init__(self, program: Program, func: Function, builtins: dict[int, str], unsignalled: set[int]) -> None:
        self.program, self.func, self.builtins, self.unsignalled = program, func, builtins, unsignalled
        self.signals: dict[str, str] = {}  # builtin program -> the driver's variable of its implicit signal
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.used: set[str] = set(_RESERVED)

    # ---- names ---------------------------------------------------------------------------
    def name(self, v: Var) -> str:
        n = self.names.get(id(v))
        if n is None:
            base = v.name if v.name.isidentifier() and not keyword.iskeyword(v.name) else "v"
            n, k = base, 0
            while n in self.used:
                k += 1
                n = f"{base}_{k}"
            self.used.add(n)
            self.names[id(v)] = n
        return n

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, e: Expr) -> str:
        if isinstance(e, Var):
            return self.name(e)
        if isinstance(e, ConstBool):
            return repr(bool(e.value))
        if isinstance(e, ConstInt):
            return str(e.value)
        if isinstance(e, ConstFloat):
            return repr(float(e.value)) if e.value == e.value and abs(e.value) != float("inf") \
                else f'float("{e.value}")'
        if isinstance(e, BinaryExpr):
            if e.op in ("min", "max"):
                return f"{e.op}({self.expr(e.lhs)}, {self.expr(e.rhs)})"
            return f"({self.expr(e.lhs)} {_PY_BINOPS[e.op]} {self.expr(e.rhs)})"
        if isinstance(e, UnaryExpr):
            return self.unary(e)
        if isinstance(e, MakeTuple):
            return "[" + ", ".join(self.expr(x) for x in e.elements) + "]"
        if isinstance(e, TupleGetItem):
            return f"{self.expr(e.tuple_value)}[{e.index}]"
        if isinstance(e, Call):
            return self.call(e)
        raise CodegenError(f"host driver: no Python form for {type(e).__name__}", e.span)

    def unary(self, e: UnaryExpr) -> str:
        x = self.expr(e.operand)
        if e.op == "cast":
            conv = "float" if e.dtype.is_float() else "bool" if e.dtype is BOOL else "int"
            return f"{conv}({x})"
        if e.op == "abs":
            return f"abs({x})"
        return {"neg": f"(-{x})", "not": f"(not {x})", "bit_not": f"(~{x})"}[e.op]

    def attr(self, v: Any) -> str:
        if isinstance(v, DataType):
            return repr(v.name)
        if isinstance(v, tuple):
            return "[" + ", ".join(self.attr(x) for x in v) + "]"
        if isinstance(v, enum.Enum):  # pypto.core.enums members (pld.ReduceOp.Sum, ...)
            return f"_enums.{type(v).__name__}.{v.name}"
        return repr(v)

    def implicit_signals(self) -> None:
        """One signal window per builtin program whose calls left out their signal, allocated first
        (`pypto.runtime.dist.program.signal_window`)."""
        for call in _collective_calls(self.func, self.unsignalled):
            name = self.builtins[id(call)]
            if name not in self.signals:
                var = f"_signal_{len(self.signals)}"
                self.signals[name] = var
                self.used.add(var)
                attrs = "{" + ", ".join(f"{k!r}: {self.attr(v)}" for k, v in call.kwargs) + "}"
                self.emit(1, f"{var} = _signal_window(rt, {call.op!r}, {attrs})")

    def call(self, e: Call) -> str:
        if isinstance(e.op, GlobalVar):
            args = "[" + ", ".join(self.expr(a) for a in dispatch_args(e)) + "]"
            rank = dispatch_device(e)
            if rank is not None:
                return f"rt.dispatch({e.op.name!r}, {self.expr(rank)}, {args})"
            return f"rt.call_sub_worker({e.op.name!r}, {args})"
        builtin = self.builtins.get(id(e))
        if builtin is not None:  # a host-level collective: its builtin chip program on every rank
            from ...ir.structural import structural_equal

            args = [self.expr(a) for a in e.args]
            result = next((t for a, t in zip(e.args, args) if structural_equal(a.type, e.type)), "None")
            if id(e) in self.unsignalled:
                args.append(self.signals[builtin])
            return f"_dispatch_all(rt, {builtin!r}, [{', '.join(args)}], {result})"
        spec = get_op(e.op)
        if not spec.host:
            raise CodegenError(f"host driver: op '{e.op}' has no host form", e.span)
        fields = {p: self.expr(a) for p, a in zip(spec.params, e.args)}
        fields.update({k: self.attr(v) for k, v in spec.attrs.items()})
        fields.update({k: self.attr(v) for k, v in e.kwargs})
        return spec.host.format(**fields)

    # ---- statements ----------------------------------------------------------------------
    def body(self, s: SeqStmts, depth: int, targets: tuple[Var, ...] = ()) -> None:
        start = len(self.lines)
        for st in s.stmts:
            self.stmt(st, depth, targets)
        if len(self.lines) == start:
            self.emit(depth, "pass")

    def stmt(self, s: Stmt, depth: int, targets: tuple[Var, ...]) -> None:
        if isinstance(s, AssignStmt):
            self.emit(depth, f"{self.name(s.var)} = {self.expr(s.value)}")
        elif isinstance(s, EvalStmt):
            self.emit(depth, self.expr(s.expr))
        elif isinstance(s, ReturnStmt):
            self.emit(depth, "rt.sync()")
            vals = [self.expr(v) for v in s.values]
            self.emit(depth, "return" if not vals else f"return {', '.join(vals)}")
        elif isinstance(s, YieldStmt):
            for t, v in zip(targets, s.values):
                self.emit(depth, f"{self.name(t)} = {self.expr(v)}")
        elif isinstance(s, SeqStmts):
            self.body(s, depth, targets)
        elif isinstance(s, IfStmt):
            self.emit(depth, f"if {self.expr(s.cond)}:")
            self.body(s.then_body, depth + 1, s.return_vars)
            if s.else_body is not None:
                self.emit(depth, "else:")
                self.body(s.else_body, depth + 1, s.return_vars)
        elif isinstance(s, ForStmt):
            self.for_(s, depth)
        elif isinstance(s, WhileStmt):
            self.while_(s, depth)
        elif isinstance(s, BreakStmt):
            self.emit(depth, "break")
        elif isinstance(s, ContinueStmt):
            self.emit(depth, "continue")
        elif isinstance(s, ScopeStmt) and s.block_var is None:
            self.body(s.body, depth, targets)  # runtime scopes order nothing on the host
        else:
            raise CodegenError(f"host driver: no Python form for {type(s).__name__}", s.span)

    def carried(self, s: ForStmt | WhileStmt, depth: int) -> None:
        for ia in s.iter_args:
            self.emit(depth, f"{self.name(ia)} = {self.expr(ia.init)}")  # type: ignore[arg-type]

    def results(self, s: ForStmt | WhileStmt, depth: int) -> None:
        for rv, ia in zip(s.return_vars, s.iter_args):
            self.emit(depth, f"{self.name(rv)} = {self.name(ia)}")

    def for_(self, s: ForStmt, depth: int) -> None:
        self.carried(s, depth)
        rng = f"{self.expr(s.start)}, {self.expr(s.stop)}, {self.expr(s.step)}"
        self.emit(depth, f"for {self.name(s.loop_var)} in range({rng}):")
        self.body(s.body, depth + 1, tuple(s.iter_args))
        self.results(s, depth)

    def while_(self, s: WhileStmt, depth: int) -> None:
        self.carried(s, depth)
        self.emit(depth, f"while {self.expr(s.cond)}:")
        self.body(s.body, depth + 1, tuple(s.iter_args))
        self.results(s, depth)

    # ---- the function --------------------------------------------------------------------
    def function(self) -> None:
        f = self.func
        params = [self.name(p) for p in f.params]
        self.emit(0, f"def {f.name}({', '.join(['rt', *params])}):")
        self.emit(1, f'"""Host orchestrator {f.name!r}: run by the distributed runtime with its `rt`."""')
        specs = []
        dims: dict[str, Var] = {}
        for p in f.params:  # tensors are checked here; scalars by the chip program they reach
            t = p.type
            if not isinstance(t, TensorType):
                continue
            shape = []
            for x in t.shape:
                if isinstance(x, ConstInt):
                    shape.append(str(x.value))
                elif isinstance(x, Var):
                    shape.append(repr(x.name))
                    dims.setdefault(x.name, x)
                else:
                    shape.append("None")  # an expression: checked by the chip builds
            specs.append(f"({p.name!r}, {self.name(p)}, [{', '.join(shape)}], {t.dtype.name!r})")
        ranked = _rank_viewed(f)
        self.emit(1, f"_dims = _bind(rt, {f.name!r}, [{', '.join(specs)}], {sorted(_world_dim_names(f))!r}"
                     + (f", {ranked!r})" if ranked else ")"))
        for n, v in dims.items():
            self.names[id(v)] = n
            self.used.add(n)
            self.emit(1, f"{n} = _dims[{n!r}]")
        self.implicit_signals()
        self.body(f.body, 1)
        if not f.body.stmts or not isinstance(f.body.stmts[-1], ReturnStmt):
            self.emit(1, "rt.sync()")


def _collective_calls(f: Function, ids: set[int]) -> list[Call]:
    """The calls of `f` whose id is in `ids`, in program order."""
    found: list[Call] = []

    class _Find(IRVisitor):
        def visit_Call(self, e: Call) -> None:
            if id(e) in ids:
                found.append(e)
            super().visit_Call(e)

    _Find().visit_function(f)
    return found


def _rank_viewed(f: Function) -> list[str]:
    """Names of the parameters of `f` indexed by rank (`x[r]`, `pld.rank_view`): world-shaped."""
    params = set(f.params)
    found: dict[str, None] = {}

    class _Find(IRVisitor):
        def visit_Call(self, e: Call) -> None:
            if e.op == "pld.rank_view" and e.args[0] in params:
                found[e.args[0].name] = None  # type: ignore[union-attr]
            super().visit_Call(e)

    _Find().visit_function(f)
    return list(found)


def _world_dim_names(f: Function) -> set[str]:
    return {v.name for v in world_dims(f)}


def render_host_driver(program: Program, host: str, builtins: dict[int, str] | None = None,
                       unsignalled: set[int] | None = None) -> str:
    """The Python text of `orchestration/host_orch.py` for HOST orchestrator `host` of `program`
    (module doc); `builtins` names the builtin chip program of each host-level collective call (by
    `id` of the Call), dispatched to every rank; the calls in `unsignalled` left out their signal
    and get the driver's own (one per builtin program, allocated first). Raises CodegenError for a
    construct without a host form."""
    func = program.get_function(host)
    if func is None:
        raise CodegenError(f"program '{program.name}' has no function {host!r}")
    w = _Writer(program, func, builtins or {}, unsignalled or set())
    for p in func.params:  # parameters keep their names
        w.name(p)
    w.function()
    body = "\n".join(w.lines)
    imports = [line for name, line in _IMPORTS if name == "_bind" or f"{name}(" in body or f"{name}." in body]
    head = [f'"""Host driver of distributed program {program.name!r} (generated by PyPTO from HOST '
            f'orchestrator {host!r}; SPEC §8).',
            "",
            "The distributed runtime calls it with its host runtime object `rt` (world_size,",
            "alloc_window_buffer, window, dispatch, call_sub_worker, sync) and the host arguments.",
            '"""',
            "",
            *imports,
            "", ""]
    return "\n".join(head + w.lines) + "\n"
