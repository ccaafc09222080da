"""ExpandMixedKernel: an InCore kernel that uses both the cube and the vector units becomes an AIC
kernel and an AIV kernel joined by cross-core pipes (SPEC §3 "System", §5; Language Guide "InCore
Scopes").

A cluster is one cube core and two vector cores; a kernel runs on one kind of core. For an InCore
function `k` whose statements run on both sides (`kernel_sides`), the pass builds:

- `k_aic` (FunctionType.AIC): the cube-side statements, and `k_aiv` (FunctionType.AIV): the
  vector-side ones. Scalar statements and all control flow (loops, ifs, with their conditions and
  bounds) are kept on both sides, so the two kernels walk the same iteration space; loop-carried
  and if-result tiles stay with the side that owns their memory.
- Where a tile made on one side is used on the other, the owner sends it right after making it —
  `pl.system.tpush_to_aiv(t)` / `tpush_to_aic(t)` — and the other side receives it at the same
  program point — `pl.system.tpop_from_aic(shape, dtype=)` into Vec / `tpop_from_aiv` into Mat —,
  then releases the pipe slot after its last use at that level (`tfree_to_aic` / `tfree_to_aiv`).
  Since both kernels push and pop in the same program order, every pop receives its push (the pipes
  are FIFOs). A move between the sides' memories (Acc → Vec, Vec → Mat) becomes such a transfer.
  Vector ops that read a cube tile (e.g. `exp` of a matmul result in Acc) now read the received
  Vec tile, so their results move to Vec too.
- `k` itself becomes a Group function with `k`'s parameters that calls both kernels (the sender
  first) and returns `k`'s results, so the callers of `k` are unchanged. The runtime runs a Group
  call's kernels together on one cluster, interleaved on their own pipes (`runtime/sim/cluster.py`),
  so pipes may flow both ways. Each kernel takes only the parameters it uses (a tensor one side only
  carries through a loop unchanged is not passed to it); tensors written on one side are the same
  DDR tensors on the other. Directions follow from what each kernel does.

A kernel that already sends or receives tiles with `pl.system` pipe ops is taken as partitioned
by its author and left as it is.

Split modes: `k.optimizations` (from `pl.at(..., optimizations=[pl.split(mode)])`, carried by
OutlineIncoreScopes) selects how the vector work is shared by the cluster's two vector cores. With
NONE the AIV kernel runs on one vector core and every tile crosses whole. With UP_DOWN (rows) or
LEFT_RIGHT (columns) it runs on both, each on half of every Vec tile (`split_vector_kernel`): a
tile of extent > 1 in the split dimension crosses with `split=mode` (the cube core sends / receives
the whole tile, each vector core its half); a tile of extent 1 there (e.g. a [1, N] bias row under
UP_DOWN) crosses whole (`split=NONE`): the cube core sends it to both vector cores, and of the two
vector cores, which both hold it whole, vector core 0 alone sends it to the cube core. The Group
function keeps `k.optimizations`, so the runtime and codegen see the split mode and
`pl.cross_core_slot` (ring depth).

Each transfer needs a path between the sender's and the receiver's memory on the target
(`SoCModel.pipe_route`): on chip where the chip moves the tile directly (Acc → Vec, Vec → Mat on
Ascend950), else through a DDR slot buffer (Acc → DDR → Vec, Vec → DDR → Mat on Ascend910B);
CompileError when neither exists (e.g. a Mat tile for a vector op). For a pipe on chip, memory
planning then reserves the ring of slots in the receiving kernel's memory (InitMemRef,
`pipe_rings`). A scalar computed from a tile
on one side and used on the other also raises CompileError.
"""

from __future__ import annotations

from dataclasses import replace

from ..backend import SoCModel
from ..core.enums import FunctionType, MemorySpace, ParamDirection, SplitMode
from ..core.errors import CompileError
from ..ir.expr import Call, Expr, GlobalVar, IterArg, MakeTuple, TupleGetItem, Var
from ..ir.function import Function, Program
from ..ir.kernel_sides import B, C, V, X, side_uses, sides_used, stmt_side, tile_side
from ..ir.stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, ReturnStmt, SeqStmts, Stmt, WhileStmt, YieldStmt
from ..ir.types import TensorType, TileType, TupleType
from ..ir.visitor import IRMutator
from ..ops import get_op
from .analysis import used_vars
from .base import Pass, PassContext
from .derive_call_directions import derived_direction
from .op_builder import build_call
from .rewrite import FreshBindings
from .split_vector_kernel import split_dim, split_vector_body
from .tensor_access import TensorAccess

