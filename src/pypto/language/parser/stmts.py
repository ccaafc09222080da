"""Statement handlers of the parser: one method per Python AST statement kind (STYLE rule 8).

Non-SSA source is accepted: re-assigning a name re-binds the same Var when the type is unchanged,
and loops/ifs may rebind outer names without `init_values`/`pl.yield_`; ConvertToSSA turns that
into SSA form. `strict_ssa=True` rejects any re-assignment with SSAViolationError.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, replace
from typing import Any

from ...core.dtype import BOOL, INDEX
from ...core.enums import ForKind
from ...core.errors import (
    ParserError,
    ParserSyntaxError,
    ParserTypeError,
    SSAViolationError,
)
from ...core.span import Span
from ...ir.expr import Call, ConstBool, ConstInt, Expr, IterArg, MakeTuple, TupleGetItem, Var
from ...ir.stmt import (
    AssignStmt,
    BreakStmt,
    ContinueStmt,
    EvalStmt,
    ForStmt,
    IfStmt,
    ReturnStmt,
    SeqStmts,
    Stmt,
    WhileStmt,
    YieldStmt,
)
from ...ir.structural import structural_equal
from ...ir.types import ArrayType, ScalarType, TensorType, TileType, TupleType, Type, WindowBufferType
from .. import dsl
from .conditions import const_condition
from .exprs import make_op_call
from .loop_names import branch_type_error, note_loop_rebinds
from .tasks import parse_with, spmd_loop

__all__ = ["StmtParser", "PendingYield"]

_LOOP_KINDS = {"range": ForKind.Sequential, "parallel": ForKind.Parallel, "unroll": ForKind.Unroll,
               "pipeline": ForKind.Pipeline}


@dataclass
class PendingYield:
    """Targets of the `pl.yield_` that ended the block just parsed."""

    names: list[str]
    types: list[Type | None]
    values: tuple[Expr, ...]
    span: Span


def _shape_eq(a: tuple[Expr, ...], b: tuple[Expr, ...]) -> bool:
    from ...ops.typing_rules import dims_equal

    return len(a) == len(b) and all(dims_equal(x, y) for x, y in zip(a, b))


def type_compatible(declared: Type, inferred: Type) -> bool:
    """Can a value of `inferred` type be bound to a variable annotated `declared`?

    Shapes and dtypes must agree (and tile memory spaces, where both state one); see `refine` for
    the resulting type.
    """
    if isinstance(declared, TensorType) and isinstance(inferred, TensorType):
        return declared.dtype is inferred.dtype and _shape_eq(declared.shape, inferred.shape)
    if isinstance(declared, TileType) and isinstance(inferred, TileType):
        space_ok = (declared.memory_space is None or inferred.memory_space is None
                    or declared.memory_space is inferred.memory_space)
        return declared.dtype is inferred.dtype and _shape_eq(declared.shape, inferred.shape) and space_ok
    if isinstance(declared, ScalarType) and isinstance(inferred, ScalarType):
        return True
    if isinstance(declared, TupleType) and isinstance(inferred, TupleType):
        return len(declared.types) == len(inferred.types) and all(
            type_compatible(a, b) for a, b in zip(declared.types, inferred.types))
    if isinstance(declared, ArrayType) and isinstance(inferred, ArrayType):
        return declared.extent == inferred.extent and declared.dtype is inferred.dtype
    if isinstance(declared, WindowBufferType):  # pld.WindowBuffer (SPEC §8)
        return isinstance(inferred, WindowBufferType)
    return False


def refine(declared: Type, inferred: Type) -> Type:
    """The type a variable annotated `declared` gets for a value of (compatible) type `inferred`:
    the annotation, with what it leaves out — a tile's memory space, MemRef and view (valid shape,
    layout, pad), a tensor's view — taken from the value. An annotation that states them wins
    (printed IR carries the refinements passes made)."""
    if isinstance(declared, TileType) and isinstance(inferred, TileType):
        return replace(declared,
                       memory_space=declared.memory_space if declared.memory_space is not None else inferred.memory_space,
                       memref=declared.memref if declared.memref is not None else inferred.memref,
                       view=declared.view if declared.view is not None else inferred.view)
    if isinstance(declared, TensorType) and isinstance(inferred, TensorType):
        return replace(declared, view=declared.view if declared.view is not None else inferred.view)
    if isinstance(declared, TupleType) and isinstance(inferred, TupleType):
        return TupleType(tuple(refine(d, i) for d, i in zip(declared.types, inferred.types)))
    return declared


def type_text(t: Type | None) -> str:
    from ...ir.printer import python_print

    return "unknown" if t is None else python_print(t)


def _before_yield(body: SeqStmts, extra: list[Stmt]) -> SeqStmts:
    """`body` with `extra` statements appended before its final pl.yield_ (if any)."""
    stmts = list(body.stmts)
    tail = [stmts.pop()] if stmts and isinstance(stmts[-1], YieldStmt) else []
    return SeqStmts(tuple(stmts + extra + tail), span=body.span)


class StmtParser:
    """Mixin: statement parsing into `self.block` (a list of IR statements)."""

    # ---- blocks --------------------------------------------------------------------------
    def parse_block(self, body: list[ast.stmt]) -> tuple[SeqStmts, PendingYield | None]:
        saved_block, saved_yield = self.block, self.pending_yield
        self.block, self.pending_yield = [], None
        try:
            for st in body:
                if self.pending_yield is not None:
                    raise ParserSyntaxError("pl.yield_ must be the last statement of its block",
                                            self.span(st))
                self.parse_stmt(st)
            seq = SeqStmts(tuple(self.block), span=self.span(body[0]) if body else Span.unknown())
            return seq, self.pending_yield
        finally:
            self.block, self.pending_yield = saved_block, saved_yield

    def parse_stmt(self, node: ast.stmt) -> None:
        handler = getattr(self, f"stmt_{type(node).__name__}", None)
        if handler is None:
            raise ParserSyntaxError(f"unsupported statement '{type(node).__name__}' in a kernel body",
                                    self.span(node))
        handler(node)

    def emit(self, s: Stmt) -> None:
        self.block.append(s)

    # ---- bindings ------------------------------------------------------------------------
    def bind(self, name: str, value: Expr, declared: Type | None, node: ast.AST) -> Var:
        span = self.span(node)
        if declared is not None and not type_compatible(declared, value.type):
            raise ParserTypeError(f"'{name}' is annotated {type_text(declared)} but the value has type "
                                  f"{type_text(value.type)}", span)
        ty = refine(declared, value.type) if declared is not None else value.type
        var = self.new_binding(name, ty, span)
        self.emit(AssignStmt(var, value, span=span))
        if isinstance(value, Call) and isinstance(value.op, str) and value.op.startswith("tensor."):
            self.created_tensors[var] = value.op  # for the hint of ExprParser.created_tensor_hint
        return var

    def new_binding(self, name: str, ty: Type, span: Span) -> Var:
        """The Var a (re)assignment of `name` binds: reused in non-SSA code when the type matches."""
        old = self.env.get(name)
        stale = self.loop_local.pop(name, None) if old is None else None
        if isinstance(stale, Var) and not isinstance(stale, IterArg) and not self.strict_ssa \
                and structural_equal(stale.type, ty):
            # assigning again a name whose value ended with a loop: the same (pre-SSA) variable,
            # as printed IR of unrolled loops re-binds it; ConvertToSSA renames the definitions
            self.env[name] = stale
            return stale
        if old is None and name in self.branch_reuse:
            old = self.branch_reuse[name]  # bound by the other branch of the enclosing if
            if isinstance(old, Var) and structural_equal(old.type, ty) and not self.strict_ssa:
                self.env[name] = old
                return old
            old = None
        if old is not None and self.strict_ssa:
            raise SSAViolationError(f"SSA violation: variable '{name}' is assigned more than once "
                                    f"(strict_ssa=True)", span)
        if isinstance(old, Var) and not isinstance(old, IterArg) and old not in self.loop_vars \
                and structural_equal(old.type, ty):
            return old
        var = Var(name, ty, span=span)
        self.env[name] = var
        return var

    def annotation_type(self, node: ast.expr) -> Type:
        return self.eval_type(node)

    # ---- assignments ---------------------------------------------------------------------
    def stmt_Assign(self, node: ast.Assign) -> None:
        if len(node.targets) != 1:
            raise ParserSyntaxError("chained assignment a = b = ... is not supported", self.span(node))
        self.assign(node.targets[0], node.value, None, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise ParserSyntaxError("a declaration needs a value", self.span(node))
        self.assign(node.target, node.value, self.annotation_type(node.annotation), node)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        """`x op= v` is `x = x op v`; `t[region] op= v` is `t[region] = t[region] op v` (the
        subscript write sugar, Language Guide "Operations")."""
        target = node.target
        if isinstance(target, ast.Name):
            load: ast.expr = ast.Name(target.id, ast.Load())
        elif isinstance(target, ast.Subscript):
            load = ast.Subscript(target.value, target.slice, ast.Load())
        else:
            raise ParserSyntaxError("augmented assignment needs a plain name or a subscript (x += v, "
                                    "t[i:i + 16, :] += v)", self.span(node))
        load = ast.copy_location(load, target)
        self.assign(target, ast.copy_location(ast.BinOp(load, node.op, node.value), node), None, node)

    def assign(self, target: ast.expr, value_node: ast.expr, declared: Type | None, node: ast.stmt) -> None:
        if self.is_builtin_call(value_node, "yield_"):
            self.yield_stmt(value_node, target, declared, node)
            return
        if isinstance(target, ast.Subscript):
            self.assign_subscript(target, value_node, node)
            return
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value_node, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value_node.elts):
            # `a, b = b, a + b`: every right-hand value is computed before any name is rebound
            names = self.target_names(target)
            values = [self.parse_expr(v) for v in value_node.elts]
            temps = []
            for n, v in zip(names, values):  # snapshot the values before rebinding any name
                tmp = Var(f"{n}_next", v.type, span=self.span(node))
                self.emit(AssignStmt(tmp, v, span=self.span(node)))
                temps.append(tmp)
            for n, tmp in zip(names, temps):
                self.bind(n, tmp, None, node)
            return
        value = self.parse_expr(value_node)
        if isinstance(target, ast.Name):
            self.bind(target.id, value, declared, node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            names = self.target_names(target)
            vt = value.type
            if not isinstance(vt, TupleType) or len(vt.types) != len(names):
                raise ParserTypeError(f"cannot unpack a value of type {type_text(vt)} into {len(names)} "
                                      f"names", self.span(node))
            tup = value if isinstance(value, Var) else self.bind("_".join(names) + "_tuple", value, None, node)
            for i, n in enumerate(names):
                self.bind(n, TupleGetItem(tup, i, span=self.span(node)), None, node)
        else:
            raise ParserSyntaxError("unsupported assignment target", self.span(target))

    def target_names(self, target: ast.expr) -> list[str]:
        elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
        names = []
        for e in elts:
            if not isinstance(e, ast.Name):
                raise ParserSyntaxError("expected a plain name", self.span(e))
            names.append(e.id)
        return names

    def assign_subscript(self, target: ast.Subscript, value_node: ast.expr, node: ast.stmt) -> None:
        """`dst[<slices>] = src` → `dst = pl.assemble(dst, src, offsets)` (Language Guide)."""
        if self.strict_ssa:
            raise SSAViolationError("subscript assignment rebinds its target and is not allowed under "
                                    "strict_ssa=True; use pl.assemble(target, src, offsets)", self.span(node))
        if not isinstance(target.value, ast.Name):
            raise ParserSyntaxError("subscript assignment needs a plain tensor name", self.span(target))
        base = self.parse_expr(target.value)
        if not isinstance(base.type, TensorType):
            raise ParserTypeError("subscript assignment needs a Tensor target", self.span(target))
        if _whole_region(target.slice, len(base.type.shape)):
            # `y[:] = v` writes all of y: no slice is taken, so it works on dynamic dimensions too
            offsets: Any = tuple(ConstInt(0, INDEX) for _ in base.type.shape)
            sizes: Any = tuple(base.type.shape)
        else:
            offsets, sizes, _ = self.subscript_region(base, target.slice)
        src = self.parse_expr(value_node)
        st = src.type
        if isinstance(st, (TensorType, TileType)) and not _shape_eq(tuple(st.shape), sizes):
            from ...ops.typing_rules import shape_str

            raise ParserTypeError(f"assigned value has shape {shape_str(tuple(st.shape))} but the target "
                                  f"region has shape {shape_str(sizes)}", self.span(node))
        self.check_op_placement("tensor.assemble", node)
        self.check_writable(base, f"'{target.value.id}[...] = ...' writes it", node)
        call = make_op_call("tensor.assemble", [base, src, MakeTuple(offsets)], {}, self.span(node))
        self.bind(target.value.id, call, None, node)

    # ---- yield ---------------------------------------------------------------------------
    def is_builtin_call(self, node: ast.AST, name: str) -> bool:
        if not isinstance(node, ast.Call):
            return False
        try:
            f = self.parse_value(node.func)
        except ParserError:
            return False
        return isinstance(f, dsl.DSLBuiltin) and f.name == name

    def yield_stmt(self, call: ast.Call, target: ast.expr | None, declared: Type | None,
                   node: ast.stmt) -> None:
        if self.construct_depth == 0:
            raise ParserSyntaxError("pl.yield_ is only allowed inside a loop or if body", self.span(node))
        values = tuple(self.parse_expr(a) for a in call.args)
        names = self.target_names(target) if target is not None else []
        if names and len(names) != len(values):
            raise ParserTypeError(f"pl.yield_ gives {len(values)} values but {len(names)} names receive "
                                  f"them", self.span(node))
        types: list[Type | None] = [None] * len(names)
        if declared is not None and len(names) == 1:
            types = [declared]
        self.emit(YieldStmt(values, span=self.span(node)))
        self.pending_yield = PendingYield(names, types, values, self.span(node))

    def make_return_vars(self, py: PendingYield | None, node: ast.AST,
                         carried: list[IterArg] | None = None) -> tuple[Var, ...]:
        """Result vars of a loop (typed like its iter args) or an if (typed like the then-values),
        unless annotated. This is the buffer-sharing rule InitMemRef follows, so printed IR keeps
        its MemRefs without annotating every result."""
        if py is None:
            return ()
        out = []
        for i, n in enumerate(py.names):
            t = py.types[i] or (carried[i].type if carried else py.values[i].type)
            out.append(Var(n, t, span=py.span))
        return tuple(out)

    def bind_results(self, rvs: tuple[Var, ...]) -> None:
        for v in rvs:
            if v.name in self.env and self.strict_ssa:
                raise SSAViolationError(f"SSA violation: variable '{v.name}' is assigned more than once "
                                        f"(strict_ssa=True)", v.span)
            self.env[v.name] = v

    # ---- loops ---------------------------------------------------------------------------
    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise ParserSyntaxError("for ... else is not supported", self.span(node))
        it = node.iter
        helper = self.parse_value(it.func) if isinstance(it, ast.Call) else None
        if not isinstance(helper, dsl.DSLBuiltin) or helper.name not in (*_LOOP_KINDS, "while_", "spmd"):
            raise ParserSyntaxError("a kernel loop must iterate over pl.range(...), pl.parallel(...), "
                                    "pl.unroll(...), pl.pipeline(...), pl.while_(...) or pl.spmd(...)",
                                    self.span(it))
        if helper.name == "spmd":
            spmd_loop(self, node, it)
        elif helper.name == "while_":
            self.while_loop(node, it)
        else:
            self.for_loop(node, it, _LOOP_KINDS[helper.name])

    def loop_inits(self, call: ast.Call, extra: tuple[str, ...] = ()) -> list[Expr] | None:
        """The `init_values=(...)` of a loop call; keywords in `extra` are the caller's."""
        for k in call.keywords:
            if k.arg in extra:
                continue
            if k.arg == "init_values":
                if not isinstance(k.value, (ast.Tuple, ast.List)):
                    raise ParserSyntaxError("init_values must be a tuple, e.g. init_values=(acc,)",
                                            self.span(k.value))
                return [self.parse_expr(e) for e in k.value.elts]
            known = ("init_values", *extra)
            near = difflib.get_close_matches(k.arg or "", known, n=1)
            hint = f": did you mean '{near[0]}'?" if near else f" (this loop takes {', '.join(known)})"
            raise ParserSyntaxError(f"unexpected keyword '{k.arg}'{hint}", self.span(k.value))
        return None

    def make_iter_args(self, names: list[str], inits: list[Expr], node: ast.AST) -> list[IterArg]:
        if len(names) != len(inits):
            raise ParserTypeError(f"{len(names)} loop-carried names but {len(inits)} init_values",
                                  self.span(node))
        out = [IterArg(n, v.type, init=v, span=self.span(node)) for n, v in zip(names, inits)]
        for ia, v in zip(out, inits):
            if isinstance(v, Var) and v in self.param_root:
                self.param_root[ia] = self.param_root[v]
        return out

    def for_loop(self, node: ast.For, call: ast.Call, kind: ForKind) -> None:
        bounds = [self.parse_expr(a) for a in call.args]
        if not 1 <= len(bounds) <= 3:
            raise ParserTypeError("pl.range takes 1 to 3 positional arguments (stop | start, stop[, step])",
                                  self.span(call))
        for b, a in zip(bounds, call.args):
            if not (isinstance(b.type, ScalarType) and b.type.dtype.is_int()):
                raise ParserTypeError("loop bounds must be integer scalars", self.span(a))
        from ...ir.expr import ConstInt

        start = bounds[0] if len(bounds) > 1 else ConstInt(0, INDEX)
        stop = bounds[1] if len(bounds) > 1 else bounds[0]
        step = bounds[2] if len(bounds) > 2 else ConstInt(1, INDEX)
        if isinstance(step, ConstInt) and step.value == 0:
            raise ParserTypeError("loop step must not be zero", self.span(call))
        stage = self.pipeline_stage(call) if kind is ForKind.Pipeline else 1
        inits = self.loop_inits(call, ("stage",) if kind is ForKind.Pipeline else ())
        tgt = node.target
        if inits is None:
            if not isinstance(tgt, ast.Name):
                raise ParserSyntaxError("loop target must be a name (use init_values=(...) to carry values)",
                                        self.span(tgt))
            lv_name, ia_names = tgt.id, []
        else:
            if not (isinstance(tgt, ast.Tuple) and len(tgt.elts) == 2 and isinstance(tgt.elts[0], ast.Name)
                    and isinstance(tgt.elts[1], (ast.Tuple, ast.List))):
                raise ParserSyntaxError("with init_values the loop target is 'i, (acc, ...)'", self.span(tgt))
            lv_name, ia_names = tgt.elts[0].id, self.target_names(tgt.elts[1])
        loop_var = Var(lv_name, ScalarType(INDEX), span=self.span(tgt))
        iter_args = self.make_iter_args(ia_names, inits or [], node)
        body, py = self.loop_body(node, [(lv_name, loop_var)] + [(ia.name, ia) for ia in iter_args], kind)
        rvs = self.check_loop_yield(py, iter_args, node)
        self.emit(ForStmt(loop_var, start, stop, step, tuple(iter_args), body, rvs, kind, stage,
                          span=self.span(node)))
        self.bind_results(rvs)

    def pipeline_stage(self, call: ast.Call) -> int:
        """`stage=N` of `pl.pipeline(...)`: a constant integer >= 1 (default 2, double buffering)."""
        k = next((k for k in call.keywords if k.arg == "stage"), None)
        if k is None:
            return 2
        from ...ir.expr import ConstInt

        literal = isinstance(k.value, ast.Constant) and not isinstance(k.value.value, int)
        v = None if literal else self.parse_expr(k.value)   # (a string or float literal: this message)
        if not isinstance(v, ConstInt) or isinstance(v.value, bool) or v.value < 1:
            raise ParserTypeError("pl.pipeline's stage must be a constant integer >= 1 (the number of "
                                  "buffer copies that rotate across iterations, e.g. stage=2)", self.span(k.value))
        return v.value

    def loop_body(self, node: ast.For, bindings: list[tuple[str, Var]], kind: ForKind
                  ) -> tuple[SeqStmts, PendingYield | None]:
        saved = {n: self.env.get(n) for n, _ in bindings}
        outer = dict(self.env)
        for n, v in bindings:
            self.env[n] = v
            self.loop_vars.add(v)
        self.loop_stack.append(kind)
        self.construct_depth += 1
        try:
            result = self.parse_block(node.body)
        finally:
            self.construct_depth -= 1
            self.loop_stack.pop()
            for n, v in bindings:
                self.loop_vars.discard(v)
                if self.env.get(n) is v:
                    if saved[n] is None:
                        del self.env[n]
                    else:
                        self.env[n] = saved[n]
            # A name (re)bound to a new variable inside the body has no single value after the
            # loop (it depends on the trip count): it stays local to the loop.
            for n in [n for n, v in self.env.items() if outer.get(n) is not v and n not in saved]:
                self.loop_local[n] = self.env.pop(n)
        note_loop_rebinds(self, outer, saved, result[0])
        return result

    def check_loop_yield(self, py: PendingYield | None, iter_args: list[IterArg], node: ast.AST
                         ) -> tuple[Var, ...]:
        if not iter_args:
            if py is not None and py.values:
                raise ParserSyntaxError("pl.yield_ in a loop without init_values", py.span)
            return ()
        if py is None:
            raise ParserSyntaxError("a loop with init_values must end with pl.yield_(...) of the next "
                                    "values", self.span(node))
        if len(py.values) != len(iter_args):
            raise ParserTypeError(f"pl.yield_ gives {len(py.values)} values for {len(iter_args)} "
                                  f"loop-carried values", py.span)
        for ia, v in zip(iter_args, py.values):
            if not type_compatible(ia.type, v.type):
                raise ParserTypeError(f"loop-carried '{ia.name}' has type {type_text(ia.type)} but "
                                      f"pl.yield_ gives {type_text(v.type)}", py.span)
        if not py.names:
            raise ParserSyntaxError("assign the results of the loop's pl.yield_ to names, e.g. "
                                    "out = pl.yield_(acc)", py.span)
        return self.make_return_vars(py, node, iter_args)

    def while_loop(self, node: ast.For, call: ast.Call) -> None:
        inits = self.loop_inits(call)
        if inits is None:
            raise ParserSyntaxError("pl.while_ requires init_values=(...)", self.span(call))
        names = self.target_names(node.target)
        iter_args = self.make_iter_args(names, inits, node)
        if not node.body or not self.is_builtin_call(getattr(node.body[0], "value", None), "cond"):
            later = next((st for st in node.body[1:]
                          if self.is_builtin_call(getattr(st, "value", None), "cond")), None)
            where = (f"; move the pl.cond at line {self.span(later).begin_line} to the top of the loop body"
                     if later is not None else "")
            raise ParserSyntaxError("the first statement of a pl.while_ loop must be pl.cond(<condition>)"
                                    + where, self.span(node.body[0] if node.body else node))
        cond_call = node.body[0].value  # type: ignore[attr-defined]
        if len(cond_call.args) != 1 or cond_call.keywords:
            raise ParserSyntaxError("pl.cond takes exactly one argument, the loop condition: "
                                    "pl.cond(x < 10)", self.span(cond_call))
        saved = {n: self.env.get(n) for n in names}
        for ia in iter_args:
            self.env[ia.name] = ia
        try:
            cond = self.parse_expr(cond_call.args[0])
        finally:
            for n in names:
                if saved[n] is None:
                    self.env.pop(n, None)
                else:
                    self.env[n] = saved[n]
        self.check_bool(cond, cond_call, "while condition")
        fake = ast.For(target=node.target, iter=call, body=node.body[1:] or [ast.Pass()], orelse=[])
        ast.copy_location(fake, node)
        body, py = self.loop_body(fake, [(ia.name, ia) for ia in iter_args], ForKind.Sequential)
        rvs = self.check_loop_yield(py, iter_args, node)
        self.emit(WhileStmt(cond, tuple(iter_args), body, rvs, span=self.span(node)))
        self.bind_results(rvs)

    def stmt_While(self, node: ast.While) -> None:
        """A plain Python `while cond:` loop (SPEC §13): a WhileStmt with no loop-carried values in
        the parsed (non-SSA) IR; ConvertToSSA carries every variable the body re-assigns and the
        condition or a later iteration reads, exactly as for `pl.while_(init_values=...)`."""
        if node.orelse:
            raise ParserSyntaxError("while ... else is not supported", self.span(node))
        cond = self.parse_expr(node.test)
        self.check_bool(cond, node.test, "while condition")
        fake = ast.For(target=ast.Tuple(elts=[], ctx=ast.Store()), iter=node.test, body=node.body,
                       orelse=[])
        ast.copy_location(fake, node)
        body, py = self.loop_body(fake, [], ForKind.Sequential)
        self.check_loop_yield(py, [], node)
        self.emit(WhileStmt(cond, (), body, (), span=self.span(node)))

    def stmt_Break(self, node: ast.Break) -> None:
        self.loop_control(node, BreakStmt, "break")

    def stmt_Continue(self, node: ast.Continue) -> None:
        self.loop_control(node, ContinueStmt, "continue")

    def loop_control(self, node: ast.stmt, cls: type, word: str) -> None:
        if not self.loop_stack:
            raise ParserSyntaxError(f"'{word}' outside a loop", self.span(node))
        if self.loop_stack[-1] is ForKind.Parallel:
            raise ParserSyntaxError(f"'{word}' is not allowed inside a parallel loop (pl.parallel)",
                                    self.span(node))
        self.emit(cls(span=self.span(node)))

    # ---- if ------------------------------------------------------------------------------
    def check_bool(self, cond: Expr, node: ast.AST, what: str) -> None:
        if not (isinstance(cond.type, ScalarType) and cond.type.dtype is BOOL):
            raise ParserTypeError(f"{what} must be a Bool-typed scalar", self.span(node))

    def stmt_If(self, node: ast.If) -> None:
        cond_v = self.parse_value(node.test)
        taken = const_condition(cond_v)
        if taken is not None:
            # Compile-time condition (closure/global constant, `CFG is None`, ...): only the taken
            # branch exists; its pl.yield_ (if any) becomes plain assignments of the results.
            branch = node.body if taken else node.orelse
            if not branch:
                return
            self.construct_depth += 1
            try:
                body, py = self.parse_block(branch)
            finally:
                self.construct_depth -= 1
            stmts = list(body.stmts)
            if py is not None:
                stmts.pop()
            self.block.extend(stmts)
            for i, name in enumerate(py.names if py is not None else []):
                self.bind(name, py.values[i], py.types[i], node)  # type: ignore[union-attr]
            return
        cond = self.to_expr(cond_v, node.test)
        if isinstance(cond, ConstBool):
            cond = ConstBool(cond.value, span=cond.span)
        self.check_bool(cond, node.test, "if condition")
        before = dict(self.env)
        self.construct_depth += 1
        try:
            then, py_then = self.parse_block(node.body)
            env_then, self.env = self.env, dict(before)  # the else branch starts from the state before
            # ... but a name the then-branch bound is the same variable when the else-branch binds it
            saved_reuse = self.branch_reuse
            self.branch_reuse = {**saved_reuse, **{n: v for n, v in env_then.items() if before.get(n) is not v}}
            try:
                els, py_else = self.parse_block(node.orelse) if node.orelse else (None, None)
            finally:
                self.branch_reuse = saved_reuse
            env_else = self.env
        finally:
            self.construct_depth -= 1
        then, els = self.merge_branch_names(before, env_then, env_else, then, els, node)
        rvs = self.check_if_yields(py_then, py_else, node)
        self.emit(IfStmt(cond, then, els, rvs, span=self.span(node)))
        self.bind_results(rvs)

    def merge_branch_names(self, before: dict, env_then: dict, env_else: dict, then: SeqStmts,
                           els: SeqStmts | None, node: ast.If) -> tuple[SeqStmts, SeqStmts | None]:
        """Python semantics for names (re)bound in the branches of an if: after it, a name has the
        value its branch gave it. When the branches (or one branch and the state before) bind a
        name to different variables, the other branch assigns the chosen variable too, so both
        define it (ConvertToSSA then merges it into an if result). A name bound in one branch only,
        and unknown before, stays local to that branch."""
        span = self.span(node)
        extra_then: list[Stmt] = []
        extra_else: list[Stmt] = []
        merged: dict = {}
        for name in dict.fromkeys([*env_then, *env_else]):
            t, e, b = env_then.get(name), env_else.get(name), before.get(name)
            if t is e:
                merged[name] = t
            elif t is None or e is None:
                self.loop_local[name] = t or e  # no single value after the if
            elif isinstance(t, Var) and isinstance(e, Var) and type_compatible(t.type, e.type):
                if t is b:  # only the else-branch rebound it: the then-branch assigns the new var
                    extra_then.append(AssignStmt(e, t, span=span))
                    merged[name] = e
                else:
                    extra_else.append(AssignStmt(t, e, span=span))
                    merged[name] = t
            else:
                raise branch_type_error(name, t, e, b, node.orelse != [], span)
        self.env = merged
        if extra_then:
            then = _before_yield(then, extra_then)
        if extra_else:
            els = _before_yield(els if els is not None else SeqStmts((), span=span), extra_else)
        return then, els

    def check_if_yields(self, a: PendingYield | None, b: PendingYield | None, node: ast.If
                        ) -> tuple[Var, ...]:
        if a is None and b is None:
            return ()
        if a is None or b is None:
            where = a or b
            raise ParserSyntaxError("if one branch yields, the other must too (add an else branch ending "
                                    "with pl.yield_)", where.span)  # type: ignore[union-attr]
        if len(a.values) != len(b.values):
            raise ParserTypeError(f"if branches yield different numbers of values: then-branch yields "
                                  f"{len(a.values)} (line {a.span.begin_line}), else-branch yields "
                                  f"{len(b.values)} (line {b.span.begin_line})", b.span)
        for i, (x, y) in enumerate(zip(a.values, b.values)):
            if not type_compatible(x.type, y.type):
                raise ParserTypeError(f"if branches yield different types for value {i}: then-branch "
                                      f"{type_text(x.type)} (line {a.span.begin_line}), else-branch "
                                      f"{type_text(y.type)} (line {b.span.begin_line})", b.span)
        if a.names != b.names and b.names:
            raise ParserSyntaxError(f"if branches yield into different names: {a.names} and {b.names}",
                                    b.span)
        return self.make_return_vars(a, node)

    # ---- scopes --------------------------------------------------------------------------
    def stmt_With(self, node: ast.With) -> None:
        parse_with(self, node)  # pl.at / pl.scope / pl.manual_scope / pl.spmd (parser/tasks.py)

    # ---- simple statements ---------------------------------------------------------------
    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Return(self, node: ast.Return) -> None:
        if node.value is None:
            vals: tuple[Expr, ...] = ()
        elif isinstance(node.value, ast.Tuple):
            vals = tuple(self.parse_expr(e) for e in node.value.elts)
        else:
            vals = (self.parse_expr(node.value),)
            if isinstance(vals[0], MakeTuple) and not vals[0].elements and isinstance(node.value, ast.Call):
                vals = ()  # `return helper(...)` of an inline helper that returns nothing
        self.returns.append(vals)
        self.emit(ReturnStmt(vals, span=self.span(node)))

    def stmt_Expr(self, node: ast.Expr) -> None:
        v = node.value
        if isinstance(v, ast.Constant) and (isinstance(v.value, str) or v.value is Ellipsis):
            return  # docstring, or `...` as a placeholder body
        if isinstance(v, ast.Call):
            f = self.parse_value(v.func)
            if isinstance(f, dsl.DSLBuiltin):
                self.builtin_stmt(f, v, node)
                return
        e = self.parse_value(v)
        if isinstance(e, MakeTuple) and not e.elements and isinstance(v, ast.Call):
            return  # an inline helper without a return value: its body has been spliced in
        if not isinstance(e, Call):
            raise ParserSyntaxError("expression statement has no effect", self.span(node))
        self.emit(EvalStmt(e, span=self.span(node)))

    def static_fstring(self, node: ast.JoinedStr) -> str:
        """The text of an f-string in `pl.static_print` (SPEC §13): each `{expr}` shows an IR
        value's type (`pl.Tile[[16, 64], pl.FP32, ...]`) or a compile-time value's Python text,
        with the field's conversion (`!r`) and format spec applied to the latter."""
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(str(part.value))
                continue
            assert isinstance(part, ast.FormattedValue)
            val = self.parse_value(part.value)
            if isinstance(val, Expr):
                out.append(type_text(val.type))
                continue
            val = repr(val) if part.conversion == ord("r") else str(val) if part.conversion == ord("s") \
                else ascii(val) if part.conversion == ord("a") else val
            spec = self.static_fstring(part.format_spec) if part.format_spec is not None else ""
            out.append(format(val, spec))
        return "".join(out)

    def builtin_stmt(self, f: dsl.DSLBuiltin, call: ast.Call, node: ast.stmt) -> None:
        if f.name == "yield_":
            self.yield_stmt(call, None, None, node)
        elif f.name == "static_print":
            for a in call.args:
                if isinstance(a, ast.JoinedStr):  # f-string: IR values show their types
                    print(f"{self.span(a)}: static_print: {self.static_fstring(a)}")
                    continue
                val = self.parse_value(a)
                desc = type_text(val.type) if isinstance(val, Expr) else repr(val)
                print(f"{self.span(a)}: static_print: {ast.unparse(a)}: {desc}")
        elif f.name == "static_assert":
            if not call.args:
                raise ParserTypeError("pl.static_assert(cond, msg) needs a condition", self.span(call))
            cond = self.parse_value(call.args[0])
            msg = self.parse_value(call.args[1]) if len(call.args) > 1 else ast.unparse(call.args[0])
            if isinstance(cond, Expr):
                from .static_eval import UNKNOWN, static_value

                cond = static_value(cond)
                if cond is UNKNOWN:
                    raise ParserTypeError(f"pl.static_assert needs a condition known at compile time; "
                                          f"'{ast.unparse(call.args[0])}' depends on a run-time value "
                                          f"(a pl.dynamic dimension, a scalar parameter or a loop "
                                          f"variable)", self.span(call))
            if not cond:
                raise ParserError(f"static_assert failed: {msg}", self.span(call))
        elif f.name == "func_attr":
            raise ParserSyntaxError("pl.func_attr({...}) must be the first statement of a function body "
                                    "(after its docstring)", self.span(node))
        elif f.name == "cond":
            raise ParserSyntaxError("pl.cond(...) must be the first statement of a pl.while_ loop",
                                    self.span(node))
        else:
            raise ParserSyntaxError(f"pl.{f.name}(...) cannot be used as a statement", self.span(node))


def _whole_region(index: ast.expr, rank: int) -> bool:
    """Whether a subscript names the whole tensor: `[:]`, `[:, :]` (one bare `:` per dimension, or
    fewer: the rest are implied) or `[...]`."""
    items = index.elts if isinstance(index, ast.Tuple) else [index]
    if len(items) == 1 and isinstance(items[0], ast.Constant) and items[0].value is Ellipsis:
        return True
    return 0 < len(items) <= rank and all(
        isinstance(i, ast.Slice) and i.lower is None and i.upper is None and i.step is None for i in items)
