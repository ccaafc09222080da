"""Blocked accumulation of column reductions for TileTensorBlocks (issue 11 "a reduction over a
dimension too long for one tile becomes a blocked accumulation"; SPEC §3 "Reductions").

A chain whose results are column reductions (`col_sum`, `col_max`, `col_min`, `col_prod`: `[R, C]`
-> `[1, C]`) of an elementwise chain, possibly followed by `[1, C]` statements, is blocked along the
kept dimension C — each column block an independent task — and, inside the block at column `j`,
accumulated over row blocks of `br` rows:

    part = col_<op>(src on the block at [0, j])          # first row block, peeled
    for i, (acc,) in pl.range(br, R, br, init_values=(part,)):
        acc = <combine>(acc, col_<op>(src on the block at [i, j]))
    ... [1, C] statements on the accumulated results ...
    out = pl.assemble(out, result, [0, j])                # one store per column block

`<combine>` is the reduction's associative operation (`COMBINE`: sum -> add, max -> maximum,
min -> minimum, prod -> mul); the partial result stays on chip (Vec) across the row loop. The last
row block carries `valid_shape` (`rows_valid`, also for a dynamic R: one compile serves every
size) and a reduction reduces only the valid part (SPEC §3), so the padding never enters a result.
All reductions of the chain share the row loop (each input loaded once per row block).

Handled: every reduction of the chain a column reduction in `COMBINE`; the wide (`[R, C]` / `[R, 1]`)
statements use only inputs and wide values; every store writes a `[1, C]` value. Anything else
(a column argmax, a row reduction beside it, a wide value using a column result) is left as written.
"""

from __future__ import annotations

from ..ir.expr import Expr, Var
from ..ir.function import Function
from ..ir.stmt import AssignStmt, Stmt
from ..ops import get_op
from .block_shape import BlockPlan
from .op_builder import build_call
from .tile_tensor_blocks import _Blocker, _Chain, _idx, _loop, _split, _stores, with_index_params

__all__ = ["COMBINE", "col_reducible", "col_block", "rebuild_cols", "rebuild_one_col_block"]

COMBINE = {"tensor.col_sum": "tensor.add", "tensor.col_max": "tensor.maximum",
           "tensor.col_min": "tensor.minimum", "tensor.col_prod": "tensor.mul"}


def _is_reduction(s: AssignStmt) -> bool:
    return get_op(s.value.op).has_trait("reduction")  # type: ignore[attr-defined, arg-type]


def _after(chain_stmts: list[AssignStmt]) -> set[Var]:
    """The reductions and the values computed from them (the statements after the row loop)."""
    after: set[Var] = set()
    for s in chain_stmts:
        if _is_reduction(s) or any(a in after for a in s.value.args if isinstance(a, Var)):  # type: ignore[attr-defined]
            after.add(s.var)
    return after


def col_reducible(chain: _Chain, chain_stmts: list[AssignStmt]) -> bool:
    """True when the chain is one this module blocks (module docstring "Handled")."""
    if chain.reduces_rows:
        return False
    after = _after(chain_stmts)
    computed = {s.var for s in chain_stmts}
    for s in chain_stmts:
        call = s.value
        args = [a for a in call.args if isinstance(a, Var) and a in chain.values]  # type: ignore[attr-defined]
        if get_op(call.op).lowering == "store":  # type: ignore[attr-defined, arg-type]
            if call.args[1] not in after:  # type: ignore[attr-defined]
                return False
        elif _is_reduction(s):
            if call.op not in COMBINE or any(a in after for a in args):  # type: ignore[attr-defined]
                return False
        elif s.var in after:             # once per column block: [1, C], of results and inputs only
            if chain.values[s.var][0] != 1 or any(a not in after and (a in computed or chain.values[a][0] != 1)
                                                  for a in args):
                return False
    return True


def col_block(chain: _Chain, plan: BlockPlan, chain_stmts: list[AssignStmt], outs: list[Var], j: Expr,
              carried: list[Var], span) -> tuple[list[Stmt], list[Expr]]:  # type: ignore[no-untyped-def]
    """The statements of the column block at column `j` (module docstring), writing Out parameter
    `outs[k]` through `carried[k]`; and the written values."""
    stores = _stores(chain_stmts)
    reds = [s for s in chain_stmts if s not in stores and _is_reduction(s)]
    after = _after(chain_stmts)
    wide = [s for s in chain_stmts if s not in stores and s.var not in after]
    col = _Blocker(chain, plan, _idx(0), j, dict(zip(outs, carried)))
    col.extent(1, chain.cols)            # the columns' valid size, shared by every row block
    out: list[Stmt] = col.out

    def block(i: Expr) -> _Blocker:
        b = _Blocker(chain, plan, i, j, {})
        b.valid = {1: col.valid[1]} if 1 in col.valid else {}
        for s in wide + reds:
            b.stmt(s)
        return b

    first = block(_idx(0))
    out.extend(first.out)

    def acc_body(i: Expr, ias: list[Var]):  # type: ignore[no-untyped-def]
        b = block(i)
        accs = []
        for s, it in zip(reds, ias):
            comb = build_call(COMBINE[s.value.op], [it, b.map[s.var]], {}, s.span)  # type: ignore[attr-defined, index]
            acc = Var(f"{s.var.name}_acc", comb.type, span=s.var.span)
            b.out.append(AssignStmt(acc, comb, span=s.span))
            accs.append(acc)
        return b.out, accs

    loop, rvs = _loop("i", chain.rows, plan.rows, [first.map[s.var] for s in reds], span, acc_body,  # type: ignore[misc]
                      start=plan.rows)
    out.append(loop)
    col.map.update({s.var: rv for s, rv in zip(reds, rvs)})
    for s in chain_stmts:                # the [1, C] statements and the stores, once per column block
        if s in wide or s in reds:
            continue
        col.stmt(s)
        if s in stores:
            col.carried[s.value.args[0]] = col.map[s.var]  # type: ignore[attr-defined, index, assignment]
    return out, [col.carried[o] for o in outs]


def rebuild_cols(func: Function, chain: _Chain, plan: BlockPlan) -> Function:
    """`func` with the column-block loop inside it (column blocks sequential on one core)."""
    from .tile_tensor_blocks import _finish

    chain_stmts, outs, ret = _split(func)

    def cols(j: Expr, ias: list[Var]):  # type: ignore[no-untyped-def]
        return col_block(chain, plan, chain_stmts, outs, j, ias, func.span)

    loop, rvs = _loop("j", chain.cols, plan.cols, outs, func.span, cols)
    return _finish(func, chain_stmts, outs, ret, rvs, [loop])


def rebuild_one_col_block(func: Function, chain: _Chain, plan: BlockPlan) -> Function:
    """`func` computing the column block at its new last parameter `j` (a `pl.Scalar[pl.INDEX]`);
    the callers loop over `j` (`_Hoist`)."""
    chain_stmts, outs, _ = _split(func)
    return with_index_params(
        func, lambda idx: col_block(chain, plan, chain_stmts, outs, idx[0], outs, func.span), ("j",))  # type: ignore[arg-type]