__all__ = ["ExpandMixedKernel", "split_mode"]

_PUSH = {C: "system.tpush_to_aiv", V: "system.tpush_to_aic"}
_POP = {C: "system.tpop_from_aiv", V: "system.tpop_from_aic"}   # the op the *receiving* side runs
_FREE = {C: "system.tfree_to_aiv", V: "system.tfree_to_aic"}
_OTHER = {C: V, V: C}
_RECEIVER_SPACE = {C: MemorySpace.Vec, V: MemorySpace.Mat}   # where a tile sent by the side lands


class _Side:
    """Builds the body of one side's kernel from the mixed body."""

    def __init__(self, side: str, uses: dict[Var, set[str]], split: SplitMode, soc: SoCModel) -> None:
        self.side, self.uses, self.split, self.soc = side, uses, split, soc
        self.env: dict[Var, Expr] = {}
        self.flows: set[str] = set()   # directions used: "C->V", "V->C"
        self.popped: list[Var] = []    # tiles received in the block being built
        self.params: set[Expr] = set()
        self.returned: list[int] = []  # indices of the function's results this side returns

    def sub(self, e: Expr) -> Expr:
        return IRMutator(dict(self.env)).visit_expr(e)

    def used_here(self, v: Var) -> bool:
        return self.side in self.uses.get(v, ())

    def pipe_split(self, name: str, t: TileType, owner: str, span) -> SplitMode:  # type: ignore[no-untyped-def]
        """The `split` of the transfer of tile `name` of type `t` sent by `owner` (module
        docstring); checks that the target has a path for it."""
        src, dst = t.memory_space or MemorySpace.Vec, _RECEIVER_SPACE[owner]
        if self.soc.pipe_route(src, dst) is None:
            raise CompileError(f"tile '{name}' ({t.dtype.name}, in {src.name} on the {_NAME[owner]} core) is "
                               f"used on the {_NAME[_OTHER[owner]]} core, but {self.soc.backend.name} can move "
                               f"{src.name} neither to {dst.name} nor to DDR; make the tile on the core "
                               f"that uses it", span)
        d = split_dim(t, self.split)
        if d is None or getattr(t.shape[d], "value", None) == 1:
            return SplitMode.NONE  # the tile crosses whole (module docstring)
        return self.split

    def transfer(self, v: Var, owner: str, out: list[Stmt], span, sent: TileType | None = None) -> None:  # type: ignore[no-untyped-def]
        """`v` (a tile of side `owner`, or the receiver's copy of `sent`) crosses to the other
        side at this point."""
        t = v.type
        split = self.pipe_split(getattr(v, "name", "t"), sent or t, owner, span)  # type: ignore[arg-type]
        if self.side == owner:
            out.append(EvalStmt(build_call(_PUSH[owner], [self.sub(v)], {"split": split}, span), span=span))
            self.flows.add(f"{owner}->{_OTHER[owner]}")
            return
        pop = build_call(_POP[self.side], [MakeTuple(tuple(t.shape))],  # type: ignore[attr-defined]
                         {"dtype": t.dtype, "split": split}, span)  # type: ignore[attr-defined]
        nv = Var(v.name, pop.type, span=v.span)
        out.append(AssignStmt(nv, pop, span=span))
        self.env[v] = nv
        self.popped.append(nv)

    def block(self, s: SeqStmts, head=None) -> SeqStmts:  # type: ignore[no-untyped-def]
        """Build one block; `head(out)` emits statements at its start (per-iteration transfers)."""
        out: list[Stmt] = []
        saved, self.popped = self.popped, []
        if head is not None:
            head(out)
        for st in s.stmts:
            self.stmt(st, out)
        _insert_frees(out, self.popped, _FREE[self.side])
        self.popped = saved
        return SeqStmts(tuple(out), span=s.span)

    def stmt(self, st: Stmt, out: list[Stmt]) -> None:
        if isinstance(st, (AssignStmt, EvalStmt)):
            self.leaf(st, out)
        elif isinstance(st, (ForStmt, WhileStmt)):
            self.loop(st, out)
        elif isinstance(st, IfStmt):
            self.if_(st, out)
        elif isinstance(st, YieldStmt):
            out.append(replace(st, values=tuple(self.sub(v) for v in st.values)))
        elif isinstance(st, ReturnStmt):  # return what this side writes: the other side's are params
            vals = [self.sub(v) for v in st.values]
            self.returned = [i for i, v in enumerate(vals) if v not in self.params]
            out.append(replace(st, values=tuple(vals[i] for i in self.returned)))
        elif isinstance(st, SeqStmts):
            for x in st.stmts:
                self.stmt(x, out)
        else:
            out.append(st)

    def leaf(self, st: AssignStmt | EvalStmt, out: list[Stmt]) -> None:
        side = stmt_side(st)
        var = st.var if isinstance(st, AssignStmt) else None
        value = st.value if isinstance(st, AssignStmt) else st.expr
        if side == X:  # a move between the two sides' memories: a pipe transfer
            src = value.args[0]  # type: ignore[attr-defined]
            owner = tile_side(src.type)
            if self.side == owner:
                self.transfer(src, owner, out, st.span)
            elif var is not None:
                self.transfer(var, owner, out, st.span, src.type)  # type: ignore[arg-type]
            return
        if side in (self.side, B):
            new = self.sub(value)
            if isinstance(new, Call) and isinstance(new.op, str) and new is not value:
                new = build_call(new.op, list(new.args), dict(new.kwargs), new.span)
            if var is None:
                out.append(replace(st, expr=new))  # type: ignore[call-arg]
                return
            nv = var
            if isinstance(var.type, TileType) and isinstance(new.type, TileType) and \
                    new.type.memory_space is not var.type.memory_space:
                nv = replace(var, var_type=replace(var.type, memory_space=new.type.memory_space))
                self.env[var] = nv
            out.append(AssignStmt(nv, new, span=st.span))
            if isinstance(var.type, TileType) and self.used_on_other(var):
                self.transfer(var, self.side, out, st.span)
            return
        # the other side's statement
        if var is None:
            return
        if isinstance(var.type, TileType) and self.used_here(var):
            self.transfer(var, _OTHER[self.side], out, st.span)
        elif isinstance(var.type, TensorType) and isinstance(value, Call) and isinstance(value.op, str):
            writes = get_op(value.op).writes
            if writes:
                self.env[var] = self.sub(value.args[writes[0]])
        elif self.used_here(var):
            raise CompileError(f"'{var.name}' is computed on the {_NAME[_OTHER[self.side]]} core but used "
                               f"by code on the {_NAME[self.side]} core; a mixed kernel can only pass tiles "
                               f"between the cores", st.span)

    def used_on_other(self, v: Var) -> bool:
        return _OTHER[self.side] in self.uses.get(v, ())

    def carried(self, vs: tuple[Var, ...]) -> list[int]:
        """Indices of carried values this side keeps: its tiles and every non-tile value."""
        return [i for i, v in enumerate(vs) if tile_side(v.type) in (None, self.side)]

    def loop(self, st: ForStmt | WhileStmt, out: list[Stmt]) -> None:
        keep = self.carried(st.iter_args)
        ias: list[IterArg] = []
        for i in keep:
            ia = st.iter_args[i]
            nia = replace(ia, init=self.sub(ia.init) if ia.init is not None else None)
            self.env[ia] = nia
            ias.append(nia)

        def head(out: list[Stmt]) -> None:  # the carried tiles the other side reads, every iteration
            for ia in st.iter_args:
                owner = tile_side(ia.type)
                if owner == _OTHER[self.side] and self.used_here(ia):
                    self.transfer(ia, owner, out, st.span)
                elif owner == self.side and self.used_on_other(ia):
                    self.transfer(ia, owner, out, st.span)
        body = self.block(_filter_yield(st.body, keep), head)
        cond = self.sub(st.cond) if isinstance(st, WhileStmt) else None
        through = _passed_through(body, ias, cond)
        if through:  # tensors this side only carries along unchanged: the loop gives back the input
            for j in through:
                self.env[st.return_vars[keep[j]]] = ias[j].init  # type: ignore[assignment]
            kept = [j for j in range(len(ias)) if j not in through]
            body = _filter_yield(body, kept)
            ias, keep = [ias[j] for j in kept], [keep[j] for j in kept]
        rvs = tuple(st.return_vars[i] for i in keep)
        if isinstance(st, ForStmt):
            out.append(replace(st, start=self.sub(st.start), stop=self.sub(st.stop), step=self.sub(st.step),
                               iter_args=tuple(ias), body=body, return_vars=rvs))
        else:
            out.append(replace(st, cond=cond, iter_args=tuple(ias), body=body, return_vars=rvs))
        self.after(st.return_vars, keep, out, st.span)

    def if_(self, st: IfStmt, out: list[Stmt]) -> None:
        keep = self.carried(st.return_vars)
        then = self.block(_filter_yield(st.then_body, keep))
        els = self.block(_filter_yield(st.else_body, keep)) if st.else_body is not None else None
        out.append(replace(st, cond=self.sub(st.cond), then_body=then, else_body=els,
                           return_vars=tuple(st.return_vars[i] for i in keep)))
        self.after(st.return_vars, keep, out, st.span)

    def after(self, rvs: tuple[Var, ...], keep: list[int], out: list[Stmt], span) -> None:  # type: ignore[no-untyped-def]
        for i, rv in enumerate(rvs):
            owner = tile_side(rv.type)
            if owner is not None and (self.used_here(rv) if i not in keep else self.used_on_other(rv)):
                self.transfer(rv, owner, out, span)


