"""TileTensorBlocks: a tensor-level InCore function too large for one core's Vec is split into blocks
(issue 11; SPEC §1 "the compiler places data at the Tensor level").

It runs after outlining (OutlineIncoreScopes / OutlineClusterScopes) and before
ConvertTensorToTileOps, on tensor-level IR, so the lowering that follows is unchanged: the pass only
writes what a user would write by hand — a block loop of `pl.slice` / compute / `pl.assemble`.

What it handles: an InCore function whose body is one straight-line chain of vector tensor ops —
elementwise, scalar, broadcast (`row_expand_*` / `col_expand_*` / `[R, 1]` and `[1, C]` operands),
cast, compare/select, activations — row reductions (`row_sum`, `row_max`, ... : result `[R, 1]`)
or column reductions (`col_sum`, ...: result `[1, C]`), ending in `pl.assemble(out, value, [0, 0])`
of whole 2-D `Out` tensors. Every tensor value is `[R, C]`, `[R, 1]` or `[1, C]` (R, C static). An
input may be a static slice of a parameter (`pl.slice(a, shape, offsets)`, no valid_shape): its
blocks are sliced from the parameter at the slice's offsets plus the block's. A slice of a value
computed in the function is first moved onto the inputs (`push_slices`) when the function does not
fit; where it cannot be, MemoryCapacityError names the slice. Anything else is left as it is (and,
when too large, AllocateMemoryAddr reports MemoryCapacityError as before).

When the function, lowered as written, fits the core (`block_shape.footprint`: the bytes
MemoryReuse packs its tiles into), it is left unchanged. Otherwise the whole chain runs per block —
each input is loaded once per block, the chain computed on chip, each output stored once:

    for i in pl.range(0, R, br):            # rows
        for j in pl.range(0, C, bc):        # columns, only when one block of rows cannot hold C
            rows_valid: pl.INDEX = pl.min(br, R - i)   # only for a partial tail (below)
            cols_valid: pl.INDEX = pl.min(bc, C - j)
            a_blk = pl.slice(a, [br, bc], [i, j], valid_shape=[rows_valid, cols_valid])
            ... the chain on the blocks ...
            out = pl.assemble(out, result, [i, j])

A region with `optimizations` (`pl.split`, `pl.cross_core_slot`: its cross-core layout chosen by
hand) is left as written. A `valid_shape` is given only along a dimension the block does not
divide (a partial tail block: primes, non-multiples). When 8 whole rows of a chain with row
reductions do not fit, the row block runs in passes over column blocks, each reduction accumulated
across the blocks (`reduce_blocks`); an argmax / argmin (which does not combine that way) keeps its
rows whole, and when one such row does not fit the function is left unchanged. A chain of column
reductions (`col_sum`, ...: result `[1, C]`) is blocked along its columns instead, each column block
accumulating over row blocks (`col_reduce_blocks`); its column loop is the one moved into the callers.

Block shape: `block_shape.choose_blocks` (deterministic, from the SoC model `ctx.soc`): the largest
block whose lowered kernel fits — Vec holding the packed tiles, plus a second copy of the loads when
the kernel runs several blocks (double buffering) — with whole rows when 8 of them fit, else column
blocks of `unit × 2^k` (`unit`: the DDR access granularity, 512 B on 910B, 128 B on 950, in elements
of the widest dtype); rows all of R, or a multiple of 8 (a count below 8 when 8 rows do not fit).

Cores: when every call of the function is `v = self.f(...)` in an Orchestration function and it has
one Out tensor, the row loop moves into the callers as `pl.parallel` (one task per row block, `_Hoist`)
and the kernel computes the row block at a new index parameter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..core.dtype import INDEX
from ..core.enums import ForKind, FunctionType, ParamDirection
from ..core.errors import MemoryCapacityError
from ..ir.expr import BinaryExpr, Call, ConstInt, Expr, GlobalVar, IterArg, MakeTuple, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, ForStmt, ReturnStmt, SeqStmts, Stmt, YieldStmt
from ..ir.types import ScalarType, TensorType
from ..ir.visitor import IRMutator, IRVisitor
from ..ops import get_op
from .base import Pass, PassContext
from .block_shape import BlockPlan, choose_blocks, fits_core, footprint, poor_shape_hint
from .op_builder import build_call

__all__ = ["TileTensorBlocks"]

INDEX_SCALAR = ScalarType(INDEX)
_CHAIN_TRAITS = frozenset({"elementwise", "positionwise"})


def _const(d: Expr) -> int | None:
    return d.value if isinstance(d, ConstInt) else None


Dim = int | Var   # a static size, or a dynamic dimension (`pl.dynamic`)
_UNBOUNDED = 1 << 40  # the size a dynamic dimension counts as when choosing blocks


def _dims(t: TensorType) -> tuple[Dim, Dim] | None:
    """(rows, cols) of a 2-D tensor type without a view — each static or a dynamic-dimension
    variable — else None."""
    if len(t.shape) != 2 or t.view is not None:
        return None
    out = tuple(_const(d) if isinstance(d, ConstInt) else d if isinstance(d, Var) else None for d in t.shape)
    return out if None not in out else None  # type: ignore[return-value]


def _same(a: Dim, b: Dim) -> bool:
    """Equal sizes, or the same dynamic dimension."""
    return a is b if isinstance(a, Var) or isinstance(b, Var) else a == b


def _size(d: Dim) -> int:
    return d if isinstance(d, int) else _UNBOUNDED


def _expr(d: Dim) -> Expr:
    return _idx(d) if isinstance(d, int) else d


@dataclass
class _Chain:
    """What the analysis found: the chain's statements, its tensor values and the final assembles."""

    rows: Dim
    cols: Dim
    values: dict[Var, tuple[Dim, Dim]]   # every tensor value loaded or computed on chip -> dims
    reduces_rows: bool                    # a row reduction: rows must stay whole (no column blocks)
    reduces_cols: bool = False            # a column reduction [R, C] -> [1, C] (`col_reduce_blocks`)
    views: dict[Var, tuple[Var, tuple[Expr, Expr]]] = field(default_factory=dict)
    # a slice of a parameter -> (the parameter, the slice's offsets): blocked at shifted offsets


