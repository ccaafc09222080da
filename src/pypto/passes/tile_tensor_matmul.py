"""TileTensorBlocks, matmul regions: a tensor-level `pl.matmul` too large for the cube unit's
memories is blocked over M, N and K (issue 11 "pl.matmul ... M/N/K blocking that fits Mat, Left,
Right and Acc of the backend, accumulating over K with matmul_acc on the cube unit").

What it handles: an InCore function whose body starts with

    m = pl.tensor.matmul(a, b, out_dtype=..., a_trans=..., b_trans=...)     # or
    m = pl.tensor.matmul_bias(a, b, bias, a_trans=..., b_trans=...)        # bias: [1, N], FP32

of 2-D parameters `a`, `b` (`bias`), followed by a chain of vector ops on `m` as TileTensorBlocks
takes them (elementwise, scalar, broadcast of `[1, N]` / `[M, 1]` operands, casts, activations; no
reductions) ending in whole-tensor writes of Out parameters. M and N may be `pl.dynamic`; K is
static. When the function, lowered as written, fits the core it is left unchanged. Otherwise each
output block `[bm, bn]` at `(i, j)` is computed as

    acc = pl.tensor.matmul(a[i:i+bm, 0:bk], b[0:bk, j:j+bn])            # or matmul_bias, bias[0, j:j+bn]
    for k in pl.range(bk, K, bk):                                       # only when K > bk
        acc = pl.tensor.matmul_acc(acc, a[i:i+bm, k:k+bk], b[k:k+bk, j:j+bn])   # in Acc, on the cube unit
    m_blk = pl.cast(acc, out_dtype)                                     # only for another out_dtype
    ... the chain on the block ...
    out = pl.assemble(out, result, [i, j])

(transposed operands are sliced as stored: `a[k:k+bk, i:i+bm]` for `a_trans`). Tails (sizes that
are not multiples of a block, primes, dynamic sizes) get `valid_shape`s: `rows_valid` / `cols_valid`
for M / N, `k_valid` for K (the cube unit multiplies only the valid part of K); an M or N of 1
(a single output row / column) is one block of extent 1, whatever `bm` / `bn` are. When every call of
the function is `v = self.f(...)` in an Orchestration function (one `pl.at` region), the blocks
become tasks: the kernel computes the block at new index parameters `i`, `j` and the caller loops
`for i in pl.parallel(0, M, bm): for j in pl.parallel(0, N, bn):`, so the blocks spread over the
cube cores; otherwise the `i` / `j` loops stay in the kernel.

Block shape (`choose_matmul_blocks`, deterministic): `bm`, `bn` from `16 × 2^k` (or the whole
extent rounded up to 16, the L0 fractal) with the largest `bm × bn` whose FP32 accumulator fits Acc,
ties to the squarer block (less DDR traffic per product), then to the wider `bn`; `bk` the largest
`16 × 2^k` below K, or K itself, with the `[bm, bk]` block in Left, the `[bk, bn]` block in
Right and both, twice (double buffering of the K loop), in Mat. The candidate kernel is then lowered
and measured (`block_shape.footprint`, every memory including Vec for the chain); while it does not
fit, the larger of `bm` / `bn` is capped at half (Vec or Acc over: the output block, e.g. a chain on
it, is too large; `bk` is chosen again) or `bk` is halved (Left, Right or Mat over).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.dtype import INDEX, DataType
from ..core.enums import FunctionType, MemorySpace
from ..ir.expr import BinaryExpr, Call, Expr, MakeTuple, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, SeqStmts, Stmt
from ..ir.types import TensorType
from ..ops.matmul import acc_dtype
from .base import PassContext
from .block_shape import BlockPlan, footprint
from .op_builder import build_call
from .tile_tensor_blocks import (
    INDEX_SCALAR,
    Dim,
    Loops,
    _analyse,
    _Blocker,
    _Chain,
    _dims,
    _finish,
    _hoistable,
    _idx,
    _loop,
    _shifted,
    _size,
    _split,
    with_index_params,
)

__all__ = ["plan_matmul", "choose_matmul_blocks", "MatmulPlan"]

_OPS = ("tensor.matmul", "tensor.matmul_bias")
_FRACTAL = 16


@dataclass(frozen=True)
class MatmulPlan:
    """The block shape of a matmul region: `bm × bn` output blocks, K in blocks of `bk`."""

    bm: int
    bn: int
    bk: int


@dataclass
class _Mm:
    stmt: AssignStmt
    a: Var
    b: Var
    bias: Var | None
    a_trans: bool
    b_trans: bool
    M: Dim
    N: Dim
    K: int
    operand: DataType   # dtype of a and b
    acc: DataType       # the accumulator dtype (FP32 / INT32)
    lead: int = 0       # leading statements that slice inputs (`views`) before the matmul
    views: dict[Var, tuple[Var, tuple[Expr, ...]]] = field(default_factory=dict)
    # an operand that is a slice of a parameter -> (the parameter, the slice's offsets)


def _analyse_matmul(func: Function) -> tuple[_Mm, _Chain] | None:
    body = func.body.stmts if isinstance(func.body, SeqStmts) else ()
    views: dict[Var, tuple[Var, tuple[Expr, ...]]] = {}
    lead = 0
    while lead < len(body) and _input_view(body[lead], func):   # operands sliced from inputs
        views[body[lead].var] = (body[lead].value.args[0], tuple(body[lead].value.args[2].elements))  # type: ignore[attr-defined]
        lead += 1
    if len(body) < lead + 3 or not isinstance(body[lead], AssignStmt):
        return None
    s = body[lead]
    call = s.value
    if not (isinstance(call, Call) and call.op in _OPS and isinstance(s.var.type, TensorType)):
        return None
    args = list(call.args)
    if not all(isinstance(x, Var) and (x in func.params or x in views) and isinstance(x.type, TensorType)
               and _dims(x.type) is not None for x in args):
        return None
    a, b = args[0], args[1]
    at, bt = bool(call.attr("a_trans")), bool(call.attr("b_trans"))
    da, db = _dims(a.type), _dims(b.type)  # type: ignore[arg-type]
    (M, K), (_, N) = (da[::-1] if at else da), (db[::-1] if bt else db)  # type: ignore[index]
    if not isinstance(K, int):
        return None
    mm = _Mm(s, a, b, args[2] if len(args) > 2 else None, at, bt, M, N, K,  # type: ignore[arg-type]
             a.type.dtype, acc_dtype(a.type.dtype), lead, views)  # type: ignore[attr-defined]
    chain = _analyse(func, skip=lead + 1, seed={s.var: (M, N)})
    if chain is None or chain.reduces_rows or chain.reduces_cols:
        return None
    return mm, chain


def _input_view(s: Stmt, func: Function) -> bool:
    """`v = pl.tensor.slice(p, shape, offsets)` of a 2-D parameter `p`, static shape, no valid_shape."""
    return (isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tensor.slice"
            and len(s.value.args) == 3 and s.value.args[0] in func.params
            and _dims(s.var.type) is not None  # type: ignore[arg-type]
            and all(isinstance(d, int) for d in _dims(s.var.type)))  # type: ignore[arg-type, union-attr]


def _r16(n: int) -> int:
    return -(-n // _FRACTAL) * _FRACTAL


def _candidates(extent: int, cap: int, exact: bool = False) -> list[int]:
    """`16 × 2^k` below the extent rounded up to 16, then that rounded extent (the extent itself
    when `exact`: a K block never reaches past K, as a block at offset 0 may not); none above `cap`."""
    whole = extent if exact else _r16(extent)
    out, v = [], _FRACTAL
    while v < whole:
        out.append(v)
        v *= 2
    return [c for c in out + [whole] if c <= cap]


def choose_matmul_blocks(M: int, N: int, K: int, operand_bytes: int, acc_bytes: int,
                         capacity: dict[MemorySpace, int], max_bm: int = 1 << 16,
                         max_bn: int = 1 << 16) -> MatmulPlan:
    """The analytic choice of blocks (module docstring "Block shape"), `bm` at most `max_bm` and
    `bn` at most `max_bn`; extents of dynamic dimensions count as unbounded."""
    acc_cap = capacity[MemorySpace.Acc]
    best: tuple[int, int] | None = None
    for bm in _candidates(M, max_bm):
        for bn in _candidates(N, max_bn):
            if bm * bn * acc_bytes > acc_cap:
                continue
            key = (bm * bn, -abs(bm - bn), bn)
            if best is None or key > (best[0] * best[1], -abs(best[0] - best[1]), best[1]):
                best = (bm, bn)
    bm, bn = best or (_FRACTAL, _FRACTAL)
    ks = _candidates(K, 1 << 16, exact=True)

    def fits(bk: int) -> bool:
        double = 2 if bk < K else 1
        return (bm * bk * operand_bytes <= capacity[MemorySpace.Left]
                and bk * bn * operand_bytes <= capacity[MemorySpace.Right]
                and (bm * bk + bk * bn) * operand_bytes * double <= capacity[MemorySpace.Mat])
    bk = max((k for k in ks if fits(k)), default=_FRACTAL)
    return MatmulPlan(bm, bn, bk)


def _slice(src: Var, shape: tuple[int, int], offsets: tuple[Expr, Expr],
           valid: tuple[Expr | None, Expr | None], out: list[Stmt], name: str,
           views: dict[Var, tuple[Var, tuple[Expr, ...]]] | None = None) -> Var:
    """`name = pl.tensor.slice(src, shape, offsets[, valid_shape])` appended to `out`; a `src`
    in `views` (a slice of an input) is sliced from that input at the offsets added up."""
    if views and src in views:
        src, base = views[src]
        offsets = (_shifted(base[0], offsets[0]), _shifted(base[1], offsets[1]))
    args: list[Expr] = [src, MakeTuple(tuple(_idx(d) for d in shape)), MakeTuple(offsets)]
    if valid[0] is not None or valid[1] is not None:
        args.append(MakeTuple((valid[0] or _idx(shape[0]), valid[1] or _idx(shape[1]))))
    call = build_call("tensor.slice", args, {}, src.span)
    v = Var(name, call.type, span=src.span)
    out.append(AssignStmt(v, call, span=src.span))
    return v


def _operands(mm: _Mm, plan: MatmulPlan, bi: tuple[Expr, Expr | None], bj: tuple[Expr, Expr | None],
              k: Expr, k_valid: Expr | None, out: list[Stmt], suffix: str) -> tuple[Var, Var]:
    """The blocks of `a` and `b` for output block rows `bi` / columns `bj` ((offset, valid)) at K
    offset `k`, sliced as the operands are stored (transposed ones the other way round)."""
    (i, vi), (j, vj) = bi, bj
    if mm.a_trans:
        a = _slice(mm.a, (plan.bk, plan.bm), (k, i), (k_valid, vi), out, f"{mm.a.name}_{suffix}", mm.views)
    else:
        a = _slice(mm.a, (plan.bm, plan.bk), (i, k), (vi, k_valid), out, f"{mm.a.name}_{suffix}", mm.views)
    if mm.b_trans:
        b = _slice(mm.b, (plan.bn, plan.bk), (j, k), (vj, k_valid), out, f"{mm.b.name}_{suffix}", mm.views)
    else:
        b = _slice(mm.b, (plan.bk, plan.bn), (k, j), (k_valid, vj), out, f"{mm.b.name}_{suffix}", mm.views)
    return a, b


def _block(mm: _Mm, chain: _Chain, plan: MatmulPlan, func: Function, i: Expr, j: Expr,
           carried: dict[Var, Var]) -> tuple[list[Stmt], dict[Var, Expr]]:
    """The statements of output block (`i`, `j`) (module docstring) and the chain's block values."""
    chain_stmts, _, _ = _split(func)
    b = _Blocker(chain, BlockPlan(plan.bm, plan.bn), i, j, carried)
    bm, oi, vi = b.extent(0, mm.M)
    bn, oj, vj = b.extent(1, mm.N)
    # an extent of 1 (a single output row or column) is one block of that size, as the chain
    # blocks it (`_Blocker.extent`): the operands are sliced to it, never to the 16-row plan block
    plan = MatmulPlan(bm, bn, plan.bk)
    trans = {"a_trans": mm.a_trans, "b_trans": mm.b_trans}
    a0, b0 = _operands(mm, plan, (oi, vi), (oj, vj), _idx(0), None, b.out, "k0")
    span = mm.stmt.span
    if mm.bias is not None:
        bias = _slice(mm.bias, (1, plan.bn), (_idx(0), oj), (None, vj), b.out, f"{mm.bias.name}_blk", mm.views)
        first = build_call("tensor.matmul_bias", [a0, b0, bias], trans, span)
    else:
        first = build_call("tensor.matmul", [a0, b0], {"out_dtype": None, **trans}, span)
    acc = Var("acc", first.type, span=span)
    b.out.append(AssignStmt(acc, first, span=span))
    if mm.K > plan.bk:
        def k_body(k: Var, ias: list[Var]):  # type: ignore[no-untyped-def]
            stmts: list[Stmt] = []
            kv: Expr | None = None
            if mm.K % plan.bk:
                kv = Var("k_valid", INDEX_SCALAR, span=span)
                rest = BinaryExpr("sub", _idx(mm.K), k, INDEX)
                stmts.append(AssignStmt(kv, BinaryExpr("min", _idx(plan.bk), rest, INDEX), span=span))
            ak, bk = _operands(mm, plan, (oi, vi), (oj, vj), k, kv, stmts, "k")
            nxt = build_call("tensor.matmul_acc", [ias[0], ak, bk], trans, span)
            nv = Var("acc", nxt.type, span=span)
            stmts.append(AssignStmt(nv, nxt, span=span))
            return stmts, [nv]
        loop, rvs = _loop("k", mm.K, plan.bk, [acc], span, k_body, start=plan.bk)
        b.out.append(loop)
        acc = rvs[0]
    result: Expr = acc
    want = mm.stmt.var.type.dtype  # type: ignore[attr-defined]
    if want is not mm.acc:
        cast = build_call("tensor.cast", [acc], {"target_type": want}, span)
        result = Var(mm.stmt.var.name, cast.type, span=mm.stmt.var.span)
        b.out.append(AssignStmt(result, cast, span=span))  # type: ignore[arg-type]
    b.map[mm.stmt.var] = result
    for s in chain_stmts[mm.lead + 1:]:
        b.stmt(s)
    return b.out, b.map


