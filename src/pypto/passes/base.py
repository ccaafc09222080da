"""Pass infrastructure (SPEC §5; STYLE rules 4-5): every pass is `Program -> Program`.

A pass subclasses `Pass`, sets `name` (the name used in dump files: `NN_after_<name>.py`) and
implements `run(program, ctx)`. `FunctionPass` applies `run_function` to each function and keeps
the Program object when nothing changed; a hand-written C++ kernel (`Function.external`, SPEC §10)
has no IR body and is never handed to `run_function`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..backend import BackendType, SoCModel, get_soc
from ..ir.function import Function, Program

__all__ = ["Pass", "FunctionPass", "PassContext"]


@dataclass
class PassContext:
    """What passes may consult: the target backend and its SoC model, and free-form records
    (e.g. per-kernel peak memory) that the compile driver writes into the report folder."""

    backend_type: BackendType = BackendType.Ascend910B
    records: dict[str, Any] = field(default_factory=dict)

    @property
    def soc(self) -> SoCModel:
        return get_soc(self.backend_type)


class Pass:
    """Base class of all passes."""

    name: str = ""

    def run(self, program: Program, ctx: PassContext) -> Program:
        raise NotImplementedError(f"pass {type(self).__name__} does not implement run()")

    def __repr__(self) -> str:
        return f"<Pass {self.name}>"


class FunctionPass(Pass):
    """A pass that transforms functions independently."""

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        raise NotImplementedError(f"pass {type(self).__name__} does not implement run_function()")

    def run(self, program: Program, ctx: PassContext) -> Program:
        funcs = [f if f.external is not None else self.run_function(f, program, ctx)
                 for f in program.functions]
        if all(a is b for a, b in zip(funcs, program.functions)):
            return program
        return replace(program, functions=tuple(funcs))