def _analyse(func: Function, skip: int = 0, seed: dict[Var, tuple[Dim, Dim]] | None = None) -> _Chain | None:
    """The chain of `func` (module docstring), or None when the function is not one. The first
    `skip` statements are not looked at; `seed` gives values they compute (a matmul's result)."""
    body = func.body.stmts if isinstance(func.body, SeqStmts) else (func.body,)
    if not body or not isinstance(body[-1], ReturnStmt):
        return None
    params = set(func.params)
    values: dict[Var, tuple[Dim, Dim]] = dict(seed or {})
    views: dict[Var, tuple[Var, tuple[Expr, Expr]]] = {}
    stored: set[Var] = set()
    reduces = col_reduces = False
    for p in func.params:
        if isinstance(p.type, TensorType):
            if _dims(p.type) is None:
                return None
    for s in body[skip:-1]:
        if not (isinstance(s, AssignStmt) and isinstance(s.value, Call) and isinstance(s.value.op, str)
                and s.value.op.startswith("tensor.") and isinstance(s.var.type, TensorType)):
            return None
        call, spec = s.value, get_op(s.value.op)
        dims = _dims(s.var.type)
        if dims is None:
            return None
        tensor_args = [a for a in call.args if isinstance(a.type, TensorType)]
        if call.op == "tensor.slice" and len(call.args) == 3 and tensor_args[0] in params \
                and all(isinstance(d, int) for d in dims):   # a static view of an input
            views[s.var] = (tensor_args[0], tuple(call.args[2].elements))  # type: ignore[assignment, attr-defined]
            values[s.var] = dims
            continue
        if any(not isinstance(a, Var) or a in stored or (a not in params and a not in values)
               for a in tensor_args):
            return None
        if spec.lowering == "store":
            target, value, offsets = call.args
            if target not in params or target in stored or _dims(target.type) != dims \
                    or values.get(value) != dims \
                    or not all(_const(o) == 0 for o in offsets.elements):  # type: ignore[attr-defined]
                return None
            stored.add(s.var)
            continue
        if spec.tile_op is None or "vector" not in spec.traits:
            return None
        if spec.has_trait("reduction"):
            (src,) = tensor_args
            sd = values.get(src) or _dims(src.type)  # type: ignore[arg-type]
            if dims[1] == 1 and sd[1] != 1:         # a row reduction [R, C] -> [R, 1]
                reduces = True
            elif dims[0] == 1 and call.op.startswith("tensor.col_"):  # a column reduction -> [1, C]
                col_reduces = True
            else:
                return None
        elif not spec.traits & _CHAIN_TRAITS:
            return None
        for a in tensor_args:
            values.setdefault(a, _dims(a.type))  # type: ignore[arg-type, index]
        values[s.var] = dims
    ret = body[-1]
    if not stored or not all(v in stored for v in ret.values if isinstance(v.type, TensorType)):  # type: ignore[attr-defined]
        return None
    rows = _extent([d[0] for d in values.values()])
    cols = _extent([d[1] for d in values.values()])
    if rows is None or cols is None:
        return None
    return _Chain(rows, cols, values, reduces, col_reduces, views)


