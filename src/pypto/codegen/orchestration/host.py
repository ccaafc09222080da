"""Host orchestration C++ of one Orchestration function (SPEC §5 "Orchestration facts").

The generated file defines `aicpu_orchestration_entry(PTO2Runtime* rt, uint64_t* args, int32_t
arg_count)`. Its argument ABI (also recorded in `compiled_meta.json`): one slot per parameter of
the function, in order (a tensor's device address, or a scalar's value), then one slot per dynamic
dimension (`pl.dynamic`) of the parameter shapes, in first-appearance order.

Each call of a kernel builds a task argument list — `add_input` / `add_output` / `add_inout` from the
kernel's parameter directions, `add_scalar` for scalars — and submits it to the AIV or AIC queue
(`submit_aiv_task` / `submit_aic_task`) with the kernel's `func_id` from `kernel_config.py`; the
kernels a Group function calls (the AIC and AIV halves of a mixed kernel, joined by cross-core
pipes) are submitted together as one cluster task (`submit_mixed_task`), with a `MixedConfig` of
its split mode and pipe rings when it has any (`cluster_config`). The value of a kernel call
is its Out/InOut tensor(s). Explicit dependencies (`Call.deps`, `deps=[x, y]` in the source) are
named on the task argument list — `add_dep(x)`: the task waits for the earlier tasks that wrote
tensor `x` — and, for a call of another host function (a Group function, a nested orchestration),
bracket the call — `push_task_deps(rt, {x, y}); ...; pop_task_deps(rt);` — so every task it submits
waits for them. Runtime scopes (`pl.scope()`) become
`PTO2_SCOPE(rt) { ... }`, MANUAL ones (`pl.manual_scope()`) `PTO2_SCOPE(rt, PTO2ScopeMode::MANUAL)`.
A `pl.submit` keeps the submission's id (`TaskId t = submit_aiv_task(...)`), which a later
`add_dep(t)` names; `no_dep_args` add `/*no_dep=*/true` to the argument, `name_hint` /
`allow_early_resolve` become `set_name` / `set_allow_early_resolve`, and an SPMD launch
(`pl.spmd`, `pl.spmd_submit`) `set_block_num(N)` (+ `set_sync_start(true)`) (SPEC §13). The entry function with `auto_scope=True` (the default) runs its whole
body inside one AUTO scope, which the compiler places: hand-placed scopes in it — those of an
inline helper declared `auto_scope=False`, spliced into the entry — nest inside that AUTO scope
(Language Guide, `@pl.jit` family); with `auto_scope=False` only the hand-placed scopes are
emitted. Other host functions it calls (Opaque, nested Orchestration) become static C++
functions in the same file and run inside their caller's scopes. A value computed inside a C++
block (a scope, a loop body, an if branch) and used after it is declared before that block and
assigned inside it (`blocks.py`). Host ops (creation, views, shape queries) are spelled as their
OpSpec's `host` template says (`tensor.dim` is `x.shape(axis)`, the same accessor that passes a
kernel's dynamic dimensions) or else generically as `<namespace>_<op>(args..., attrs...)`, so
nothing here knows a specific op; an op that computes on data is an error (it belongs inside an
InCore kernel).
"""

from __future__ import annotations

from collections import Counter

from ...backend import BackendType, SoCModel, get_soc
from ...core.enums import FunctionType, ParamDirection, ScopeKind, ScopeMode
from ...core.span import Span
from ...ir.expr import Call, Expr, GlobalVar, MakeTuple, TupleGetItem, Var
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
from ...ir.types import ScalarType, TensorType, TupleType
from ...ir.visitor import IRVisitor
from ...ops import get_op
from ..cluster_config import cluster_config, mixed_config_cpp
from ..common import CodegenError, NameAllocator, dynamic_dims, is_kernel, kernel_core_type, span_or
from .blocks import escaping, opens_block, use_counts
from .cexpr import CPP_KEYWORDS, HELPERS, c_expr, c_literal, c_scalar_type, c_type

__all__ = ["emit_orchestration", "entry_dynamic_dims", "kernel_enum_name"]

_HOST_TRAITS = frozenset({"orchestration", "view", "creation"})
_ADD = {ParamDirection.In: "add_input", ParamDirection.Out: "add_output", ParamDirection.InOut: "add_inout"}


def kernel_enum_name(name: str) -> str:
    return "FUNC_" + "".join(c if c.isalnum() else "_" for c in name).upper()