_NAME = {C: "cube (AIC)", V: "vector (AIV)"}


def _filter_yield(body: SeqStmts, keep: list[int]) -> SeqStmts:
    if not body.stmts or not isinstance(body.stmts[-1], YieldStmt):
        return body
    y = body.stmts[-1]
    kept = (replace(y, values=tuple(y.values[i] for i in keep)),) if keep else ()
    return replace(body, stmts=body.stmts[:-1] + kept)


def _passed_through(body: SeqStmts, ias: list[IterArg], cond: Expr | None) -> list[int]:
    """Positions of the tensor iter_args that `body` yields unchanged and uses nowhere else (a
    tensor only the other side writes in the loop)."""
    last = body.stmts[-1] if body.stmts else None
    if not isinstance(last, YieldStmt):
        return []
    rest = used_vars(SeqStmts(body.stmts[:-1]))
    if cond is not None:
        rest.update(used_vars(EvalStmt(cond)))
    out = []
    for j, ia in enumerate(ias):
        others = [v for k, v in enumerate(last.values) if k != j]
        if isinstance(ia.type, TensorType) and last.values[j] is ia and ia not in rest and \
                all(ia not in used_vars(EvalStmt(v)) for v in others):
            out.append(j)
    return out


def _insert_frees(out: list[Stmt], popped: list[Var], free_op: str) -> None:
    """After the last statement of `out` that uses each popped tile, release its pipe slot."""
    for v in popped:
        last = max((i for i, s in enumerate(out) if v in used_vars(s)), default=None)
        at = last + 1 if last is not None else len(out)
        if out and isinstance(out[-1], (YieldStmt, ReturnStmt)):
            at = min(at, len(out) - 1)  # a yield / return stays last
        out.insert(at, EvalStmt(build_call(free_op, [v], {}, v.span), span=v.span))