def _extent(dims: list[Dim]) -> Dim | None:
    """The one extent other than 1 along an axis (1 when all are 1); None when there are several."""
    others = {id(d) if isinstance(d, Var) else d: d for d in dims if not (isinstance(d, int) and d == 1)}
    if len(others) > 1:
        return None
    return next(iter(others.values())) if others else 1


def _idx(v: int) -> ConstInt:
    return ConstInt(v, INDEX)


def _shifted(base: Expr, off: Expr) -> Expr:
    """`base + off` (folded when both are constants or one is 0)."""
    if isinstance(base, ConstInt) and isinstance(off, ConstInt):
        return _idx(base.value + off.value)
    if isinstance(base, ConstInt) and base.value == 0:
        return off
    if isinstance(off, ConstInt) and off.value == 0:
        return base
    return BinaryExpr("add", base, off, INDEX)


class _Blocker:
    """Rebuilds the chain's statements for one block at offsets (`i`, `j`)."""

    def __init__(self, chain: _Chain, plan: BlockPlan, i: Expr, j: Expr, carried: dict[Var, Var]) -> None:
        self.chain, self.plan, self.i, self.j = chain, plan, i, j
        self.carried = carried          # Out parameter -> the loop's iter arg carrying it
        self.map: dict[Var, Expr] = {}  # old tensor value -> its block
        self.out: list[Stmt] = []
        self.valid: dict[int, Expr] = {}  # axis -> the valid size of a tail (one Expr: types compare it)

    def extent(self, axis: int, full: Dim) -> tuple[int, Expr, Expr | None]:
        """(block size, offset, valid size or None) along `axis` of a value of extent `full`."""
        size = self.plan.rows if axis == 0 else self.plan.cols
        total = self.chain.rows if axis == 0 else self.chain.cols
        if full == 1:
            return 1, _idx(0), None
        off = self.i if axis == 0 else self.j
        if isinstance(total, int) and total % size == 0:
            return size, off, None
        if isinstance(total, int) and isinstance(off, ConstInt):   # a block at a known offset
            return size, off, None if off.value + size <= total else _idx(total - off.value)
        if axis not in self.valid:  # bound once per block: every slice's type names this variable
            rest = BinaryExpr("sub", _expr(total), off, INDEX)
            v = Var("rows_valid" if axis == 0 else "cols_valid", INDEX_SCALAR, span=off.span)
            self.out.append(AssignStmt(v, BinaryExpr("min", _idx(size), rest, INDEX), span=off.span))
            self.valid[axis] = v
        return size, off, self.valid[axis]

    def block_of(self, v: Var) -> Expr:
        if v in self.map:
            return self.map[v]
        r, c = self.chain.values[v]
        (br, oi, vi), (bc, oj, vj) = self.extent(0, r), self.extent(1, c)
        src: Var = v
        if v in self.chain.views:   # a slice of an input: its block, at the slice's offsets plus the block's
            src, (o0, o1) = self.chain.views[v]
            oi, oj = _shifted(o0, oi), _shifted(o1, oj)
        args: list[Expr] = [src, MakeTuple((_idx(br), _idx(bc))), MakeTuple((oi, oj))]
        if vi is not None or vj is not None:
            args.append(MakeTuple((vi or _idx(br), vj or _idx(bc))))
        call = build_call("tensor.slice", args, {}, v.span)
        blk = Var(f"{v.name}_blk", call.type, span=v.span)
        self.out.append(AssignStmt(blk, call, span=v.span))
        self.map[v] = blk
        return blk

    def stmt(self, s: AssignStmt) -> None:
        call: Call = s.value  # type: ignore[assignment]
        if s.var in self.chain.views:   # sliced per block where used (block_of)
            return
        if get_op(call.op).lowering == "store":  # type: ignore[arg-type]
            target, value, _ = call.args
            dst = self.carried[target]  # type: ignore[index]
            st = build_call("tensor.assemble", [dst, self.map[value], MakeTuple((self.i, self.j))],  # type: ignore[index]
                            dict(call.kwargs), s.span)
            nv = Var(s.var.name, st.type, span=s.var.span)
            self.out.append(AssignStmt(nv, st, span=s.span))
            self.map[s.var] = nv
            return
        args = [self.block_of(a) if isinstance(a, Var) and isinstance(a.type, TensorType) else a
                for a in call.args]
        nc = build_call(call.op, args, dict(call.kwargs), call.span)  # type: ignore[arg-type]
        nv = Var(s.var.name, nc.type, span=s.var.span)
        self.out.append(AssignStmt(nv, nc, span=s.span))
        self.map[s.var] = nv


