"""Why TileTensorBlocks left a tensor-level region as written (issue 14 trial: a region that writes
`y[k * RT:k * RT + RT, :] = ...` failed with "use smaller tiles or loop over blocks" without saying
that automatic blocking exists and why it did not apply).

`unblocked_reason(func)` names the first thing in an InCore function that keeps it from being one
straight-line chain of vector tensor ops ending in whole-tensor writes (docs/language.md
"Inside `pl.at(...)`"); TileTensorBlocks records it in `ctx.records["unblocked"][function]`, and
AllocateMemoryAddr adds it to its MemoryCapacityError when that function does not fit.
"""

from __future__ import annotations

from ..core.enums import FunctionType
from ..ir.expr import Call, ConstInt
from ..ir.function import Function
from ..ir.stmt import AssignStmt, ReturnStmt, SeqStmts
from ..ir.types import TensorType
from ..ops import get_op

__all__ = ["unblocked_reason", "blocking_note"]


def _line(node) -> str:  # type: ignore[no-untyped-def]
    span = node.span
    return f"line {span.begin_line}" if span.is_known() else "the region"


def unblocked_reason(func: Function) -> str | None:
    """Why `func` (an InCore function) is not a chain TileTensorBlocks blocks; None when it has no
    tensor-level write (a tile-level kernel: nothing to say) or no reason is found."""
    if func.func_type is not FunctionType.InCore or func.external is not None:
        return None
    stmts = func.body.stmts if isinstance(func.body, SeqStmts) else (func.body,)
    calls = [s for s in stmts if isinstance(s, AssignStmt) and isinstance(s.value, Call)
             and isinstance(s.value.op, str) and s.value.op.startswith("tensor.")]
    stores = [s for s in calls if get_op(s.value.op).lowering == "store"]   # type: ignore[union-attr, arg-type]
    if not stores:
        return None
    if func.optimizations:
        return "its pl.at has optimizations (pl.split / pl.cross_core_slot), which keep the region as written"
    for s in stmts:
        if not isinstance(s, (AssignStmt, ReturnStmt)):
            return f"it is not one straight-line chain (a loop or branch at {_line(s)})"
    for s in stores:
        target, _value, offsets = s.value.args   # type: ignore[union-attr]
        offs = getattr(offsets, "elements", ())
        whole = isinstance(target.type, TensorType) and isinstance(s.var.type, TensorType) \
            and target.type.shape == s.var.type.shape
        if not whole or not all(isinstance(o, ConstInt) and o.value == 0 for o in offs):
            name = getattr(target, "name", "a tensor")
            return f"it writes a part of '{name}' ({_line(s)}), not the whole tensor"
    return None


def blocking_note(reason: str) -> str:
    """The sentence MemoryCapacityError adds for a region left as written for `reason`."""
    return (f"; automatic blocking (TileTensorBlocks) applies to a straight-line chain of vector ops ending in "
            f"whole-tensor writes (`y[:] = ...`) and was not applied here: {reason}. Write the whole tensor in "
            f"one pl.at (`y[:] = ...`, outside any pl.parallel loop: the compiler then splits it into row blocks "
            f"and spreads them over the cores), or loop over row blocks inside the region (pl.range with "
            f"pl.load / pl.store of blocks that fit)")
