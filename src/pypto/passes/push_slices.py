"""Slices of values computed in a tensor-level region, moved onto the region's inputs (issue 11:
`c = pl.matmul(a, b); d = c[16:32, :]` in a region too large for one core). Part of
TileTensorBlocks, which applies it to an InCore function that holds such a slice and does not fit
the core as written, before blocking: afterwards the function is a chain over slices of its DDR
inputs, which the blocking takes (a slice of a parameter is a block-sized view at a shifted offset).

The rewrite of `d = pl.tensor.slice(e, shape, offsets)` (2-D, static `shape`, no `valid_shape`),
recursively through the statement computing `e`:

- positionwise / elementwise ops (arithmetic, scalar ops, casts, compares, selects, activations)
  and broadcasts: `f(x, y)[s] = f(x[s], y[s])`, where an operand broadcast along an axis (extent 1
  there, the result's extent not 1) keeps that axis whole (`[R, 1]` operands are sliced by rows
  only, `[1, C]` ones by columns only);
- `pl.matmul` / `pl.matmul_bias`: `(a @ b)[r, c] = a[r, :] @ b[:, c]` (operands stored transposed
  are sliced the other way round; a bias by columns);
- a slice of a slice: the offsets add up;
- a parameter: the slice stays (a view of DDR).

Anything else (a slice through a reduction, along a reduced dimension, of a loop result, ...) keeps
its slice of the computed value; `still_sliced` names it so that the caller can say what to do.
Values left without a use are dropped. Semantics: `language_guide` "pl.slice" (a window of a
tensor), SPEC §1 (the compiler places data at the Tensor level).
"""

from __future__ import annotations

from dataclasses import replace

from ..core.dtype import INDEX
from ..ir.expr import Call, ConstInt, Expr, MakeTuple, Var
from ..ir.function import Function
from ..ir.stmt import AssignStmt, SeqStmts, Stmt
from ..ir.types import TensorType
from ..ir.visitor import IRMutator
from ..ops import get_op
from .analysis import used_vars
from .op_builder import build_call
from .tile_tensor_blocks import _shifted

__all__ = ["push_slices", "computed_slices"]

_MATMUL = ("tensor.matmul", "tensor.matmul_bias")
_CHAIN_TRAITS = frozenset({"elementwise", "positionwise"})


def _is_slice(s: Stmt) -> bool:
    """`v = pl.tensor.slice(src, shape, offsets)`: 2-D, static shape, no valid_shape."""
    if not (isinstance(s, AssignStmt) and isinstance(s.value, Call) and s.value.op == "tensor.slice"):
        return False
    args = s.value.args
    return (len(args) == 3 and isinstance(args[0], Var) and isinstance(args[0].type, TensorType)
            and len(args[0].type.shape) == 2 and isinstance(args[1], MakeTuple)
            and all(isinstance(d, ConstInt) for d in args[1].elements))


def computed_slices(func: Function) -> list[AssignStmt]:
    """The slice statements of `func`'s body whose source is computed in the body (not a parameter)."""
    body = func.body.stmts if isinstance(func.body, SeqStmts) else ()
    return [s for s in body if isinstance(s, AssignStmt) and isinstance(s.value, Call)
            and s.value.op == "tensor.slice" and s.value.args[0] not in func.params]


def _whole_axes(a: Var, result: Var) -> tuple[bool, bool]:
    """Per axis, whether operand `a` of the op computing `result` is taken whole by a slice of
    the result: broadcast along it (extent 1, the result's not) or reduced along it (the result's
    extent 1, `a`'s not). Other axes are sliced like the result."""
    def one(d: Expr) -> bool:
        return isinstance(d, ConstInt) and d.value == 1
    return tuple(one(x) != one(r) for x, r in zip(a.type.shape, result.type.shape))  # type: ignore[attr-defined, return-value]