def _loop(var_name: str, total: Dim, size: int, carried: list[Var], span, body_fn,  # type: ignore[no-untyped-def]
          start: int = 0) -> tuple[ForStmt, list[Var]]:
    """`for v in pl.range(start, total, size)` carrying `carried`; `body_fn(v, iter_args)` gives
    (body statements, yielded values)."""
    lv = Var(var_name, INDEX_SCALAR, span=span)
    ias = [IterArg(f"{c.name}_it", c.type, init=c, span=span) for c in carried]
    stmts, yielded = body_fn(lv, ias)
    rvs = [Var(f"{c.name}_rv", c.type, span=span) for c in carried]
    body = SeqStmts(tuple(stmts) + (YieldStmt(tuple(yielded), span=span),), span=span)
    return ForStmt(lv, _idx(start), _expr(total), _idx(size), tuple(ias), body, tuple(rvs), span=span), rvs


def _stores(chain_stmts: list[AssignStmt]) -> list[AssignStmt]:
    return [s for s in chain_stmts if get_op(s.value.op).lowering == "store"]  # type: ignore[attr-defined, arg-type]


def _row_block(chain: _Chain, plan: BlockPlan, chain_stmts: list[AssignStmt], outs: list[Var], i: Expr,
               carried: list[Var], span) -> tuple[list[Stmt], list[Expr]]:  # type: ignore[no-untyped-def]
    """The statements of the row block at row `i` — one block, or a loop over column blocks —
    writing Out parameter `outs[k]` through the value `carried[k]`; and the written values."""
    def block(j: Expr, ias: list[Var]):  # type: ignore[no-untyped-def]
        b = _Blocker(chain, plan, i, j, dict(zip(outs, ias)))
        for s in chain_stmts:
            b.stmt(s)
        last = {s.value.args[0]: b.map[s.var] for s in _stores(chain_stmts)}  # type: ignore[attr-defined]
        return b.out, [last[o] for o in outs]
    if plan.cols == chain.cols:
        return block(_idx(0), carried)
    if chain.reduces_rows:
        from .reduce_blocks import row_block_in_passes
        return row_block_in_passes(chain, plan, chain_stmts, outs, i, carried, span)
    loop, rvs = _loop("j", chain.cols, plan.cols, carried, span, block)
    return [loop], rvs


def _split(func: Function) -> tuple[list[AssignStmt], list[Var], ReturnStmt]:
    body = list(func.body.stmts)
    chain_stmts: list[AssignStmt] = body[:-1]  # type: ignore[assignment]
    outs = list(dict.fromkeys(s.value.args[0] for s in _stores(chain_stmts)))  # type: ignore[attr-defined]
    return chain_stmts, outs, body[-1]  # type: ignore[return-value]