def entry_dynamic_dims(func: Function) -> list[Var]:
    """Dynamic dimension Vars of `func`'s parameters, in their argument-slot order."""
    return [d for d, _, _, _ in dynamic_dims(func)]


class _Callees(IRVisitor):
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar) and e.op.name not in self.names:
            self.names.append(e.op.name)
        super().visit_Call(e)


class _FunctionEmitter:
    """C++ statements of one host function."""

    def __init__(self, func: Function, program: Program, kernel_ids: dict[str, int],
                 lines: list[str], is_entry: bool, soc: SoCModel) -> None:
        self.func, self.program, self.kernel_ids, self.soc = func, program, kernel_ids, soc
        self.lines, self.is_entry = lines, is_entry
        self.names = NameAllocator(CPP_KEYWORDS)
        self.env: dict[Var, str] = {}
        self.early: set[Var] = set()   # declared before the block that assigns them (blocks.py)
        self.uses: Counter[Var] = Counter()
        self.depth = 1
        self.tasks = 0
        self.pops = 0   # push_task_deps of the current statement, popped after it
        self.after: list[str] = []   # lines closing what the current statement opened (SPMD launch)
        self.yields: list[list[str]] = []   # target C++ names of the enclosing loop / if
        # A Group function's kernels (AIC + AIV of a split mixed kernel) are one cluster task.
        self.mixed: list[tuple[str, str, str]] | None = [] if func.func_type is FunctionType.Group else None
        self.spmd: tuple[int, bool, Var | None] | None = None   # the enclosing pl.spmd scope
        self.span = func.span

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    def fail(self, msg: str, span: Span | None = None) -> CodegenError:
        return CodegenError(f"orchestration '{self.func.name}': {msg}", span_or(span, self.span, self.func.span))

    def bind(self, v: Var) -> str:
        name = self.names.fresh(v.name)
        self.env[v] = name
        return name

    def name_of(self, e: Expr) -> str:
        if isinstance(e, Var):
            if e not in self.env:
                raise self.fail(f"'{e.name}' is used before it has a value", e.span)
            return self.env[e]
        if isinstance(e, MakeTuple):
            return "{" + ", ".join(self.expr(x) for x in e.elements) + "}"
        if isinstance(e, TupleGetItem):
            return f"std::get<{e.index}>({self.expr(e.tuple_value)})"
        if isinstance(e, Call):
            return self.call(e, None)
        raise self.fail(f"cannot generate C++ for {type(e).__name__}", e.span)

    def expr(self, e: Expr) -> str:
        return c_expr(e, self.name_of)

    # ---- statements -----------------------------------------------------------------------
    def body(self) -> None:
        """The function body. The entry with auto_scope runs inside one AUTO runtime scope, with
        any hand-placed scopes nested in it; helpers run inside their caller's scopes."""
        f = self.func
        stmts = list(f.body.stmts)
        tail = [stmts.pop()] if stmts and isinstance(stmts[-1], ReturnStmt) else []
        # the entry's return writes nothing (outputs are in place), so it uses no value
        self.uses = use_counts(*(stmts if self.is_entry else f.body.stmts))
        if self.is_entry and f.auto_scope:
            self.emit("PTO2_SCOPE(rt) {  // AUTO runtime scope (auto_scope=True); hand-placed scopes nest inside")
            self.depth += 1
            for x in stmts:
                self.stmt(x)
            self.depth -= 1
            self.emit("}")
        else:
            for x in stmts:
                self.stmt(x)
        if self.mixed:
            parts = ", ".join(f"{{{fid}, {t}}}" for fid, t, _ in self.mixed)
            cores = " + ".join(f"{c.upper()} {fid}" for fid, _, c in self.mixed)
            config, note = mixed_config_cpp(cluster_config(self.func, self.program, self.soc))
            if note:
                self.emit(f"// cross-core pipes: {note}")
            self.emit(f"submit_mixed_task(rt, {{{parts}}}{config});  // one cluster: {cores}")
        for x in tail:
            self.stmt(x)

    def stmt(self, s: Stmt) -> None:
        prev, self.span = self.span, span_or(s.span, self.span)
        try:
            if opens_block(s):
                self.declare_early(s)
            if isinstance(s, SeqStmts):
                for x in s.stmts:
                    self.stmt(x)
            elif isinstance(s, AssignStmt):
                self.assign(s)
            elif isinstance(s, EvalStmt):
                text = self.expr(s.expr)
                if not self._is_kernel_call(s.expr):  # a submission is complete; its value is unused
                    self.emit(text + ";")
            elif isinstance(s, ForStmt):
                self.for_(s)
            elif isinstance(s, WhileStmt):
                self.while_(s)
            elif isinstance(s, IfStmt):
                self.if_(s)
            elif isinstance(s, YieldStmt):
                self.yield_(s)
            elif isinstance(s, ReturnStmt):
                self.ret(s)
            elif isinstance(s, (BreakStmt, ContinueStmt)):
                self.emit("break;" if isinstance(s, BreakStmt) else "continue;")
            elif isinstance(s, ScopeStmt):
                self.scope(s)
            else:
                raise self.fail(f"{type(s).__name__} is not supported in host code", s.span)
            for _ in range(self.pops):
                self.emit("pop_task_deps(rt);")
            self.pops = 0
            for line in self.after:
                self.emit(line)
            self.after = []
        finally:
            self.span = prev

    def declare_early(self, s: Stmt) -> None:
        """Declare, before the block(s) `s` opens, the values computed inside them and used after."""
        for v in escaping(s, self.uses):
            if v in self.env:  # already declared before an enclosing block
                continue
            init = "" if isinstance(v.type, (TensorType, TupleType)) else "{}"
            self.emit(f"{c_type(v.type)} {self.bind(v)}{init};  // set in the block below, used after it")
            self.early.add(v)

    def define(self, v: Var, text: str, decl: str | None = None) -> None:
        """`decl name = text;`, or `name = text;` for a value declared before its block."""
        if v in self.early:
            self.emit(f"{self.env[v]} = {text};")
        else:
            self.emit(f"{decl or c_type(v.type)} {self.bind(v)} = {text};")

    def scope(self, s: ScopeStmt) -> None:
        if s.kind is ScopeKind.Spmd:
            self.spmd_scope(s)
            return
        if s.kind is not ScopeKind.Runtime:
            raise self.fail("an InCore scope (pl.at) is left in host code; OutlineIncoreScopes must "
                            "outline it before codegen", s.span)
        if s.mode is ScopeMode.MANUAL:
            self.emit("PTO2_SCOPE(rt, PTO2ScopeMode::MANUAL) {  // no derived dependencies: only add_dep")
        else:
            self.emit("PTO2_SCOPE(rt) {")
        self.depth += 1
        self.stmt(s.body)
        self.depth -= 1
        self.emit("}")

    def spmd_scope(self, s: ScopeStmt) -> None:
        """`pl.spmd(core_num=N)`: every task submitted in the block launches N blocks; the loop
        form's block index is passed to a kernel as the runtime's block-index scalar."""
        saved = self.spmd
        self.spmd = (s.attr("core_num"), bool(s.attr("sync_start", False)), s.block_var)
        self.emit(f"{{  // pl.spmd(core_num={s.attr('core_num')}): each task below runs on "
                  f"{s.attr('core_num')} blocks")
        self.depth += 1
        try:
            self.stmt(s.body)
        finally:
            self.spmd = saved
        self.depth -= 1
        self.emit("}")

    def assign(self, s: AssignStmt) -> None:
        v, e = s.var, s.value
        text = self.call(e, s.span) if isinstance(e, Call) else self.expr(e)
        self.define(v, text, "auto" if isinstance(v.type, TupleType) else None)

    def call(self, e: Call, span: Span | None) -> str:
        if isinstance(e.op, GlobalVar):
            callee = self.program.get_function(e.op.name)
            if callee is None:
                raise self.fail(f"call of unknown function '{e.op.name}'", e.span)
            if is_kernel(callee):
                return self.submit(callee, e, span)
            args = ", ".join(["rt"] + [self.expr(a) for a in e.args])
            if e.deps:
                deps = ", ".join(self.expr(d) for d in e.deps)
                self.emit(f"push_task_deps(rt, {{{deps}}});  // every task {callee.name} submits waits "
                          f"for the earlier writers of these")
                self.pops += 1
            if e.attr("core_num") is not None:  # pl.spmd_submit of a Spmd function
                sync = ", /*sync_start=*/true" if e.attr("sync_start") else ""
                self.emit(f"push_block_num(rt, {e.attr('core_num')}{sync});  // every task {callee.name} "
                          f"submits runs on {e.attr('core_num')} blocks")
                self.after.append("pop_block_num(rt);")
            if e.attr("submit"):  # the value ends with the id of the last task it submitted
                ret = f"{callee.name}({args})"
                ret = f"std::make_tuple({ret})" if len(callee.return_types) == 1 else ret
                return f"std::tuple_cat({ret}, std::make_tuple(last_task_id(rt)))"
            return f"{callee.name}({args})"
        spec = get_op(e.op)
        host_ok = spec.namespace != "tile" and (spec.traits & _HOST_TRAITS or isinstance(e.type, ScalarType))
        if not host_ok:
            raise self.fail(f"op '{spec.name}' computes on data and cannot run in host code (it belongs "
                            f"inside an InCore kernel)", e.span)
        args = [self.expr(a) for a in e.args]
        if spec.host:  # the op's own host form: operands and attributes (defaults included) by name
            fields = {k: c_literal(v) for k, v in {**spec.attrs, **dict(e.kwargs)}.items()}
            fields.update(zip(spec.params, args))
            return spec.host.format(**fields)
        args += [c_literal(v) for _, v in spec.shown_kwargs(e.kwargs)]
        return f"{spec.namespace}_{spec.short_name}({', '.join(args)})"

    def _is_kernel_call(self, e: Expr) -> bool:
        if not (isinstance(e, Call) and isinstance(e.op, GlobalVar)):
            return False
        f = self.program.get_function(e.op.name)
        return f is not None and is_kernel(f)

    def submit(self, kernel: Function, e: Call, span: Span | None) -> str:
        """Emit the task argument list and submission; returns the call's value (its outputs)."""
        t = self.names.fresh(f"task{self.tasks}")
        self.tasks += 1
        where = span_or(e.span, span, self.span)
        self.emit(f"TaskArgs {t};  // {kernel.name}(...)" + (f" at {where}" if where.is_known() else ""))
        outs: list[str] = []
        no_dep = set(e.attr("no_dep_args", ()))
        block_var = self.spmd[2] if self.spmd is not None else None
        for i, (a, p, d) in enumerate(zip(e.args, kernel.params, kernel.param_directions)):
            if block_var is not None and a is block_var:
                self.emit(f"{t}.add_block_idx_scalar();  // the block index of pl.spmd")
                continue
            val = self.expr(a)
            if isinstance(p.type, TensorType):
                flag = ", /*no_dep=*/true" if i in no_dep else ""  # excluded from dependency tracking
                self.emit(f"{t}.{_ADD[d]}({val}{flag});")
                if d is not ParamDirection.In:
                    outs.append(val)
            else:
                self.emit(f"{t}.add_scalar({val});")
        for _, i, kind, axis in dynamic_dims(kernel):  # the kernel's dynamic dims follow its params
            self.emit(f"{t}.add_scalar({self.expr(e.args[i])}.{kind}({axis}));")
        for dep in e.deps:  # explicit: wait for the named task / the earlier writers of this tensor
            self.emit(f"{t}.add_dep({self.expr(dep)});")
        self.task_options(e, t)
        core = kernel_core_type(kernel)
        tid = ""
        if self.mixed is not None and self.depth == 1:
            self.mixed.append((kernel_enum_name(kernel.name), t, core))
        elif e.attr("submit"):  # pl.submit: the value ends with the task's id
            tid = self.names.fresh(f"{t}_id")
            self.emit(f"TaskId {tid} = submit_{core}_task(rt, {kernel_enum_name(kernel.name)}, {t});")
            outs.append(tid)
        else:
            self.emit(f"submit_{core}_task(rt, {kernel_enum_name(kernel.name)}, {t});")
        if not outs:
            return "std::make_tuple()"
        return outs[0] if len(outs) == 1 and not tid else "std::make_tuple(" + ", ".join(outs) + ")"

    def task_options(self, e: Call, t: str) -> None:
        """Task options of `pl.submit` / `pl.at` (name_hint, allow_early_resolve) and the SPMD
        launch (`pl.spmd_submit(core_num=)` or an enclosing `pl.spmd` scope), SPEC §13."""
        if e.attr("name_hint") is not None:
            self.emit(f"{t}.set_name({c_literal(e.attr('name_hint'))});")
        if e.attr("allow_early_resolve") is not None:
            self.emit(f"{t}.set_allow_early_resolve({c_literal(e.attr('allow_early_resolve'))});")
        blocks, sync = e.attr("core_num"), bool(e.attr("sync_start", False))
        if blocks is None and self.spmd is not None:
            blocks, sync = self.spmd[0], self.spmd[1]
        if blocks is not None:
            self.emit(f"{t}.set_block_num({blocks});")
            if sync:
                self.emit(f"{t}.set_sync_start(true);")

    def _carry(self, iter_args: tuple, return_vars: tuple) -> list[str]:
        names = []
        for ia in iter_args:
            self.define(ia, self.expr(ia.init))
            names.append(self.env[ia])
        return names

    def _finish_carry(self, names: list[str], return_vars: tuple) -> None:
        for n, rv in zip(names, return_vars):
            self.define(rv, n)

    def for_(self, s: ForStmt) -> None:
        names = self._carry(s.iter_args, s.return_vars)
        start, stop, step = self.expr(s.start), self.expr(s.stop), self.expr(s.step)
        early = s.loop_var in self.early
        i = self.env[s.loop_var] if early else self.bind(s.loop_var)
        ty = "" if early else c_scalar_type(s.loop_var.type.dtype) + " "  # type: ignore[attr-defined]
        positive = getattr(s.step, "value", None)
        cond = (f"{i} < {stop}" if isinstance(positive, int) and positive > 0 else
                f"({step} > 0 ? {i} < {stop} : {i} > {stop})")
        kind = "" if s.kind.name == "Sequential" else f"  // pl.{s.kind.value} loop"
        self.emit(f"for ({ty}{i} = {start}; {cond}; {i} += {step}) {{{kind}")
        self._region(s.body, names)
        self.emit("}")
        self._finish_carry(names, s.return_vars)

    def while_(self, s: WhileStmt) -> None:
        names = self._carry(s.iter_args, s.return_vars)
        self.emit(f"while ({self.expr(s.cond)}) {{")
        self._region(s.body, names)
        self.emit("}")
        self._finish_carry(names, s.return_vars)

    def if_(self, s: IfStmt) -> None:
        names = []
        for rv in s.return_vars:
            if rv not in self.early:
                self.emit(f"{c_type(rv.type)} {self.bind(rv)}{'' if isinstance(rv.type, TensorType) else '{}'};")
            names.append(self.env[rv])
        self.emit(f"if ({self.expr(s.cond)}) {{")
        self._region(s.then_body, names)
        if s.else_body is not None:
            self.emit("} else {")
            self._region(s.else_body, names)
        self.emit("}")

    def _region(self, body: SeqStmts, targets: list[str]) -> None:
        self.yields.append(targets)
        self.depth += 1
        try:
            self.stmt(body)
        finally:
            self.depth -= 1
            self.yields.pop()

    def yield_(self, s: YieldStmt) -> None:
        if not self.yields:
            raise self.fail("yield outside a loop or if", s.span)
        targets = self.yields[-1]
        vals = [self.expr(v) for v in s.values]
        if len(targets) > 1:  # parallel assignment: read every value before writing any target
            tmps = [self.names.fresh("next") for _ in vals]
            for t, v in zip(tmps, vals):
                self.emit(f"auto {t} = {v};")
            vals = tmps
        for t, v in zip(targets, vals):
            if t != v:
                self.emit(f"{t} = {v};")

    def ret(self, s: ReturnStmt) -> None:
        if self.is_entry:
            self.emit("// outputs are written in place: the entry returns nothing")
        elif not s.values:
            self.emit("return;")
        elif len(s.values) == 1:
            self.emit(f"return {self.expr(s.values[0])};")
        else:
            self.emit("return std::make_tuple(" + ", ".join(self.expr(v) for v in s.values) + ");")


