"""What both code generators share: the error class, kernel classification, SSA/C++ name allocation.

`kernel_core_type(func)` decides where a kernel runs (SPEC §5 layout `kernels/aiv|aic/`): a function
declared `AIC` / `AIV` runs there; an InCore function runs on the cube core (AIC) when any of its
tiles lives in Mat/Left/Right/Acc/Bias or it calls an op with the "cube" trait, else on a vector
core (AIV). This is the same rule the simulator uses to pick a core.
"""

from __future__ import annotations

import functools
import re

from ..core.enums import KERNEL_TYPES, FunctionType, MemorySpace
from ..core.errors import CompileError
from ..core.span import Span
from ..ir.expr import Call, Var
from ..ir.function import Function
from ..ir.types import TileType
from ..ir.visitor import IRVisitor
from ..ops import get_op

__all__ = ["CodegenError", "KERNEL_TYPES", "CUBE_SPACES", "kernel_core_type", "is_kernel",
           "NameAllocator", "span_or", "dynamic_dims"]

CUBE_SPACES = frozenset({MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc,
                         MemorySpace.Bias})


class CodegenError(CompileError):
    """The lowered program cannot be turned into PTO MLIR or orchestration code (e.g. an op that has
    no PTO instruction, or control flow that should have been removed by an earlier pass)."""


def is_kernel(func: Function) -> bool:
    """True for functions that become device kernels (InCore, AIC, AIV)."""
    return func.func_type in KERNEL_TYPES


class _CubeUse(IRVisitor):
    def __init__(self) -> None:
        self.cube = False

    def visit_Var(self, e: Var) -> None:
        t = e.type
        if isinstance(t, TileType):
            space = t.memref.memory_space if t.memref is not None else t.memory_space
            if space in CUBE_SPACES:
                self.cube = True

    visit_IterArg = visit_Var

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, str) and get_op(e.op).has_trait("cube"):
            self.cube = True
        super().visit_Call(e)


@functools.lru_cache(maxsize=64)  # asked several times per build; IR is immutable, Functions hash by identity
def kernel_core_type(func: Function) -> str:
    """"aic" or "aiv" for a kernel function (see the module docstring)."""
    if func.func_type is FunctionType.AIC:
        return "aic"
    if func.func_type is FunctionType.AIV:
        return "aiv"
    v = _CubeUse()
    v.visit_function(func)
    return "aic" if v.cube else "aiv"


def dynamic_dims(func: Function) -> list[tuple[Var, int, str, int]]:
    """Dynamic dimensions (`pl.dynamic`) of `func`'s tensor parameters, first appearance first, as
    (dim Var, parameter index, "shape" or "stride", axis).

    They follow the parameters in the argument list of a kernel and of an orchestration entry, so a
    caller passes `<tensor>.shape(axis)` (or `.stride(axis)`) for each.
    """
    from ..ir.types import TensorType

    out: list[tuple[Var, int, str, int]] = []
    seen: set[Var] = set(func.params)
    for i, p in enumerate(func.params):
        t = p.type
        if not isinstance(t, TensorType):
            continue
        groups = [("shape", t.shape)]
        if t.view is not None and t.view.stride is not None:
            groups.append(("stride", t.view.stride))
        for kind, dims in groups:
            for axis, d in enumerate(dims):
                if isinstance(d, Var) and d not in seen:
                    seen.add(d)
                    out.append((d, i, kind, axis))
    return out


def span_or(*spans: Span | None) -> Span:
    """The first known span among `spans` (unknown when none is)."""
    for s in spans:
        if s is not None and s.is_known():
            return s
    return Span.unknown()


_BAD = re.compile(r"[^A-Za-z0-9_]")


class NameAllocator:
    """Unique identifiers derived from IR name hints (`a_tile`, `a_tile_1`, ...).

    `reserved` names are never handed out (C++ keywords, names the generator uses itself).
    """

    def __init__(self, reserved: set[str] | frozenset[str] = frozenset()) -> None:
        self.used: set[str] = set(reserved)

    def fresh(self, hint: str) -> str:
        base = _BAD.sub("_", hint) or "v"
        if base[0].isdigit():
            base = "v" + base
        name, k = base, 1
        while name in self.used:
            name = f"{base}_{k}"
            k += 1
        self.used.add(name)
        return name