def _finish(func: Function, chain_stmts: list[AssignStmt], outs: list[Var], ret: ReturnStmt,
            written: list[Var], first: list[Stmt]) -> Function:
    """`func` with body `first` and `ret` returning, for each assemble result, `written[out]`."""
    by_out = dict(zip(outs, written))
    final = {s.var: by_out[s.value.args[0]] for s in _stores(chain_stmts)}  # type: ignore[attr-defined]
    return replace(func, body=SeqStmts(tuple(first) + (IRMutator(dict(final)).visit_stmt(ret),),
                                       span=func.body.span))


def _rebuild(func: Function, chain: _Chain, plan: BlockPlan) -> Function:
    """`func` with the block loop nest inside it (rows sequential on one core)."""
    chain_stmts, outs, ret = _split(func)
    span = func.span

    def rows(i: Expr, ias: list[Var]):  # type: ignore[no-untyped-def]
        return _row_block(chain, plan, chain_stmts, outs, i, ias, span)

    loop, rvs = _loop("i", chain.rows, plan.rows, outs, span, rows)
    return _finish(func, chain_stmts, outs, ret, rvs, [loop])


def _index_params(func: Function, names: tuple[str, ...]) -> list[Var]:
    """New `pl.Scalar[pl.INDEX]` parameters for the block offsets (`names`: `i`, `j`), named apart
    from the existing parameters."""
    taken = {p.name for p in func.params}
    out = []
    for base in names:
        name = next(n for n in (base, f"blk_{base}") + tuple(f"blk_{base}{k}" for k in range(len(taken) + 1))
                    if n not in taken)
        taken.add(name)
        out.append(Var(name, INDEX_SCALAR, span=func.span))
    return out


def with_index_params(func: Function, body: Callable[[list[Var]], tuple[list[Stmt], list[Var]]],
                      names: tuple[str, ...]) -> Function:
    """`func` computing the block at its new last index parameters `names` (`_index_params`):
    `body(indices)` gives the statements and, per Out parameter of `_split(func)`, its written value.
    The callers loop over the indices (`_Hoist`)."""
    chain_stmts, outs, ret = _split(func)
    idx = _index_params(func, names)
    stmts, written = body(idx)
    f = _finish(func, chain_stmts, outs, ret, written, stmts)
    return replace(f, params=func.params + tuple(idx),
                   param_directions=func.param_directions + (ParamDirection.In,) * len(idx))


def _rebuild_one_row_block(func: Function, chain: _Chain, plan: BlockPlan) -> Function:
    """`func` computing the row block at its new last parameter `i` (a `pl.Scalar[pl.INDEX]`);
    the caller loops over `i` (`_Hoist`)."""
    chain_stmts, outs, _ = _split(func)
    return with_index_params(
        func, lambda idx: _row_block(chain, plan, chain_stmts, outs, idx[0], outs, func.span), ("i",))  # type: ignore[arg-type]


Loops = list[tuple[str, Dim, int]]   # (name, extent, step) of each hoisted block loop, outermost first


