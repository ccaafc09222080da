"""PTO MLIR text of one kernel (SPEC §5 "PTO MLIR facts").

Layout of the generated function, in order: `arith.constant`s, one `pto.make_tensor_view` per
tensor parameter (dynamic dimensions are `index` arguments after the parameters), one
`pto.alloc_tile addr = ...` per tile (address, memory space and type from memory planning; tiles
sharing a buffer get allocations at the same address), then the body. Every op carries
`loc("file.py":line:col)` of the user's statement.

Ops are emitted from their OpSpec alone (DESIGN "One registry, many readers"; nothing here knows a
specific op): the instruction is `OpSpec.pto`; arguments the op reads (and scratch tiles) go to
`ins(...)`, arguments it writes and the result tile go to `outs(...)`. A tensor argument becomes a
`pto.partition_view` window whose offsets come from the op's `offsets` argument and whose sizes
come from its `shapes` argument, else from the tile it moves (or, for the arguments an op lists in
`OpSpec.regions`, from the arguments named there: the distributed transfers). A tile op without a `pto` name is an
error naming the op, except creation ops (`tile.create`), which only allocate.

Between the pipes, `pto.set_flag` / `pto.wait_flag` pairs order the ops that share a buffer
(`sync.py`; when the caller says which pipe each op runs on, as the compile driver does).

Control flow becomes `scf.for` / `scf.if` / `scf.while`; loop-carried tiles and scalars are
`iter_args`. Tiles are buffers (destination-passing style): when a yielded tile sits in another
buffer than the carried value, a `pto.tmov` copies it there first, as the simulator does
(control.py). DDR tensors are not carried: a tensor value is always a view of the parameter it
aliases.
"""

from __future__ import annotations

from typing import Any