def _written(func: Function, blocks: dict[Var, Expr], outs: list[Var]) -> list[Var]:
    last = {s.value.args[0]: blocks[s.var] for s in _split(func)[0] if s.value.op == "tensor.assemble"}  # type: ignore[attr-defined]
    return [last[o] for o in outs]  # type: ignore[misc]


def _loops(mm: _Mm, plan: MatmulPlan) -> Loops:
    """The block loops over M and N, leaving out a dimension that one block covers."""
    return [(name, ext, step) for name, ext, step in (("i", mm.M, plan.bm), ("j", mm.N, plan.bn))
            if not (isinstance(ext, int) and ext <= step)]


def _build(func: Function, mm: _Mm, chain: _Chain, plan: MatmulPlan, hoist: bool) -> Function:
    """The blocked function: one block at index parameters (`hoist`) or the block loops inside."""
    chain_stmts, outs, ret = _split(func)
    loops = _loops(mm, plan)

    def offsets(idx: list[Var]) -> tuple[Expr, Expr]:
        at = {name: v for (name, _, _), v in zip(loops, idx)}
        return at.get("i", _idx(0)), at.get("j", _idx(0))

    def one(idx: list[Var], carried: list[Var]):  # type: ignore[no-untyped-def]
        stmts, blocks = _block(mm, chain, plan, func, *offsets(idx), dict(zip(outs, carried)))
        return stmts, _written(func, blocks, outs)

    if hoist:
        return with_index_params(func, lambda idx: one(idx, outs), tuple(name for name, _, _ in loops))
    span = func.span

    def nest(level: int, idx: list[Var], carried: list[Var]):  # type: ignore[no-untyped-def]
        if level == len(loops):
            return one(idx, carried)
        name, ext, step = loops[level]
        loop, rvs = _loop(name, ext, step, carried, span, lambda v, ias: nest(level + 1, idx + [v], ias))
        return [loop], rvs
    stmts, written = nest(0, [], outs)
    return _finish(func, chain_stmts, outs, ret, written, stmts)