class _Pusher:
    def __init__(self, defs: dict[Var, AssignStmt], names: set[str], params: set[Var]) -> None:
        self.defs, self.names, self.params = defs, names, params
        self.out: list[Stmt] = []
        self.memo: dict[tuple, Var] = {}   # (value, shape, offsets) -> its slice, computed once

    def _name(self, base: str) -> str:
        k = 0
        while f"{base}_s{k}" in self.names:
            k += 1
        self.names.add(f"{base}_s{k}")
        return f"{base}_s{k}"

    def _emit(self, call: Call, base: str, span) -> Var:  # type: ignore[no-untyped-def]
        v = Var(self._name(base), call.type, span=span)
        self.out.append(AssignStmt(v, call, span=span))
        return v

    def pushable(self, v: Var) -> bool:
        """True when a slice of `v` can move onto inputs (module docstring)."""
        s = self.defs.get(v)
        if s is None:
            return v in self.params
        op = s.value.op  # type: ignore[attr-defined]
        if op in _MATMUL and not all(isinstance(d, ConstInt) for a in s.value.args[:2]  # type: ignore[attr-defined]
                                     for d in a.type.shape):   # a static K (operands sliced whole along it)
            return False
        if op in _MATMUL or _is_slice(s):
            return all(self.pushable(a) for a in s.value.args if isinstance(a, Var)  # type: ignore[attr-defined]
                       and isinstance(a.type, TensorType))
        spec = get_op(op)
        if not (spec.traits & _CHAIN_TRAITS or spec.has_trait("reduction")) or "vector" not in spec.traits:
            return False
        tensors = [a for a in s.value.args if isinstance(a, Var) and isinstance(a.type, TensorType)]  # type: ignore[attr-defined]
        return all(len(a.type.shape) == 2 and all(  # type: ignore[attr-defined]
            isinstance(a.type.shape[k], ConstInt) for k in range(2) if w[k])  # type: ignore[attr-defined]
            and self.pushable(a) for a in tensors for w in [_whole_axes(a, v)])

    def slice(self, v: Var, shape: tuple[int, int], offsets: tuple[Expr, Expr], span) -> Var:  # type: ignore[no-untyped-def]
        """A value equal to `v[offsets : offsets + shape]`, statements appended to `out`."""
        key = (v, shape, tuple(o.value if isinstance(o, ConstInt) else id(o) for o in offsets))
        if key not in self.memo:
            self.memo[key] = self._slice(v, shape, offsets, span)
        return self.memo[key]

    def _slice(self, v: Var, shape: tuple[int, int], offsets: tuple[Expr, Expr], span) -> Var:  # type: ignore[no-untyped-def]
        full = tuple(d.value if isinstance(d, ConstInt) else None for d in v.type.shape)  # type: ignore[attr-defined]
        if full == shape and all(isinstance(o, ConstInt) and o.value == 0 for o in offsets):
            return v
        s = self.defs.get(v)
        if s is None:
            call = build_call("tensor.slice", [v, MakeTuple(tuple(ConstInt(d, INDEX) for d in shape)),
                                               MakeTuple(offsets)], {}, span)
            return self._emit(call, v.name, span)
        call: Call = s.value  # type: ignore[assignment]
        if _is_slice(s):
            src, _, inner = call.args
            return self.slice(src, shape, tuple(_shifted(a, b) for a, b in zip(inner.elements, offsets)), span)  # type: ignore[arg-type, attr-defined]
        if call.op in _MATMUL:
            return self._matmul(s, shape, offsets, span)
        args: list[Expr] = []
        for a in call.args:
            if not (isinstance(a, Var) and isinstance(a.type, TensorType)):
                args.append(a)
                continue
            whole = _whole_axes(a, v)
            sh = [a.type.shape[k].value if whole[k] else shape[k] for k in range(2)]  # type: ignore[attr-defined]
            of = [ConstInt(0, INDEX) if whole[k] else offsets[k] for k in range(2)]
            args.append(self.slice(a, (sh[0], sh[1]), (of[0], of[1]), span))
        return self._emit(build_call(call.op, args, dict(call.kwargs), call.span), v.name, span)  # type: ignore[arg-type]

    def _matmul(self, s: AssignStmt, shape: tuple[int, int], offsets: tuple[Expr, Expr], span) -> Var:  # type: ignore[no-untyped-def]
        call: Call = s.value  # type: ignore[assignment]
        a, b = call.args[0], call.args[1]
        at, bt = bool(call.attr("a_trans")), bool(call.attr("b_trans"))
        zero = ConstInt(0, INDEX)
        ka = a.type.shape[0 if at else 1].value  # type: ignore[attr-defined]
        kb = b.type.shape[1 if bt else 0].value  # type: ignore[attr-defined]
        a_s = self.slice(a, (ka, shape[0]) if at else (shape[0], ka),  # type: ignore[arg-type]
                         (zero, offsets[0]) if at else (offsets[0], zero), span)
        b_s = self.slice(b, (shape[1], kb) if bt else (kb, shape[1]),  # type: ignore[arg-type]
                         (offsets[1], zero) if bt else (zero, offsets[1]), span)
        args: list[Expr] = [a_s, b_s]
        if len(call.args) > 2:   # bias [1, N]
            args.append(self.slice(call.args[2], (1, shape[1]), (zero, offsets[1]), span))  # type: ignore[arg-type]
        return self._emit(build_call(call.op, args, dict(call.kwargs), call.span), s.var.name, span)  # type: ignore[arg-type]


