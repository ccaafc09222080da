"""A tensor-level K loop written by the user — `acc = acc + pl.matmul(x, y)` — becomes
`acc = pl.tensor.matmul_acc(acc, x, y)`, so the cube unit adds into its accumulator instead of
moving every product to the vector unit to add it there (issue 11 "a tensor-level K loop written by
the user ... is also fused into matmul_acc"). Part of TileTensorBlocks, which applies it to every
InCore function before blocking.

The rewrite, inside a `for` loop with an iter arg `acc`:

    p = pl.tensor.matmul(x, y, out_dtype=None | acc dtype, a_trans=.., b_trans=..)
    acc2 = pl.tensor.add(acc, p)            # or add(p, acc)
    ... yield acc2 (directly, as the iter arg's next value)

becomes `acc2 = pl.tensor.matmul_acc(acc, x, y, a_trans=.., b_trans=..)` when `p` has no other use,
`acc2` and `acc` have the product's shape and the accumulator dtype (FP32 / INT32), and the loop's
initial value of `acc` is itself computed by the cube unit (`pl.matmul` / `pl.matmul_bias` /
`matmul_acc` without a narrower `out_dtype`, or the result of such a fused loop), so the carried
value stays in Acc. Anything else is left as written.
"""

from __future__ import annotations

from dataclasses import replace

from ..ir.expr import Call, Var
from ..ir.function import Function
from ..ir.stmt import AssignStmt, ForStmt, SeqStmts, Stmt, YieldStmt
from ..ir.types import TensorType
from ..ir.visitor import IRMutator, IRVisitor
from ..ops.matmul import acc_dtype
from .analysis import used_vars
from .op_builder import build_call

__all__ = ["fuse_matmul_acc"]

_CUBE_RESULTS = ("tensor.matmul", "tensor.matmul_bias", "tensor.matmul_acc")


class _Defs(IRVisitor):
    """The defining call of every assigned Var, the loops' return vars, and use counts."""

    def __init__(self) -> None:
        self.calls: dict[Var, Call] = {}
        self.loop_results: dict[Var, tuple[ForStmt, int]] = {}

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        if isinstance(s.value, Call):
            self.calls[s.var] = s.value
        super().visit_AssignStmt(s)

    def visit_ForStmt(self, s: ForStmt) -> None:
        for k, rv in enumerate(s.return_vars):
            self.loop_results[rv] = (s, k)
        super().visit_ForStmt(s)


def _in_acc(v: object, defs: _Defs, fused: set[int]) -> bool:
    """Whether tensor value `v` is computed by the cube unit into its accumulator."""
    if not isinstance(v, Var):
        return False
    c = defs.calls.get(v)
    if c is not None:
        return isinstance(c.op, str) and c.op in _CUBE_RESULTS and isinstance(c.type, TensorType) \
            and c.type.dtype is acc_dtype(c.args[-1 if c.op == "tensor.matmul_acc" else 0].type.dtype)  # type: ignore[attr-defined]
    loop = defs.loop_results.get(v)
    return loop is not None and id(loop[0]) in fused


def _same_type(a: TensorType, b: TensorType) -> bool:
    from ..ir.structural import structural_equal

    return structural_equal(a, b, map_free_vars=False)


class _Fuse(IRMutator):
    def __init__(self, defs: _Defs) -> None:
        super().__init__()
        self.defs = defs
        self.fused: set[int] = set()

    def visit_ForStmt(self, s: ForStmt) -> Stmt:
        s = super().visit_ForStmt(s)  # type: ignore[assignment]
        if not isinstance(s.body, SeqStmts) or not s.body.stmts or not isinstance(s.body.stmts[-1], YieldStmt):
            return s
        stmts = list(s.body.stmts)
        yielded = stmts[-1].values  # type: ignore[attr-defined]
        changed = False
        for k, ia in enumerate(s.iter_args):
            if not isinstance(ia.type, TensorType) or not _in_acc(ia.init, self.defs, self.fused):
                continue
            hit = self._match(stmts, ia, yielded[k] if k < len(yielded) else None)
            if hit is None:
                continue
            pos_p, pos_add, new = hit
            stmts[pos_add] = new
            del stmts[pos_p]
            changed = True
        if not changed:
            return s
        out = replace(s, body=replace(s.body, stmts=tuple(stmts)))
        self.fused.add(id(s))
        self.fused.add(id(out))
        for rv in out.return_vars:
            self.defs.loop_results[rv] = (out, 0)
        return out

    def _match(self, stmts: list[Stmt], acc: Var, result: object) -> tuple[int, int, AssignStmt] | None:
        for pos_add, st in enumerate(stmts):
            if not (isinstance(st, AssignStmt) and st.var is result and isinstance(st.value, Call)
                    and st.value.op == "tensor.add" and len(st.value.args) == 2 and acc in st.value.args):
                continue
            other = st.value.args[1] if st.value.args[0] is acc else st.value.args[0]
            pos_p = next((n for n, q in enumerate(stmts[:pos_add]) if isinstance(q, AssignStmt) and q.var is other), None)
            if pos_p is None:
                return None
            prod = stmts[pos_p]
            call = prod.value  # type: ignore[attr-defined]
            if not (isinstance(call, Call) and call.op == "tensor.matmul" and isinstance(call.type, TensorType)
                    and call.type.dtype is acc_dtype(call.args[0].type.dtype)  # type: ignore[attr-defined]
                    and _same_type(st.var.type, acc.type) and _same_type(call.type, acc.type)):  # type: ignore[arg-type]
                return None
            rest = stmts[:pos_p] + stmts[pos_p + 1:]
            if sum(1 for q in rest if other in used_vars(q)) != 1:   # the add is its only use
                return None
            trans = {"a_trans": bool(call.attr("a_trans")), "b_trans": bool(call.attr("b_trans"))}
            fused = build_call("tensor.matmul_acc", [acc, call.args[0], call.args[1]], trans, call.span)
            return pos_p, pos_add, AssignStmt(st.var, fused, span=st.span)
        return None


def fuse_matmul_acc(func: Function) -> Function:
    """`func` with every user K loop `acc = acc + pl.matmul(...)` fused (module docstring)."""
    defs = _Defs()
    defs.visit_function(func)
    return _Fuse(defs).visit_function(func)