def plan_matmul(func: Function, program: Program, ctx: PassContext) -> tuple[Function, Loops] | None:
    """The blocked form of `func` when it is a matmul region too large for the core (module
    docstring), with the block loops its callers run (empty when they stay in the kernel); None
    when `func` is left to the other rules."""
    if func.func_type is not FunctionType.InCore:
        return None
    found = _analyse_matmul(func)
    if found is None:
        return None
    mm, chain = found
    capacity = ctx.soc.capacity_of
    whole = footprint(func, ctx)
    if whole is not None and whole.fits(capacity, double_buffer=False):
        return None
    hoist = _hoistable(func, program)
    spaces = (MemorySpace.Acc, MemorySpace.Left, MemorySpace.Right, MemorySpace.Mat)
    caps = {s: capacity(s) for s in spaces}
    M, N = _size(mm.M), _size(mm.N)
    max_bm = max_bn = 1 << 16
    plan = choose_matmul_blocks(M, N, mm.K, mm.operand.get_byte(), mm.acc.get_byte(), caps)
    while True:
        cand = _build(func, mm, chain, plan, hoist)
        fp = footprint(cand, ctx)
        over = fp.over(capacity, double_buffer=False) if fp is not None else list(spaces)
        if not over:
            break
        if MemorySpace.Vec in over or MemorySpace.Acc in over:   # the output block: a smaller one
            if max(plan.bm, plan.bn) <= _FRACTAL:
                return None
            if plan.bm >= plan.bn:
                max_bm = plan.bm // 2
            else:
                max_bn = plan.bn // 2
            plan = choose_matmul_blocks(M, N, mm.K, mm.operand.get_byte(), mm.acc.get_byte(), caps,
                                        max_bm, max_bn)
        elif plan.bk > _FRACTAL:                                  # the operand blocks: a shorter K
            plan = MatmulPlan(plan.bm, plan.bn, max(_FRACTAL, plan.bk // 2))
        else:
            return None
    return cand, (_loops(mm, plan) if hoist else [])
