"""Task-level facts shared by passes, codegen and the simulator (SPEC §13).

A call of a program function with the attribute `submit=True` (`pl.submit`, `pl.spmd_submit`, or
a `pl.at` region with `as tid` / task options once outlined) stands for the callee's results
followed by the submitted task's `pl.TaskId`.
"""

from __future__ import annotations

from ..core.dtype import TASK_ID
from .expr import Call, Expr
from .types import ScalarType, TupleType, Type

__all__ = ["TASK_ID_TYPE", "submit_result_type", "is_submit", "is_task_id", "results_of"]

TASK_ID_TYPE = ScalarType(TASK_ID)


def submit_result_type(rets: list[Type] | tuple[Type, ...]) -> TupleType:
    """The type of a submit call of a function returning `rets`: those, then the TaskId."""
    return TupleType((*rets, TASK_ID_TYPE))


def is_submit(call: Expr) -> bool:
    """Whether `call` is a submit call (its result ends with the TaskId)."""
    return isinstance(call, Call) and not isinstance(call.op, str) and bool(call.attr("submit"))


def is_task_id(e: Expr) -> bool:
    """Whether `e` is a `pl.TaskId` value (Scalar[TASK_ID])."""
    t = e.type
    return isinstance(t, ScalarType) and t.dtype is TASK_ID


def results_of(call: Call) -> tuple[Type, ...]:
    """The callee results a call of a program function stands for (the TaskId of a submit left out)."""
    t = call.result_type
    types = t.types if isinstance(t, TupleType) else (t,)
    return types[:-1] if is_submit(call) else types
