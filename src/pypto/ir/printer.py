"""IR → Python DSL text (SPEC §4 "Printing"). The output re-parses with `pl.parse`.

Layout of a printed program::

    # pypto.program: <name>
    import pypto.language as pl

    M = pl.dynamic("M")            # one line per dynamic dimension used

    @pl.program
    class <name>:
        @pl.function(type=pl.FunctionType.InCore)
        def f(self, a: pl.Tensor[[64], pl.FP32], c: pl.Out[pl.Tensor[[64], pl.FP32]]) -> ...:
            t: pl.Tile[[64], pl.FP32, pl.Mem.Vec] = pl.tile.load(a, [0], [64], target_memory=pl.Mem.Vec)
            ...

Every Var gets a printed name unique within its function (its name hint, suffixed `_1`, `_2`, ...
on collision), so distinct variables never print alike. A Var bound several times (non-SSA IR)
keeps one name. Ops print fully qualified with every attribute, so the text is exact.
Statement order mirrors `pypto.language.parser` (printer and parser are siblings).
"""

from __future__ import annotations

import keyword
import math
from typing import Any

from ..core.dtype import FP32, INDEX, DataType
from ..core.enums import ForKind, ParamDirection, ScopeKind, ScopeMode
from .expr import (
    BINARY_OPS,
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
from .function import Function, Program
from .stmt import (
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
from .types import (
    ArrayType,
    CommCtxType,
    DistributedTensorType,
    MemRef,
    ScalarType,
    TensorType,
    TensorView,
    TileType,
    TileView,
    TupleType,
    Type,
    WindowBufferType,
)
from .visitor import IRVisitor

__all__ = ["python_print", "format_value"]

_INDENT = "    "


def _shown_kwargs(e: Call) -> tuple[tuple[str, Any], ...]:
    """The attributes a call prints: an op's quiet options are left out at their default."""
    if not e.kwargs or not isinstance(e.op, str):
        return e.kwargs
    from ..ops import get_op, has_op

    return get_op(e.op).shown_kwargs(e.kwargs) if has_op(e.op) else e.kwargs


def format_value(v: Any) -> str:
    """An attribute value as DSL source."""
    if isinstance(v, DataType):
        return repr(v)
    if isinstance(v, bool) or v is None:
        return repr(v)
    if isinstance(v, float):
        return _float_text(v)
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    return repr(v)


def _tuple_text(items: list[str]) -> str:
    """Python tuple display: `(a,)` for one element, `(a, b)` otherwise."""
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def _op_spelling(name: str) -> str:
    """DSL spelling of an op name: `pl.` + the name, a keyword leaf with a trailing underscore
    (`pl.tensor.and_`); the distributed ops' names already start with their module (`pld.rank`)."""
    if name.startswith("pld."):
        return name
    ns, _, leaf = name.partition(".")
    return f"pl.{ns}.{leaf}_" if keyword.iskeyword(leaf) else f"pl.{name}"


def _float_text(v: float) -> str:
    if math.isinf(v) or math.isnan(v):
        return f'float("{v}")'
    return repr(float(v))


class _DynCollector(IRVisitor):
    """Dynamic dimensions: Vars in shapes that nothing in the printed node binds (a shape may also
    use a scalar parameter or local, which prints under its own name)."""

    def __init__(self) -> None:
        self.dims: dict[Var, None] = {}
        self.bound: set[Var] = set()

    @property
    def free_dims(self) -> list[Var]:
        return [d for d in self.dims if d not in self.bound]

    @property
    def names(self) -> dict[str, None]:
        return {d.name: None for d in self.free_dims}

    def visit_type(self, t: Type) -> None:
        if isinstance(t, (TensorType, TileType)):
            dims = list(t.shape)
            if t.view is not None and getattr(t.view, "valid_shape", None) is not None:
                dims += list(t.view.valid_shape)  # type: ignore[union-attr]
            for d in dims:
                if isinstance(d, Var):
                    self.dims[d] = None
        elif isinstance(t, TupleType):
            for x in t.types:
                self.visit_type(x)

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.bound.add(s.var)
        super().visit_AssignStmt(s)

    def visit_ForStmt(self, s: ForStmt) -> None:
        self.bound.update((s.loop_var, *s.iter_args, *s.return_vars))
        super().visit_ForStmt(s)

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        self.bound.update((*s.iter_args, *s.return_vars))
        super().visit_WhileStmt(s)

    def visit_IfStmt(self, s: IfStmt) -> None:
        self.bound.update(s.return_vars)
        super().visit_IfStmt(s)

    def visit_Var(self, e: Var) -> None:
        self.visit_type(e.type)

    visit_IterArg = visit_Var

    def visit_Call(self, e: Call) -> None:
        self.visit_type(e.result_type)
        super().visit_Call(e)

    def visit_function(self, f: Function) -> None:
        self.bound.update(f.params)
        for t in f.return_types:
            self.visit_type(t)
        super().visit_function(f)


class _Namer:
    """Unique printed names per function; dynamic dims keep their global names."""

    def __init__(self, reserved: set[str], fixed: dict[int, str] | None = None) -> None:
        self.names: dict[int, str] = dict(fixed or {})  # dynamic dims print as their global name
        self.used: set[str] = set(reserved)

    def name(self, v: Var) -> str:
        n = self.names.get(id(v))
        if n is None:
            base = v.name if v.name.isidentifier() else "v"
            n, k = base, 0
            while n in self.used:
                k += 1
                n = f"{base}_{k}"
            self.used.add(n)
            self.names[id(v)] = n
        return n


class _Printer:
    def __init__(self, concise: bool, in_program: bool, dyn_names: set[str],
                 fixed: dict[int, str] | None = None) -> None:
        self.concise = concise
        self.in_program = in_program
        self.dyn = dyn_names
        self.lines: list[str] = []
        self.namer = _Namer(dyn_names | {"pl", "self"}, fixed)

    # ---- types ---------------------------------------------------------------------------
    def dim(self, d: Expr) -> str:
        if isinstance(d, Var) and d.name in self.dyn and isinstance(d.type, ScalarType):
            return d.name
        return self.expr(d)

    def shape(self, dims: tuple[Expr, ...]) -> str:
        return "[" + ", ".join(self.dim(d) for d in dims) + "]"

    def type(self, t: Type) -> str:
        if isinstance(t, CommCtxType):
            return "pld.CommCtx"
        if isinstance(t, ScalarType):
            return f"pl.Scalar[{t.dtype!r}]"
        if isinstance(t, DistributedTensorType):
            extra = f", {self.tensor_view(t.view)}" if t.view is not None else ""
            return f"pld.DistributedTensor[{self.shape(t.shape)}, {t.dtype!r}{extra}]"
        if isinstance(t, TensorType):
            extra = f", {self.tensor_view(t.view)}" if t.view is not None else ""
            return f"pl.Tensor[{self.shape(t.shape)}, {t.dtype!r}{extra}]"
        if isinstance(t, TileType):
            parts = [self.shape(t.shape), repr(t.dtype)]
            if t.memref is not None:
                parts.append(self.memref(t.memref))
            elif t.memory_space is not None:
                parts.append(repr(t.memory_space))
            if t.view is not None:
                parts.append(self.tile_view(t.view))
            return f"pl.Tile[{', '.join(parts)}]"
        if isinstance(t, TupleType):
            return "tuple[" + ", ".join(self.type(x) for x in t.types) + "]"
        if isinstance(t, ArrayType):
            return f"pl.Array[{t.extent}, {t.dtype!r}]"
        if isinstance(t, WindowBufferType):
            return "pld.WindowBuffer"
        raise TypeError(f"cannot print type {t!r}")

    def memref(self, m: MemRef) -> str:
        return f"pl.MemRef({m.memory_space!r}, id={m.id}, size={m.size}, addr={m.addr})"

    def tensor_view(self, v: TensorView) -> str:
        args = []
        if v.stride is not None:
            args.append(f"stride={self.shape(v.stride)}")
        args.append(f"layout={v.layout!r}")
        if v.valid_shape is not None:
            args.append(f"valid_shape={self.shape(v.valid_shape)}")
        args.append(f"pad={v.pad!r}")
        return f"pl.TensorView({', '.join(args)})"

    def tile_view(self, v: TileView) -> str:
        vs = self.shape(v.valid_shape) if v.valid_shape is not None else "None"
        return f"pl.TileView(valid_shape={vs}, layout={v.layout!r}, pad={v.pad!r})"

    # ---- expressions ---------------------------------------------------------------------
    def expr(self, e: Expr) -> str:
        if isinstance(e, Var):
            return self.namer.name(e)
        if isinstance(e, ConstBool):
            return repr(bool(e.value))
        if isinstance(e, ConstInt):
            return str(e.value) if e.dtype is INDEX else f"pl.const({e.value}, {e.dtype!r})"
        if isinstance(e, ConstFloat):
            txt = _float_text(e.value)
            return txt if e.dtype is FP32 and not txt.startswith("float") else f"pl.const({txt}, {e.dtype!r})"
        if isinstance(e, BinaryExpr):
            if e.op in ("min", "max"):
                return f"pl.{e.op}({self.expr(e.lhs)}, {self.expr(e.rhs)})"
            return f"{self.operand(e.lhs)} {BINARY_OPS[e.op]} {self.operand(e.rhs)}"
        if isinstance(e, UnaryExpr):
            if e.op == "cast":
                return f"pl.cast({self.expr(e.operand)}, {e.dtype!r})"
            if e.op == "abs":
                return f"abs({self.expr(e.operand)})"
            sym = {"neg": "-", "not": "not ", "bit_not": "~"}[e.op]
            return f"{sym}{self.operand(e.operand)}"
        if isinstance(e, Call):
            return self.call(e)
        if isinstance(e, MakeTuple):
            return "[" + ", ".join(self.expr(x) for x in e.elements) + "]"
        if isinstance(e, TupleGetItem):
            return f"{self.operand(e.tuple_value)}[{e.index}]"
        if isinstance(e, GlobalVar):
            return f"self.{e.name}" if self.in_program else e.name
        raise TypeError(f"cannot print expression {e!r}")

    def operand(self, e: Expr) -> str:
        s = self.expr(e)
        if isinstance(e, (BinaryExpr, UnaryExpr)) and not (
                isinstance(e, BinaryExpr) and e.op in ("min", "max")) and not (
                isinstance(e, UnaryExpr) and e.op in ("cast", "abs")):
            return f"({s})"
        if isinstance(e, (ConstInt, ConstFloat)) and s.startswith("-"):
            return f"({s})"
        return s

    def call(self, e: Call) -> str:
        args = [self.expr(a) for a in e.args]
        if isinstance(e.op, GlobalVar) and e.attr("submit"):
            return self.submit(e, args)
        if isinstance(e.op, GlobalVar) and e.attr("device"):  # host dispatch: f(..., device=r) (SPEC §8)
            args[-1] = f"device={args[-1]}"
            return f"{self.expr(e.op)}({', '.join(args)})"
        args += [f"{k}={format_value(v)}" for k, v in _shown_kwargs(e)]
        if e.deps:
            args.append(self.deps(e.deps))
        if isinstance(e.op, GlobalVar):
            return f"{self.expr(e.op)}({', '.join(args)})"
        return f"{_op_spelling(e.op)}({', '.join(args)})"

    def submit(self, e: Call, args: list[str]) -> str:
        """`pl.submit(self.k, a, b, deps=[...], ...)` / `pl.spmd_submit(..., core_num=N)` (SPEC §13)."""
        attrs = dict(e.kwargs)
        helper = "pl.spmd_submit" if "core_num" in attrs else "pl.submit"
        args = [self.expr(e.op), *args]  # type: ignore[arg-type]
        for k, v in e.kwargs:
            if k == "no_dep_args":
                args.append("no_dep_args=[" + ", ".join(self.expr(e.args[i]) for i in v) + "]")
            elif k != "submit":
                args.append(f"{k}={format_value(v)}")
        if e.deps:
            args.append(self.deps(e.deps))
        return f"{helper}({', '.join(args)})"

    def deps(self, deps: tuple[Expr, ...]) -> str:
        """`deps=[x, y]`: the explicit task dependencies of a call or a `pl.at` region."""
        return "deps=[" + ", ".join(self.expr(d) for d in deps) + "]"

    # ---- statements ----------------------------------------------------------------------
    def emit(self, depth: int, text: str) -> None:
        self.lines.append(_INDENT * depth + text)

    def binding(self, v: Var, value: str, depth: int) -> None:
        if self.concise:
            self.emit(depth, f"{self.namer.name(v)} = {value}")
        else:
            self.emit(depth, f"{self.namer.name(v)}: {self.type(v.type)} = {value}")

    def body(self, s: SeqStmts, depth: int, yield_targets: tuple[Var, ...] = ()) -> None:
        if not s.stmts:
            self.emit(depth, "pass")
            return
        for st in s.stmts:
            self.stmt(st, depth, yield_targets)

    def yield_(self, s: YieldStmt, depth: int, targets: tuple[Var, ...]) -> None:
        vals = ", ".join(self.expr(v) for v in s.values)
        if not targets:
            self.emit(depth, f"pl.yield_({vals})")
        elif len(targets) == 1:
            self.binding(targets[0], f"pl.yield_({vals})", depth)
        else:
            names = ", ".join(self.namer.name(t) for t in targets)
            self.emit(depth, f"{names} = pl.yield_({vals})")

    def stmt(self, s: Stmt, depth: int, yield_targets: tuple[Var, ...] = ()) -> None:
        if isinstance(s, AssignStmt):
            self.binding(s.var, self.expr(s.value), depth)
        elif isinstance(s, EvalStmt):
            self.emit(depth, self.expr(s.expr))
        elif isinstance(s, ReturnStmt):
            self.emit(depth, ("return " + ", ".join(self.expr(v) for v in s.values)).rstrip())
        elif isinstance(s, YieldStmt):
            self.yield_(s, depth, yield_targets)
        elif isinstance(s, SeqStmts):
            self.body(s, depth, yield_targets)
        elif isinstance(s, IfStmt):
            self.emit(depth, f"if {self.expr(s.cond)}:")
            self.body(s.then_body, depth + 1, s.return_vars)
            if s.else_body is not None:
                self.emit(depth, "else:")
                self.body(s.else_body, depth + 1, s.return_vars)
        elif isinstance(s, ForStmt):
            self.for_(s, depth)
        elif isinstance(s, WhileStmt) and not s.iter_args:  # pre-SSA form: a plain Python while
            self.emit(depth, f"while {self.expr(s.cond)}:")
            self.body(s.body, depth + 1, s.return_vars)
        elif isinstance(s, WhileStmt):
            names = _tuple_text([self.namer.name(ia) for ia in s.iter_args])
            inits = _tuple_text([self.expr(ia.init) for ia in s.iter_args])  # type: ignore[arg-type]
            self.emit(depth, f"for {names} in pl.while_(init_values={inits}):")
            self.emit(depth + 1, f"pl.cond({self.expr(s.cond)})")
            self.body(s.body, depth + 1, s.return_vars)
        elif isinstance(s, BreakStmt):
            self.emit(depth, "break")
        elif isinstance(s, ContinueStmt):
            self.emit(depth, "continue")
        elif isinstance(s, ScopeStmt) and s.block_var is not None:
            self.emit(depth, f"for {self.namer.name(s.block_var)} in {self.scope_head(s)}:")
            self.body(s.body, depth + 1, yield_targets)
        elif isinstance(s, ScopeStmt):
            tid = f" as {self.namer.name(s.task_id)}" if s.task_id is not None else ""
            self.emit(depth, f"with {self.scope_head(s)}{tid}:")
            self.body(s.body, depth + 1, yield_targets)
        else:
            raise TypeError(f"cannot print statement {type(s).__name__}")

    def for_(self, s: ForStmt, depth: int) -> None:
        rng = f"{self.expr(s.start)}, {self.expr(s.stop)}, {self.expr(s.step)}"
        if s.kind is ForKind.Pipeline:
            rng += f", stage={s.stage}"
        helper = f"pl.{s.kind.value}"
        lv = self.namer.name(s.loop_var)
        if s.iter_args:
            names = _tuple_text([self.namer.name(ia) for ia in s.iter_args])
            inits = _tuple_text([self.expr(ia.init) for ia in s.iter_args])  # type: ignore[arg-type]
            self.emit(depth, f"for {lv}, {names} in {helper}({rng}, init_values={inits}):")
        else:
            self.emit(depth, f"for {lv} in {helper}({rng}):")
        self.body(s.body, depth + 1, s.return_vars)

    def scope_head(self, s: ScopeStmt) -> str:
        if s.kind is ScopeKind.Runtime:
            return "pl.scope()" if s.mode is ScopeMode.AUTO else "pl.manual_scope()"
        if s.kind is ScopeKind.Cluster:
            return "pl.cluster()"
        if s.kind is ScopeKind.Spmd:
            kw = [f"core_num={s.attr('core_num')}"] + [f"{k}={format_value(v)}" for k, v in s.attrs
                                                       if k != "core_num"]
            return f"pl.spmd({', '.join(kw)})"
        args = []
        if s.level is not None:
            args.append(f"level={s.level!r}")
        if s.optimizations:
            args.append(_optimizations_text(s.optimizations))
        if s.deps:
            args.append(self.deps(s.deps))
        if s.no_dep_args:
            args.append("no_dep_args=[" + ", ".join(self.expr(d) for d in s.no_dep_args) + "]")
        args += [f"{k}={format_value(v)}" for k, v in s.attrs]
        return f"pl.at({', '.join(args)})"

    # ---- functions -----------------------------------------------------------------------
    def function(self, f: Function, depth: int) -> None:
        dec = [f"type={f.func_type!r}"]
        if f.level is not None:
            dec.append(f"level={f.level!r}")
        if f.role is not None:
            dec.append(f"role={f.role!r}")
        if f.strict_ssa:
            dec.append("strict_ssa=True")
        if not f.auto_scope:
            dec.append("auto_scope=False")
        if f.optimizations:
            dec.append(_optimizations_text(f.optimizations))
        if f.external is not None:
            dec += _external_text(f.external)
        self.emit(depth, f"@pl.function({', '.join(dec)})")
        params = ["self"] if self.in_program else []
        for v, d in zip(f.params, f.param_directions):
            t = self.type(v.type)
            if d is not ParamDirection.In:
                t = f"pl.{d.name}[{t}]"
            params.append(f"{self.namer.name(v)}: {t}")
        if len(f.return_types) == 1:
            ret = f" -> {self.type(f.return_types[0])}"
        elif f.return_types:
            ret = " -> tuple[" + ", ".join(self.type(t) for t in f.return_types) + "]"
        else:
            ret = ""
        self.emit(depth, f"def {f.name}({', '.join(params)}){ret}:")
        if f.attrs:  # SPEC §13: the function's metadata is its first statement
            items = ", ".join(f"{k!r}: {format_value(v)}" for k, v in f.attrs)
            self.emit(depth + 1, f"pl.func_attr({{{items}}})")
        if f.external is not None:
            self.emit(depth + 1, "...")  # a hand-written C++ kernel has no DSL body
        elif f.attrs and not f.body.stmts:
            pass  # the pl.func_attr statement is the body
        else:
            self.body(f.body, depth + 1)


def _external_text(ext: Any) -> list[str]:
    """The `@pl.function` arguments of a hand-written C++ kernel (SPEC §10)."""
    out = [f"external_source={ext.source!r}"]
    if ext.include_dirs:
        out.append(f"include_dirs={list(ext.include_dirs)!r}")
    if ext.cost is not None:
        out.append(f"cost={ext.cost!r}")
    if ext.core_num != 1:
        out.append(f"core_num={ext.core_num}")
    return out


def _optimizations_text(optimizations: tuple) -> str:
    """`optimizations=[pl.split(...), pl.cross_core_slot(slot_num=4)]` of a scope or function."""
    opts = []
    for name, params in optimizations:
        if name == "split":
            opts.append(f"pl.split({format_value(dict(params)['mode'])})")
        else:
            kw = ", ".join(f"{k}={format_value(v)}" for k, v in params)
            opts.append(f"pl.{name}({kw})")
    return f"optimizations=[{', '.join(opts)}]"


def _dyn_names(node: Any) -> tuple[list[str], dict[int, str]]:
    """Names of the free dynamic dimensions, and the Vars that must print under them."""
    c = _DynCollector()
    if isinstance(node, Program):
        c.visit_program(node)
    elif isinstance(node, Function):
        c.visit_function(node)
    elif isinstance(node, Stmt):
        c.visit_stmt(node)
    elif isinstance(node, Expr):
        c.visit_expr(node)
    return list(c.names), {id(d): d.name for d in c.free_dims}


def python_print(node: Any, concise: bool = False) -> str:
    """Print a Program, Function, statement, expression or type as DSL text.

    Programs and Functions print as complete modules that `pl.parse` turns back into a
    structurally equal node; `concise=True` drops the type annotations of assignments (the
    result still parses: types are re-inferred). Raises TypeError for an unknown node.
    """
    if isinstance(node, Type):
        return _Printer(concise, False, set()).type(node)
    dyn, fixed = _dyn_names(node)
    header: list[str] = []
    if isinstance(node, (Program, Function)):
        kind = "program" if isinstance(node, Program) else "function"
        header = [f"# pypto.{kind}: {node.name}", "import pypto.language as pl", ""]
        header += [f'{n} = pl.dynamic("{n}")' for n in dyn]
        if dyn:
            header.append("")
    if isinstance(node, Program):
        p = _Printer(concise, True, set(dyn), fixed)
        p.emit(0, "@pl.program")
        p.emit(0, f"class {node.name}:")
        for i, f in enumerate(node.functions):
            if i:
                p.emit(0, "")
            p.namer = _Namer(set(dyn) | {"pl", "pld", "self"}, fixed)
            p.function(f, 1)
        return "\n".join(_with_pld(header, p.lines) + p.lines) + "\n"
    if isinstance(node, Function):
        p = _Printer(concise, False, set(dyn), fixed)
        p.function(node, 0)
        return "\n".join(_with_pld(header, p.lines) + p.lines) + "\n"
    p = _Printer(concise, False, set(dyn), fixed)
    if isinstance(node, Stmt):
        p.stmt(node, 0)
        return "\n".join(p.lines) + "\n"
    if isinstance(node, Expr):
        return p.expr(node)
    raise TypeError(f"cannot print {type(node).__name__}")


def _with_pld(header: list[str], lines: list[str]) -> list[str]:
    """`header` plus `import pypto.language.distributed as pld` when the body uses `pld.` (SPEC §8)."""
    if not any("pld." in line for line in lines):
        return header
    return [*header[:2], "import pypto.language.distributed as pld", *header[2:]]


def _as_python(self: Any, concise: bool = False) -> str:
    return python_print(self, concise=concise)


# `node.as_python()` on every printable node (SPEC §4).
for _cls in (Program, Function, Stmt, Expr, Type):
    _cls.as_python = _as_python  # type: ignore[attr-defined]
    _cls.__str__ = lambda self: python_print(self)  # type: ignore[method-assign]