def _ret_type(f: Function) -> str:
    if not f.return_types:
        return "void"
    if len(f.return_types) == 1:
        return c_type(f.return_types[0])
    return "std::tuple<" + ", ".join(c_type(t) for t in f.return_types) + ">"


def _helper(f: Function, program: Program, kernel_ids: dict[str, int], soc: SoCModel) -> list[str]:
    lines: list[str] = []
    em = _FunctionEmitter(f, program, kernel_ids, lines, is_entry=False, soc=soc)
    params = ["PTO2Runtime* rt"] + [f"{c_type(p.type)} {em.bind(p)}" for p in f.params]
    head = f"static {_ret_type(f)} {f.name}({', '.join(params)})"
    dims = [f"  const int64_t {em.bind(d)} = {em.env[f.params[i]]}.{kind}({axis});  // dynamic dim"
            for d, i, kind, axis in dynamic_dims(f)]
    em.body()
    return [f"// {f.func_type.name} function '{f.name}'" + (f" ({f.span})" if f.span.is_known() else ""),
            head + " {", *dims, *lines, "}", ""]


def _reachable_helpers(func: Function, program: Program) -> list[Function]:
    order: list[Function] = []

    def visit(f: Function) -> None:
        v = _Callees()
        v.visit_function(f)
        for n in v.names:
            g = program.get_function(n)
            if g is not None and not is_kernel(g) and g not in order and g is not func:
                visit(g)
                if g not in order:
                    order.append(g)
    visit(func)
    return order