class _VectorResultsInVec(IRMutator):
    """A vector op writes its result to Vec, even when InferTileMemorySpace typed it like a cube
    operand (e.g. `exp` of a matmul result in Acc)."""

    def visit_AssignStmt(self, s: AssignStmt) -> Stmt:
        s2 = super().visit_AssignStmt(s)
        t = s2.var.type  # type: ignore[attr-defined]
        if stmt_side(s2) == V and isinstance(t, TileType) and tile_side(t) == C:
            nv = replace(s2.var, var_type=replace(t, memory_space=MemorySpace.Vec))  # type: ignore[attr-defined]
            self.var_map[s.var] = nv  # type: ignore[attr-defined]
            return replace(s2, var=nv)
        return s2


def _kernel(func: Function, side: str, body: SeqStmts, name: str, returned: list[int]) -> Function:
    used = used_vars(body)
    params = [p for p in func.params if p in used]
    fresh = {p: Var(p.name, p.type, span=p.span) for p in params}
    nb = FreshBindings(dict(fresh)).visit_seq(body)
    ftype = FunctionType.AIC if side == C else FunctionType.AIV
    k = Function(name, ftype, tuple(fresh[p] for p in params), (ParamDirection.In,) * len(params),
                 tuple(func.return_types[i] for i in returned), nb, func.level, attrs=func.attrs, span=func.span)
    acc = TensorAccess(lambda n: None)
    acc.visit_function(k)
    dirs = tuple(derived_direction(acc, p) if isinstance(p.type, TensorType) else ParamDirection.In
                 for p in k.params)
    return replace(k, param_directions=dirs)


