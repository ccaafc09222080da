"""`select_entry`: which function of a program a run (or a generated script) starts from."""

from __future__ import annotations

from ..core.enums import FunctionType
from .expr import Call, GlobalVar
from .function import Function, Program
from .visitor import IRVisitor

__all__ = ["select_entry"]


class _Callees(IRVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar):
            self.names.add(e.op.name)
        super().visit_Call(e)


def select_entry(program: Program, entry: str | None = None) -> Function:
    """The entry function: `entry` by name; else the unique Orchestration function; else the first
    function no other function calls.

    Raises:
        ValueError: unknown `entry` name, or a program without functions.
    """
    if entry is not None:
        f = program.get_function(entry)
        if f is None:
            raise ValueError(f"program '{program.name}' has no function {entry!r}; it has "
                             f"{', '.join(program.function_names) or 'none'}")
        return f
    if not program.functions:
        raise ValueError(f"program '{program.name}' has no functions")
    orch = [f for f in program.functions if f.func_type is FunctionType.Orchestration]
    if len(orch) == 1:
        return orch[0]
    v = _Callees()
    for f in program.functions:
        v.visit_function(f)
    roots = [f for f in program.functions if f.name not in v.names]
    for f in roots:
        if f.func_type is FunctionType.Orchestration:
            return f
    return roots[0] if roots else program.functions[0]