class _Hoist(IRMutator):
    """Replaces each call `v = self.f(args)` by the nest of `pl.parallel` loops over the block
    offsets (`for i, (o_it,) in pl.parallel(0, R, br, init_values=(o,))`, ...) calling
    `f(args with o_it, i, ...)` and yielding its result into `v` (one task per block)."""

    def __init__(self, funcs: dict[str, tuple[Function, Loops]]) -> None:
        super().__init__()
        self.funcs = funcs

    def visit_AssignStmt(self, s: AssignStmt) -> Stmt:
        c = s.value
        entry = self.funcs.get(c.op.name) if isinstance(c, Call) and isinstance(c.op, GlobalVar) else None
        if entry is None:
            return super().visit_AssignStmt(s)
        func, loops = entry
        out = _split(func)[1][0]
        pos = func.params.index(out)
        return self._nest(s, c, pos, c.args[pos], loops, [])

    def _nest(self, s: AssignStmt, c: Call, pos: int, carried: Expr, loops: Loops, idx: list[Var]) -> ForStmt:
        (name, extent, step), rest = loops[0], loops[1:]
        lv = Var(name, INDEX_SCALAR, span=s.span)
        it = IterArg(f"{getattr(carried, 'name', 'out')}_it", carried.type, init=carried, span=s.span)
        if rest:
            inner = self._nest(s, c, pos, it, rest, idx + [lv])
            res: Var = inner.return_vars[0]
            stmts: tuple[Stmt, ...] = (inner,)
        else:
            args = list(c.args)
            args[pos] = it
            res = Var(s.var.name + "_blk", s.var.type, span=s.var.span)
            stmts = (AssignStmt(res, replace(c, args=tuple(args) + tuple(idx + [lv])), span=s.span),)
        body = SeqStmts(stmts + (YieldStmt((res,), span=s.span),), span=s.span)
        rv = s.var if len(idx) == 0 else Var(f"{s.var.name}_{name}", s.var.type, span=s.span)
        return ForStmt(lv, _idx(0), _expr(extent), _idx(step), (it,), body, (rv,), kind=ForKind.Parallel,
                       span=s.span)


def _hoistable(func: Function, program: Program) -> bool:
    """True when the row loop of `func` can move into its callers: one Out tensor, returned; every
    call an assignment `v = self.f(...)` in an Orchestration function."""
    _, outs, ret = _split(func)
    if len(outs) != 1 or len(ret.values) != 1:
        return False
    calls = _Calls(func.name)
    for f in program.functions:
        if f is not func:
            calls.visit_function(f)
    return calls.ok and calls.count > 0


class _Calls(IRVisitor):
    """Counts the calls of function `name`; `ok` is False when one is not `v = self.name(...)` in an
    Orchestration function."""

    def __init__(self, name: str) -> None:
        self.name, self.count, self.ok, self.assigned = name, 0, True, False
        self.orch = False

    def visit_function(self, f: Function) -> None:
        self.orch = f.func_type is FunctionType.Orchestration
        super().visit_function(f)

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.assigned = isinstance(s.value, Call) and isinstance(s.value.op, GlobalVar)
        super().visit_AssignStmt(s)

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar) and e.op.name == self.name:
            self.count += 1
            self.ok = self.ok and self.orch and self.assigned
        self.assigned = False
        super().visit_Call(e)


class TileTensorBlocks(Pass):
    """Split a too-large tensor-level InCore chain into blocks (module docstring)."""

    name = "TileTensorBlocks"

    def run(self, program: Program, ctx: PassContext) -> Program:
        from .fuse_matmul_acc import fuse_matmul_acc
        from .tile_tensor_matmul import plan_matmul

        hoisted: dict[str, tuple[Function, Loops]] = {}
        funcs = []
        program = replace(program, functions=tuple(
            fuse_matmul_acc(f) if f.func_type is FunctionType.InCore and f.external is None else f
            for f in program.functions))
        for func in program.functions:
            if func.optimizations:   # pl.split / pl.cross_core_slot: a cross-core layout chosen by hand
                _note_unblocked(func, ctx)
                funcs.append(func)
                continue
            func = _slices_pushed(func, ctx)
            mm = plan_matmul(func, program, ctx)
            if mm is not None:
                new, loops = mm
                if loops:
                    hoisted[func.name] = (func, loops)
                funcs.append(new)
                continue
            found = _plan(func, program, ctx)
            if found is None:
                _note_unblocked(func, ctx)
                funcs.append(func)
                continue
            chain, plan, hoist = found
            if hoist:
                hoisted[func.name] = (func, [("j", chain.cols, plan.cols)] if chain.reduces_cols
                                      else [("i", chain.rows, plan.rows)])
            funcs.append(_candidate(func, chain, plan, hoist))
        if hoisted:
            mut = _Hoist(hoisted)
            funcs = [f if f.name in hoisted else mut.visit_function(f) for f in funcs]
        return replace(program, functions=tuple(funcs))


def _note_unblocked(func: Function, ctx: PassContext) -> None:
    """Record why `func` is left as written, for AllocateMemoryAddr's error if it does not fit."""
    from .blocking_reason import unblocked_reason
    reason = unblocked_reason(func)
    if reason is not None:
        ctx.records.setdefault("unblocked", {})[func.name] = reason