def push_slices(func: Function) -> Function:
    """`func` with every slice of a computed value moved onto its inputs where the rewrite applies
    (module docstring); `func` itself when none does. Only straight-line bodies are rewritten."""
    if not isinstance(func.body, SeqStmts) or not computed_slices(func):
        return func
    body = list(func.body.stmts)
    defs = {s.var: s for s in body if isinstance(s, AssignStmt) and isinstance(s.value, Call)
            and isinstance(s.value.op, str)}
    names = {p.name for p in func.params} | {s.var.name for s in body if isinstance(s, AssignStmt)}
    new: list[Stmt] = []
    whole: dict[Var, Var] = {}   # a slice covering all of a value -> that value
    changed = False
    for s in body:
        if isinstance(s, AssignStmt) and _is_slice(s) and s.value.args[0] in defs:  # type: ignore[attr-defined]
            p = _Pusher(defs, names, set(func.params))
            if p.pushable(s.value.args[0]):  # type: ignore[attr-defined]
                src, shape, offsets = s.value.args  # type: ignore[attr-defined]
                v = p.slice(src, tuple(d.value for d in shape.elements), tuple(offsets.elements), s.span)
                last = _rename(p.out, v, s)
                new.extend(p.out)
                if last is None:   # the whole value: its uses read it directly
                    whole[s.var] = v
                else:
                    new.append(last)
                changed = True
                continue
        new.append(s)
    if not changed:
        return func
    if whole:
        new = [IRMutator(dict(whole)).visit_stmt(x) for x in new]
    return replace(func, body=SeqStmts(tuple(_dead_dropped(new)),
                                       span=func.body.span))


def _rename(out: list[Stmt], v: Var, s: AssignStmt) -> Stmt | None:
    """Make the slice's own variable name the rewritten value: the last emitted statement (which
    computes `v`) takes `s.var`; None when nothing was emitted (`v`: the whole value)."""
    if out and isinstance(out[-1], AssignStmt) and out[-1].var is v:
        last = out.pop()
        out_stmt = AssignStmt(s.var, last.value, span=last.span)   # type: ignore[attr-defined]
        return out_stmt
    return None


def _dead_dropped(body: list[Stmt]) -> list[Stmt]:
    """`body` without the tensor-op assignments whose value has no use (stores kept)."""
    keep = list(body)
    while True:
        used: set[Var] = set()
        for s in keep:
            used |= set(used_vars(s))
        nxt = [s for s in keep if not (isinstance(s, AssignStmt) and isinstance(s.value, Call)
                                       and isinstance(s.value.op, str) and s.var not in used
                                       and get_op(s.value.op).lowering != "store")]
        if len(nxt) == len(keep):
            return keep
        keep = nxt