def _group(func: Function, kernels: list[tuple[Function, list[Var], list[int]]]) -> Function:
    """`func` as a Group function calling each (kernel, its arguments, the results it returns)."""
    acc = TensorAccess(lambda n: None)
    acc.visit_function(func)
    last = func.body.stmts[-1] if func.body.stmts else None
    results = list(last.values) if isinstance(last, ReturnStmt) else []
    rets: list[Expr] = []
    for v in results:
        reg = acc.region_of(v)
        if reg is None or reg.root not in func.params:
            raise CompileError(f"mixed kernel '{func.name}' returns '{getattr(v, 'name', v)}', which is not "
                               f"a tensor parameter it writes", func.span)
        rets.append(reg.root)
    stmts: list[Stmt] = []
    for k, args, returned in kernels:
        rt = k.return_types[0] if len(k.return_types) == 1 else TupleType(k.return_types)
        call = Call(GlobalVar(k.name), tuple(args), (), rt, span=func.span)
        if not returned:
            stmts.append(EvalStmt(call, span=func.span))
            continue
        r = Var(f"{k.name}_out", rt, span=func.span)
        stmts.append(AssignStmt(r, call, span=func.span))
        for j, i in enumerate(returned):
            rets[i] = r if len(returned) == 1 else TupleGetItem(r, j)
    stmts.append(ReturnStmt(tuple(rets), span=func.span))
    return replace(func, func_type=FunctionType.Group, body=SeqStmts(tuple(stmts), span=func.body.span))


class ExpandMixedKernel(Pass):
    """Split InCore kernels that use both cube and vector units into AIC + AIV kernels."""

    name = "ExpandMixedKernel"

    def run(self, program: Program, ctx: PassContext) -> Program:
        taken = set(program.function_names)
        funcs: list[Function] = []
        for f in program.functions:
            sides, pipes = sides_used(f.body) if f.func_type is FunctionType.InCore else (set(), False)
            if pipes or not ({C, V} <= sides or X in sides):
                funcs.append(f)
                continue
            f = _VectorResultsInVec().visit_function(f)
            uses = side_uses(f.body)
            split = split_mode(f)
            kernels, flows = [], set()
            for side, suffix in ((C, "aic"), (V, "aiv")):
                b = _Side(side, uses, split, ctx.soc)
                b.params = set(f.params)
                body = b.block(f.body)
                if side == V:
                    body = split_vector_body(body, split, f.span)
                k = _kernel(f, side, body, _fresh(f"{f.name}_{suffix}", taken), b.returned)
                kernels.append((k, [p for p in f.params if p in used_vars(body)], b.returned))
                flows |= b.flows
            if flows == {"V->C"}:
                kernels.reverse()  # the sender runs first
            funcs.extend(k for k, _, _ in kernels)
            funcs.append(_group(f, kernels))
            names = {k.func_type.name.lower(): k.name for k, _, _ in kernels}
            ctx.records.setdefault("mixed_kernels", {})[f.name] = {**names, "pipes": sorted(flows),
                                                                  "split": split.name}
        if len(funcs) == len(program.functions):
            return program
        return replace(program, functions=tuple(funcs))


def split_mode(func: Function) -> SplitMode:
    """The `pl.split(...)` mode among `func.optimizations` (NONE when there is none)."""
    for name, params in func.optimizations:
        if name == "split":
            return dict(params)["mode"]
    return SplitMode.NONE


def _fresh(name: str, taken: set[str]) -> str:
    k, out = 0, name
    while out in taken:
        k += 1
        out = f"{name}_{k}"
    taken.add(out)
    return out