def _slices_pushed(func: Function, ctx: PassContext) -> Function:
    """`func` with its slices of computed values moved onto its inputs (`push_slices`) when it holds
    such a slice and does not fit the core as written; `func` otherwise (a fitting one keeps the
    slice as a view of the tile on chip)."""
    from .push_slices import computed_slices, push_slices
    if func.func_type is not FunctionType.InCore or not computed_slices(func):
        return func
    whole = footprint(func, ctx)
    if whole is None or whole.fits(ctx.soc.capacity_of, double_buffer=False):
        return func
    pushed = push_slices(func)
    left = computed_slices(pushed)
    if left:
        s = left[0]
        src = s.value.args[0]  # type: ignore[attr-defined]
        made = next((d.value.op for d in pushed.body.stmts if isinstance(d, AssignStmt) and d.var is src),  # type: ignore[attr-defined]
                    "a loop or branch")
        raise MemoryCapacityError(
            f"function '{func.name}': the region does not fit one core, and it cannot be split into blocks "
            f"because '{s.var.name}' slices '{src.name}', computed by {made}: the compiler moves a slice onto "
            "the region's inputs only through elementwise ops, broadcasts, casts, reductions and "
            "pl.matmul; slice the inputs instead (e.g. pl.matmul(a[16:32, :], b) for pl.matmul(a, b)[16:32, :]) "
            "or write the block loop yourself (pl.parallel over blocks with pl.slice / pl.assemble)",
            s.span if s.span.is_known() else func.span)
    return pushed


def _plan(func: Function, program: Program, ctx: PassContext) -> tuple[_Chain, BlockPlan, bool] | None:
    """The chain of `func`, its block shape and whether its row loop moves into the callers (one
    task per row block), when `func` is an InCore chain too large for the core (block_shape)."""
    if func.func_type is not FunctionType.InCore or not isinstance(func.body, SeqStmts):
        return None
    chain = _analyse(func)
    if chain is None:
        return None
    if fits_core(func, ctx, double_buffer=False):
        return None
    if chain.reduces_cols:
        from .col_reduce_blocks import col_reducible
        if not col_reducible(chain, _split(func)[0]):
            return None
    hoist = _hoistable(func, program)
    R, C = _size(chain.rows), _size(chain.cols)
    tried: dict[tuple[int, int], bool] = {}

    def fits(r: int, c: int) -> bool:
        if (r, c) not in tried:
            several = (r < R or (not hoist and c < C)) if chain.reduces_cols else (c < C or (not hoist and r < R))
            tried[(r, c)] = fits_core(_candidate(func, chain, BlockPlan(r, c), hoist), ctx, double_buffer=several)
        return tried[(r, c)]

    widest = max((v.type.dtype for v in chain.values), key=lambda d: d.get_byte())  # type: ignore[attr-defined]
    unit = max(1, ctx.soc.ddr_access_granularity // widest.get_byte())
    from .reduce_blocks import can_split_reduced
    whole_rows = chain.reduces_rows and not can_split_reduced(_split(func)[0])
    plan = choose_blocks(R, C, isinstance(chain.rows, int), whole_rows, unit, fits)
    if plan is None or (plan.rows, plan.cols) == (chain.rows, chain.cols):
        return None
    hint = poor_shape_hint(func.name, func.span, (R, C), plan, widest, ctx.soc)
    if hint is not None:
        ctx.records.setdefault("perf_hints", []).append(hint)
    return chain, plan, hoist


def _candidate(func: Function, chain: _Chain, plan: BlockPlan, hoist: bool) -> Function:
    """`func` blocked by `plan`: one task's block (the callers loop, `hoist`) or the whole loop
    nest; column reductions blocked by `col_reduce_blocks`, everything else by rows."""
    if chain.reduces_cols:
        from .col_reduce_blocks import rebuild_cols, rebuild_one_col_block
        return rebuild_one_col_block(func, chain, plan) if hoist else rebuild_cols(func, chain, plan)
    return _rebuild_one_row_block(func, chain, plan) if hoist else _rebuild(func, chain, plan)
