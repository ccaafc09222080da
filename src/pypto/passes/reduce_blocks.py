"""Blocked accumulation of row reductions for TileTensorBlocks: a chain whose rows are too long for
one block (issue 11 "a reduction over a dimension too long for one tile becomes a blocked
accumulation"; SPEC §3 "Reductions").

When not even `min(R, 8)` whole rows of a chain with row reductions fit the core, the row block at
row `i` runs the chain in *passes* over column blocks of `bc` columns, one pass per row reduction
and a last pass for the stores:

    # pass k: the reduction r_k = row_<op>(src), with everything it needs recomputed per block
    part = row_<op>(src on the block at [i, 0])          # first column block, peeled
    for j, (acc,) in pl.range(bc, C, bc, init_values=(part,)):
        acc = <combine>(acc, row_<op>(src on the block at [i, j]))
    ... [R, 1] statements that only need reduction results run here, once per row block ...
    # last pass: the stores
    for j in pl.range(0, C, bc):
        out = pl.assemble(out, result on the block at [i, j], [i, j])

`<combine>` is the associative operation of the reduction (`COMBINE`: sum -> add, max -> maximum,
min -> minimum, prod -> mul); argmax / argmin do not combine this way and keep the chain as written.
A tail column block carries `valid_shape`, and a reduction reduces only the valid part (SPEC §3), so
the padding never enters a result. The wide values a pass needs are recomputed from the inputs in
that pass (loaded again): the result is the same math as the chain as written, in the same order
per element — a softmax is the three-pass softmax (max, then the sum of `exp(x - max)`, then the
quotient), a LayerNorm the two-pass mean / variance — so it is as accurate as the unblocked chain.
"""

from __future__ import annotations

from ..ir.expr import Expr, Var
from ..ir.stmt import AssignStmt, Stmt
from ..ir.types import TensorType
from ..ops import get_op
from .block_shape import BlockPlan
from .op_builder import build_call
from .tile_tensor_blocks import _Blocker, _Chain, _idx, _loop, _stores

__all__ = ["COMBINE", "can_split_reduced", "row_block_in_passes"]

COMBINE = {"tensor.row_sum": "tensor.add", "tensor.row_max": "tensor.maximum",
           "tensor.row_min": "tensor.minimum", "tensor.row_prod": "tensor.mul"}


def can_split_reduced(chain_stmts: list[AssignStmt]) -> bool:
    """True when every reduction of the chain combines across column blocks (`COMBINE`)."""
    return all(s.value.op in COMBINE for s in chain_stmts  # type: ignore[attr-defined]
               if get_op(s.value.op).has_trait("reduction"))  # type: ignore[attr-defined, arg-type]


def _producers(chain_stmts: list[AssignStmt]) -> dict[Var, AssignStmt]:
    return {s.var: s for s in chain_stmts}


def _slice_of(roots: list[Expr], prod: dict[Var, AssignStmt], narrow: set[Var]) -> set[AssignStmt]:
    """The wide statements (column-blocked: neither a reduction nor an [R, 1] value) computing
    `roots`; [R, 1] values and parameters are inputs of the pass."""
    need: set[AssignStmt] = set()
    todo = [r for r in roots if isinstance(r, Var)]
    while todo:
        v = todo.pop()
        s = prod.get(v)
        if s is None or v in narrow or s in need:
            continue
        need.add(s)
        todo.extend(a for a in s.value.args if isinstance(a, Var) and isinstance(a.type, TensorType))  # type: ignore[attr-defined]
    return need


def row_block_in_passes(chain: _Chain, plan: BlockPlan, chain_stmts: list[AssignStmt], outs: list[Var],
                        i: Expr, carried: list[Var], span) -> tuple[list[Stmt], list[Expr]]:  # type: ignore[no-untyped-def]
    """The statements of the row block at row `i` as passes over column blocks (module docstring),
    writing Out parameter `outs[k]` through `carried[k]`; and the written values."""
    prod = _producers(chain_stmts)
    stores = _stores(chain_stmts)
    narrow = {s.var for s in chain_stmts if s not in stores and chain.values[s.var][1] == 1}
    row = _Blocker(chain, plan, i, _idx(0), dict(zip(outs, carried)))
    row.extent(0, chain.rows)            # the rows' valid size, shared by every pass
    out: list[Stmt] = row.out

    def block(j: Expr, wanted: list[AssignStmt]) -> _Blocker:
        b = _Blocker(chain, plan, i, j, {})
        b.valid = {0: row.valid[0]} if 0 in row.valid else {}
        b.map = dict(row.map)            # [R, 1] values: computed once per row block
        need = _slice_of([a for s in wanted for a in s.value.args], prod, narrow)  # type: ignore[attr-defined]
        for s in chain_stmts:
            if s in need:
                b.stmt(s)
        return b

    for s in chain_stmts:
        if s in stores:
            continue
        if s.var not in narrow:
            continue                     # wide: computed in the passes that need it
        op = s.value.op  # type: ignore[attr-defined]
        if op not in COMBINE or chain.values[s.value.args[0]][1] == 1:  # type: ignore[attr-defined]
            row.stmt(s)                  # an [R, 1] statement: once per row block
            continue
        first = block(_idx(0), [s])
        first.stmt(s)
        out.extend(first.out)
        part0: Var = first.map[s.var]  # type: ignore[assignment]

        def acc_body(j: Expr, ias: list[Var], s: AssignStmt = s, op: str = op):  # type: ignore[no-untyped-def]
            b = block(j, [s])
            b.stmt(s)
            comb = build_call(COMBINE[op], [ias[0], b.map[s.var]], {}, s.span)
            acc = Var(f"{s.var.name}_acc", comb.type, span=s.var.span)
            b.out.append(AssignStmt(acc, comb, span=s.span))
            return b.out, [acc]

        loop, (rv,) = _loop("j", chain.cols, plan.cols, [part0], span, acc_body, start=plan.cols)
        out.append(loop)
        row.map[s.var] = rv

    wide_stores = [s for s in stores if s.value.args[1] not in narrow]  # type: ignore[attr-defined]
    cur = dict(zip(outs, carried))
    for s in stores:
        if s not in wide_stores:         # an [R, 1] result: stored once per row block
            row.carried = cur
            row.stmt(s)
            cur[s.value.args[0]] = row.map[s.var]  # type: ignore[attr-defined, index]
    if wide_stores:
        def last(j: Expr, ias: list[Var]):  # type: ignore[no-untyped-def]
            b = block(j, wide_stores)
            b.carried = dict(zip(outs, ias))
            for s in wide_stores:
                b.stmt(s)
                b.carried[s.value.args[0]] = b.map[s.var]  # type: ignore[attr-defined, index, assignment]
            return b.out, [b.carried[o] for o in outs]

        loop, rvs = _loop("j", chain.cols, plan.cols, [cur[o] for o in outs], span, last)  # type: ignore[misc]
        out.append(loop)
        cur = dict(zip(outs, rvs))
    return out, [cur[o] for o in outs]