from ...core.dtype import INDEX, INT64
from ...core.span import Span
from ...ir.expr import (
    BinaryExpr,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    Expr,
    MakeTuple,
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
from ...ir.types import ArrayType, ScalarType, TensorType, TileType, TupleType
from ...ops import get_op
from ..common import CodegenError, NameAllocator, dynamic_dims, kernel_core_type, span_or
from .attrs import format_attrs
from .control import ControlFlow
from .scalars import Scalar, ScalarBuilder
from .sync import PipeOf, SyncPlan, plan_sync
from .types import elem, partition_type, pto_dims, ptr_type, tensor_view_type, tile_buf_type
from .values import ArrayVal, TensorVal, TileVal, Value, array_type_str, buffer_key, mlir_loc

__all__ = ["emit_kernel", "mlir_loc"]


class KernelEmitter(ControlFlow):
    """Emits one kernel Function as a PTO MLIR module (see the module docstring)."""

    def __init__(self, func: Function, program: Program | None = None, pipe_of: PipeOf | None = None) -> None:
        self.func, self.program = func, program
        self.sync = plan_sync(func, pipe_of) if pipe_of is not None else SyncPlan()
        self.names = NameAllocator()
        self.env: dict[Var, Value] = {}
        self.floc = mlir_loc(func.span)
        self.block: list[str] = []
        self.depth = 2
        self.sc = ScalarBuilder(self.names, self.emit, self.floc)
        self.allocs: dict[tuple, TileVal] = {}
        self.alloc_lines: list[str] = []
        self.yields: list = []  # control._Yield records of the enclosing loops and ifs
        self.span = func.span

    # ---- output helpers -------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.block.append("  " * self.depth + line)

    def loc(self, *spans: Span | None) -> str:
        return mlir_loc(span_or(*spans, self.span, self.func.span))

    def fail(self, msg: str, span: Span | None = None) -> CodegenError:
        return CodegenError(f"kernel '{self.func.name}': {msg}", span_or(span, self.span, self.func.span))

    # ---- entry ----------------------------------------------------------------------------
    def run(self) -> str:
        f = self.func
        args, view_lines = self._signature()
        body: list[str] = []
        self.block, self.depth = body, 2
        self.stmt(f.body)
        if not body or not body[-1].lstrip().startswith("return"):
            self.emit(f"return {self.floc}")
        core = kernel_core_type(f)
        where = f" ({f.span})" if f.span.is_known() else ""
        head = [f"// PyPTO kernel '{f.name}'" + (f" of program '{self.program.name}'" if self.program else "")
                + f"{where}; runs on {core.upper()} cores",
                "module {", f"  func.func @{f.name}({', '.join(args)}) {{"]
        pre = ["    " + x for x in self.sc.const_lines] + view_lines + self.alloc_lines
        return "\n".join(head + pre + body + ["  }", "}", ""])

    def _signature(self) -> tuple[list[str], list[str]]:
        args: list[str] = []
        params = list(self.func.params)
        for p in params:
            name = "%" + self.names.fresh(p.name)
            t = p.type
            if isinstance(t, TensorType):
                args.append(f"{name}: {ptr_type(t)}")
                self.env[p] = name  # replaced by its view below
            elif isinstance(t, ScalarType):
                args.append(f"{name}: {elem(t.dtype)}")
                self.env[p] = Scalar(name, t.dtype)
            else:
                raise self.fail(f"parameter '{p.name}' is a {type(t).__name__}; kernel parameters are "
                                f"tensors or scalars", p.span)
        for d, _, _, _ in dynamic_dims(self.func):  # dynamic dimensions follow the parameters
            name = "%" + self.names.fresh(d.name)
            args.append(f"{name}: index")
            self.env[d] = Scalar(name, INDEX)
        view_lines: list[str] = []
        self.block, self.depth = view_lines, 2
        for p in params:
            t = p.type
            if isinstance(t, TensorType):
                ptr = self.env[p]
                dims = pto_dims(t.dtype, t.shape)
                shape = [self.index_of(d) for d in dims]
                strides = self._strides(t, dims, shape)
                view = "%" + self.names.fresh(f"{p.name}_view")
                self.emit(f"{view} = pto.make_tensor_view {ptr}, shape = [{', '.join(s.name for s in shape)}], "
                          f"strides = [{', '.join(s.name for s in strides)}] : {tensor_view_type(t)} "
                          f"{self.loc(p.span)}")
                self.env[p] = TensorVal(view, t)
        return args, view_lines

    def _strides(self, t: TensorType, dims: tuple[Expr, ...], shape: list[Scalar]) -> list[Scalar]:
        """Explicit view strides, else row-major strides over `dims` (the shape in PTO elements,
        `pto_dims`; constants folded)."""
        if t.view is not None and t.view.stride is not None:
            if dims != tuple(t.shape):
                raise self.fail(f"explicit strides on a {t.dtype.name} tensor view are not supported "
                                f"(its PTO element holds two values)")
            return [self.index_of(s) for s in t.view.stride]
        out: list[Scalar] = []
        const: int | None = 1
        dyn: Scalar | None = None
        for d, s in zip(reversed(dims), reversed(shape)):
            if dyn is None:
                out.append(self.sc.index(const))  # type: ignore[arg-type]
            else:
                out.append(dyn if const == 1 else self._mul(dyn, self.sc.index(const), self.floc))  # type: ignore[arg-type]
            if isinstance(d, ConstInt):
                const *= d.value  # type: ignore[operator]
            else:
                dyn = s if dyn is None else self._mul(dyn, s, self.floc)
        return list(reversed(out))

    def _mul(self, a: Scalar, b: Scalar, loc: str) -> Scalar:
        name = "%" + self.names.fresh("t")
        self.emit(f"{name} = arith.muli {a.name}, {b.name} : index {loc}")
        return Scalar(name, INDEX)

    # ---- values ---------------------------------------------------------------------------
    def index_of(self, e: Expr) -> Scalar:
        if isinstance(e, ConstInt):
            return self.sc.index(e.value)
        return self.sc.coerce(self.scalar(e), INDEX, self.loc(e.span))

    def scalar(self, e: Expr, hint: str = "t") -> Scalar:
        if isinstance(e, (ConstInt, ConstFloat, ConstBool)):
            return self.sc.literal(e)
        if isinstance(e, Var):
            v = self.env.get(e)
            if not isinstance(v, Scalar):
                raise self.fail(f"'{e.name}' is not a scalar value here", e.span)
            return v
        loc = self.loc(e.span)
        if isinstance(e, BinaryExpr):
            return self.sc.binary(e, self.scalar(e.lhs), self.scalar(e.rhs), loc, hint)
        if isinstance(e, UnaryExpr):
            return self.sc.unary(e, self.scalar(e.operand), loc, hint)
        if isinstance(e, Call) and isinstance(e.type, ScalarType):
            return self.op_call(e, None, e.span, hint)
        raise self.fail(f"cannot generate a scalar from {type(e).__name__}", e.span)

    def value(self, e: Expr) -> Value:
        if isinstance(e, Var):
            v = self.env.get(e)
            if v is None:
                raise self.fail(f"'{e.name}' is used before it has a value", e.span)
            return v
        return self.scalar(e)

    def tile(self, e: Expr) -> TileVal:
        v = self.value(e)
        if not isinstance(v, TileVal):
            raise self.fail(f"expected a tile, got {e!r}", e.span)
        return v

    def alloc(self, t: TileType, hint: str, span: Span | None) -> TileVal:
        """The buffer value of tile `hint` of type `t`: a `pto.alloc_tile` at the planned address,
        hoisted to the function top when its valid shape is static (one per tile name and type;
        tiles that memory planning put in the same buffer get allocations at the same address)."""
        if t.memref is None or t.memref.addr < 0:
            raise self.fail(f"tile '{hint}' has no address; memory planning (InitMemRef, "
                            f"AllocateMemoryAddr) must run before codegen", span)
        tstr = tile_buf_type(t)
        dims = t.view.valid_shape if t.view is not None and t.view.valid_shape is not None else t.shape
        dims = pto_dims(t.dtype, tuple(dims))
        static = all(isinstance(d, ConstInt) for d in dims)
        key = (*buffer_key(t), tstr, tuple(d.value for d in dims) if static else None, hint)
        if static and key in self.allocs:
            return self.allocs[key]
        saved = (self.block, self.depth)
        if static:
            self.block, self.depth = self.alloc_lines, 2
        try:
            vr, vc = self._valid(dims, span)
            name = "%" + self.names.fresh(hint)
            addr = self.sc.const(t.memref.addr, INT64)
            self.emit(f"{name} = pto.alloc_tile addr = {addr.name} valid_row = {vr.name} valid_col = {vc.name} "
                      f": {tstr} {self.loc(span)}")
        finally:
            self.block, self.depth = saved
        tv = TileVal(name, t, tstr)
        if static:
            self.allocs[key] = tv
        return tv

    def _valid(self, dims: tuple[Expr, ...], span: Span | None) -> tuple[Scalar, Scalar]:
        if not dims:
            return self.sc.index(1), self.sc.index(1)
        vals = [self.index_of(d) for d in dims]
        rows = self.sc.index(1)
        for v in vals[:-1]:
            rows = v if rows.name == self.sc.index(1).name else self._mul(rows, v, self.loc(span))
        return rows, vals[-1]

    def move_into(self, v: TileVal, target: TileType, target_name: str | None, span: Span | None,
                  hint: str = "moved") -> TileVal:
        """`v` if it already sits in `target`'s buffer, else a `pto.tmov` of `v` into that buffer
        (the SSA value `target_name`, or a new allocation named `hint`)."""
        if buffer_key(v.type) == buffer_key(target) and v.tstr == tile_buf_type(target):
            return v
        dst = TileVal(target_name, target, tile_buf_type(target)) if target_name else \
            self.alloc(target, hint, span)
        self.emit(f"pto.tmov ins({v.name} : {v.tstr}) outs({dst.name} : {dst.tstr}) {self.loc(span)}")
        return dst

    # ---- statements -----------------------------------------------------------------------
    def stmt(self, s: Stmt) -> None:
        prev, self.span = self.span, span_or(s.span, self.span)
        try:
            handler = _STMTS.get(type(s))
            if handler is None:
                raise self.fail(f"{type(s).__name__} is not supported in a kernel", s.span)
            for line in self.sync.before.get(id(s), ()):
                self.emit(f"{line} {self.loc(s.span)}")
            handler(self, s)
            for line in self.sync.after.get(id(s), ()):
                self.emit(f"{line} {self.loc(s.span)}")
        finally:
            self.span = prev

    def seq(self, s: SeqStmts) -> None:
        for x in s.stmts:
            self.stmt(x)

    def scope(self, s: ScopeStmt) -> None:
        self.stmt(s.body)

    def ret(self, s: ReturnStmt) -> None:
        if self.depth != 2:
            raise self.fail("return inside control flow cannot be expressed in PTO", s.span)
        self.emit(f"return {self.loc(s.span)}")

    def no_jump(self, s: Stmt) -> None:
        raise self.fail(f"{'break' if isinstance(s, BreakStmt) else 'continue'} must be removed "
                        f"(CtrlFlowTransform) before PTO codegen", s.span)

    def eval_(self, s: EvalStmt) -> None:
        if isinstance(s.expr, Call) and isinstance(s.expr.op, str):
            self.op_call(s.expr, None, s.span)

    def assign(self, s: AssignStmt) -> None:
        v, e = s.var, s.value
        if isinstance(e, Call):
            if not isinstance(e.op, str):
                raise self.fail(f"a kernel cannot call function '{e.op_name}'", s.span)
            self.op_call(e, v, s.span, v.name)
        elif isinstance(e, Var) and isinstance(v.type, TileType):
            self.env[v] = self.move_into(self.tile(e), v.type, None, s.span, v.name)
        elif isinstance(e, Var):
            val = self.value(e)
            if isinstance(v.type, TensorType) and not isinstance(val, TensorVal):
                raise self.fail(f"tensor '{v.name}' is assigned '{e.name}', which is not a tensor: the "
                                f"lowered IR is ill-typed (an earlier pass must store the tile or keep "
                                f"'{v.name}' a tile)", s.span)
            self.env[v] = val
        elif isinstance(e, (ConstInt, ConstFloat, ConstBool, BinaryExpr, UnaryExpr)):
            self.env[v] = self.scalar(e, v.name)
        else:
            raise self.fail(f"cannot generate '{v.name} = {type(e).__name__}'", s.span)

    # ---- ops ------------------------------------------------------------------------------
    def op_call(self, call: Call, var: Var | None, span: Span | None, hint: str = "t") -> Any:
        spec = get_op(call.op)  # type: ignore[arg-type]
        rt = call.type
        loc = self.loc(call.span, span)
        if spec.pto is None:
            if spec.has_trait("creation") and isinstance(rt, TileType) and var is not None:
                self.env[var] = self.alloc(var.type, var.name, span)  # type: ignore[arg-type]
                return self.env[var]
            if spec.has_trait("orchestration") and spec.tile_op is None and not spec.lowering:
                raise self.fail(f"op '{spec.name}' runs only in orchestration functions (host code), not "
                                f"inside a kernel; call it where the tensor is passed to the kernel", call.span or span)
            raise self.fail(f"op '{spec.name}' has no PTO instruction (its OpSpec sets no `pto` name), "
                            f"so this kernel cannot be generated", call.span or span)
        writes = set(spec.writes) - set(spec.scratch)
        tile_ref = var.type if var is not None and isinstance(var.type, TileType) else next(
            (a.type for a in call.args if isinstance(a.type, TileType)), None)
        ins: list[tuple[str, str]] = []
        outs: list[tuple[str, str]] = []
        written_tensor: TensorVal | None = None
        for i, a in enumerate(call.args):
            if isinstance(a, MakeTuple):
                continue
            t, dst = a.type, (outs if i in writes else ins)
            if isinstance(t, TensorType):
                dst.append(self._partition(call, spec.params, i, tile_ref, loc))
                if i in writes:
                    written_tensor = self.value(a)
            elif isinstance(t, TileType):
                tv = self.tile(a)
                dst.append((tv.name, tv.tstr))
            elif isinstance(t, ScalarType):
                sv = self.scalar(a)
                ins.append((sv.name, elem(sv.dtype)))
            elif isinstance(t, ArrayType):
                av = self.value(a)
                ins.append((av.name, av.tstr))
            else:
                raise self.fail(f"op '{spec.name}': unsupported argument of type {type(t).__name__}", a.span)
        result: Any = None
        if isinstance(rt, TileType):
            target = var.type if var is not None else rt
            result = self.alloc(target, var.name if var is not None else "t", span)  # type: ignore[arg-type]
            outs.append((result.name, result.tstr))
        elif isinstance(rt, TensorType):
            if written_tensor is None:
                raise self.fail(f"op '{spec.name}' returns a tensor it does not write", call.span)
            result = written_tensor
        elif isinstance(rt, ScalarType):
            result = Scalar("%" + self.names.fresh(hint), rt.dtype)
        elif isinstance(rt, ArrayType):
            result = ArrayVal("%" + self.names.fresh(var.name if var is not None else "arr"), rt, array_type_str(rt))
        elif not (isinstance(rt, TupleType) and not rt.types):
            raise self.fail(f"op '{spec.name}' returns a {type(rt).__name__}", call.span)
        text = spec.pto
        if ins:
            text += f" ins({', '.join(n for n, _ in ins)} : {', '.join(t for _, t in ins)})"
        if outs:
            text += f" outs({', '.join(n for n, _ in outs)} : {', '.join(t for _, t in outs)})"
        text += format_attrs(spec.shown_kwargs(call.kwargs))
        if isinstance(result, Scalar):
            text = f"{result.name} = {text} -> {elem(result.dtype)}"
        elif isinstance(result, ArrayVal):
            text = f"{result.name} = {text} -> {result.tstr}"
        self.emit(f"{text} {loc}")
        if var is not None:
            self.env[var] = result
        return result

    def _partition(self, call: Call, params: tuple[str, ...], i: int, tile_ref: TileType | None,
                   loc: str) -> tuple[str, str]:
        tv = self.value(call.args[i])
        if not isinstance(tv, TensorVal):
            raise self.fail(f"argument {i} of '{call.op_name}' is not a tensor view", call.span)
        rank = len(tv.type.shape)

        def list_arg(name: str) -> tuple[Expr, ...] | None:
            if name in params:
                a = call.args[params.index(name)]
                if isinstance(a, MakeTuple):
                    return a.elements
            return None

        region = get_op(call.op).regions.get(i) if isinstance(call.op, str) else None  # type: ignore[arg-type]
        if region is not None:   # OpSpec.regions: this argument's own offsets and box
            offsets, sizes = self._arg_box(call, region, tv.type)
        else:
            offsets = list_arg("offsets") or tuple(ConstInt(0, INDEX) for _ in range(rank))
            sizes = list_arg("shapes")
        if sizes is None:
            sizes = tuple(tile_ref.shape) if tile_ref is not None else tuple(tv.type.shape)
        sizes = (ConstInt(1, INDEX),) * max(0, rank - len(sizes)) + tuple(sizes)
        offs = [self.index_of(o) for o in pto_dims(tv.type.dtype, tuple(offsets))]
        szs = [self.index_of(s) for s in pto_dims(tv.type.dtype, tuple(sizes))]
        ptype = partition_type(sizes, tv.type.dtype)
        name = "%" + self.names.fresh("pv")
        self.emit(f"{name} = pto.partition_view {tv.view}, offsets = [{', '.join(o.name for o in offs)}], "
                  f"sizes = [{', '.join(s.name for s in szs)}] : {tensor_view_type(tv.type)} -> {ptype} {loc}")
        return name, ptype

    @staticmethod
    def _arg_box(call: Call, region: tuple[Any, Any], t: TensorType) -> tuple[tuple[Expr, ...], tuple[Expr, ...]]:
        """(offsets, sizes) of a tensor argument described by `OpSpec.regions` (see there)."""
        rank, (oi, box) = len(t.shape), region
        zeros, ones = tuple(ConstInt(0, INDEX) for _ in range(rank)), tuple(ConstInt(1, INDEX) for _ in range(rank))
        o = call.args[oi] if isinstance(oi, int) and oi < len(call.args) else None
        offsets = o.elements if isinstance(o, MakeTuple) else zeros
        if box == "one":
            return offsets, ones
        b = call.args[box] if isinstance(box, int) and box < len(call.args) else None
        if isinstance(b, MakeTuple):
            return offsets, b.elements
        shape = getattr(getattr(b, "type", None), "shape", None)
        return offsets, tuple(shape) if shape is not None else tuple(t.shape)


_STMTS = {
    SeqStmts: KernelEmitter.seq, AssignStmt: KernelEmitter.assign, EvalStmt: KernelEmitter.eval_,
    ReturnStmt: KernelEmitter.ret, YieldStmt: KernelEmitter.yield_, ForStmt: KernelEmitter.for_,
    IfStmt: KernelEmitter.if_, WhileStmt: KernelEmitter.while_, ScopeStmt: KernelEmitter.scope,
    BreakStmt: KernelEmitter.no_jump, ContinueStmt: KernelEmitter.no_jump,
}


def emit_kernel(func: Function, program: Program | None = None, pipe_of: PipeOf | None = None) -> str:
    """The `.pto` text (PTO MLIR module) of kernel `func`; with `pipe_of(spec, call)` (the pipe each
    op runs on) it also has the set_flag / wait_flag pairs between the pipes (`sync.py`).

    Raises:
        CodegenError: an op without a PTO instruction (naming the op), a tile without an address,
            break/continue or an early return left in the kernel, or a call of another function.
    """
    return KernelEmitter(func, program, pipe_of).run()