def _kernel_file(kernel: Function) -> str:
    """The file a kernel id stands for: its `.pto`, or a hand-written kernel's own C++ (SPEC §10)."""
    if kernel.external is not None:
        return f"external C++: {kernel.external.source}"
    return f"kernels/{kernel_core_type(kernel)}/{kernel.name}.pto"


def emit_orchestration(func: Function, program: Program, kernel_ids: dict[str, int],
                       backend: BackendType = BackendType.Ascend910B) -> str:
    """The C++ text of `orchestration/<func.name>.cpp` for host function `func` (an Orchestration
    function, or an Opaque entry), see the module docstring.

    `kernel_ids` maps every kernel name to its `func_id` (the kernel table of `kernel_config.py`);
    `backend` decides how the cross-core pipes of Group functions are routed.

    Raises:
        CodegenError: a data-computing op or an InCore scope left in host code, or a call of an
            unknown function.
    """
    if is_kernel(func):
        raise CodegenError(f"'{func.name}' is a {func.func_type.name} kernel, not a host function", func.span)
    out = [f"// PyPTO orchestration '{func.name}' of program '{program.name}'"
           + (f" ({func.span})" if func.span.is_known() else ""),
           "// Host control code: builds the task graph of one call on the PTO2 runtime.",
           "#include <cmath>", "#include <cstdint>", "#include <algorithm>", "#include <tuple>", "",
           '#include "pto_orchestration_api.h"', "", "namespace {", "", "enum KernelId : int32_t {"]
    out += [f"  {kernel_enum_name(n)} = {i},  // {_kernel_file(program.get_function(n))}"  # type: ignore[arg-type]
            for n, i in kernel_ids.items()]
    out += ["};", "", HELPERS, ""]
    soc = get_soc(backend)
    helpers = _reachable_helpers(func, program)
    for h in helpers:
        out.append(f"static {_ret_type(h)} {h.name}(PTO2Runtime* rt"
                   + "".join(f", {c_type(p.type)}" for p in h.params) + ");")
    if helpers:
        out.append("")
    for h in helpers:
        out += _helper(h, program, kernel_ids, soc)
    out += ["}  // namespace", ""]
    lines: list[str] = []
    em = _FunctionEmitter(func, program, kernel_ids, lines, is_entry=True, soc=soc)
    nparams = len(func.params)
    names = [em.bind(p) for p in func.params]
    dims_lines = [f"  const int64_t {em.bind(d)} = static_cast<int64_t>(args[{nparams + j}]);  // dynamic dim"
                  for j, d in enumerate(entry_dynamic_dims(func))]
    unpack: list[str] = []
    for i, (p, d, name) in enumerate(zip(func.params, func.param_directions, names)):
        t = p.type
        if isinstance(t, TensorType):
            dims = ", ".join(em.expr(x) for x in t.shape)
            unpack.append(f"  Tensor {name} = make_external_tensor(args[{i}], {{{dims}}}, "
                          f"DataType::{t.dtype.name});  // {d.name}")
        elif isinstance(t, ScalarType):
            ct = c_scalar_type(t.dtype)
            unpack.append(f"  {ct} {name} = scalar_arg<{ct}>(args[{i}]);  // {d.name}")
        else:
            raise CodegenError(f"parameter '{p.name}' of '{func.name}' is a {type(t).__name__}; orchestration "
                               f"parameters are tensors or scalars", p.span)
    em.body()
    out += ['extern "C" void aicpu_orchestration_entry(PTO2Runtime* rt, uint64_t* args, int32_t arg_count) {',
            f"  if (arg_count != {nparams + len(dims_lines)}) return;  // ABI: see compiled_meta.json",
            *dims_lines, *unpack, *lines, "}", ""]
    return "\n".join(out)
