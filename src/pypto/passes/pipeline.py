"""The pass lists of each optimization strategy, built from the pass classes (STYLE rule 5)."""

from __future__ import annotations

import enum

from ..core.enums import KERNEL_TYPES, FunctionType, ScopeKind, member_named
from ..core.errors import CompileError
from ..core.span import Span
from ..ir.expr import Call
from ..ir.function import Function, Program
from ..ir.stmt import ScopeStmt
from ..ir.visitor import IRVisitor
from ..ops import get_op
from ..ops.registry import python_name
from .allocate_memory_addr import AllocateMemoryAddr
from .auto_derive_task_dependencies import AutoDeriveTaskDependencies
from .base import Pass
from .convert_tensor_to_tile_ops import ConvertTensorToTileOps
from .convert_to_ssa import ConvertToSSA
from .ctrl_flow_transform import CtrlFlowTransform
from .derive_call_directions import DeriveCallDirections
from .expand_mixed_kernel import ExpandMixedKernel
from .flatten_call_expr import FlattenCallExpr
from .flatten_tile_nd_to_2d import FlattenTileNdTo2D
from .infer_tile_memory_space import InferTileMemorySpace
from .init_memref import InitMemRef
from .inline_functions import InlineFunctions
from .legalize_tile_cast import LegalizeTileCast
from .lower_collectives import LowerCollectives
from .memory_reuse import MemoryReuse
from .outline_cluster_scopes import OutlineClusterScopes
from .outline_hierarchy_scopes import OutlineHierarchyScopes
from .outline_incore_scopes import OutlineIncoreScopes
from .pipeline_loops import PipelineLoops
from .resolve_backend_op_layouts import ResolveBackendOpLayouts
from .simplify import Simplify, dim_query_value
from .tile_tensor_blocks import TileTensorBlocks
from .unroll_loops import UnrollLoops

__all__ = ["OptimizationStrategy", "DEFAULT_PIPELINE", "DEBUG_TILE_PIPELINE", "passes_for", "check_strategy"]


class OptimizationStrategy(enum.Enum):
    """`Default`: the full tensor-oriented pipeline. `DebugTileOptimization`: tile-level programs
    only, without the tensor-only passes (User Manual "Compilation")."""

    Default = "Default"
    DebugTileOptimization = "DebugTileOptimization"

    @classmethod
    def of(cls, strategy: object) -> OptimizationStrategy:
        """`strategy` as an OptimizationStrategy: a member, or its name as a string
        (`"DebugTileOptimization"`), as `backend_type` and `verification_level` take names.

        Raises:
            ValueError: naming the value and the allowed ones.
        """
        found = member_named(cls, strategy)
        if found is not None:
            return found   # type: ignore[return-value]
        raise ValueError(f"unknown optimization strategy {strategy!r}; expected one of "
                         f"{', '.join('ir.OptimizationStrategy.' + s.name for s in cls)} (or their names as strings)")


# Order follows SPEC §5; passes of later issues slot in at their positions.
DEFAULT_PIPELINE: list[type[Pass]] = [
    InlineFunctions,
    LowerCollectives,
    UnrollLoops,
    CtrlFlowTransform,
    ConvertToSSA,
    Simplify,
    FlattenCallExpr,
    OutlineHierarchyScopes,
    OutlineIncoreScopes,
    OutlineClusterScopes,
    TileTensorBlocks,
    ConvertTensorToTileOps,
    FlattenTileNdTo2D,
    LegalizeTileCast,
    InferTileMemorySpace,
    ResolveBackendOpLayouts,
    ExpandMixedKernel,
    InitMemRef,
    MemoryReuse,
    PipelineLoops,
    AllocateMemoryAddr,
    DeriveCallDirections,
    AutoDeriveTaskDependencies,
]
DEBUG_TILE_PIPELINE: list[type[Pass]] = [
    InlineFunctions, LowerCollectives, UnrollLoops, CtrlFlowTransform, ConvertToSSA, Simplify,
    FlattenCallExpr, FlattenTileNdTo2D, LegalizeTileCast, InferTileMemorySpace, ResolveBackendOpLayouts,
    ExpandMixedKernel, InitMemRef, MemoryReuse, PipelineLoops, AllocateMemoryAddr, DeriveCallDirections,
    AutoDeriveTaskDependencies,
]

_BY_STRATEGY = {OptimizationStrategy.Default: DEFAULT_PIPELINE,
                OptimizationStrategy.DebugTileOptimization: DEBUG_TILE_PIPELINE}


def passes_for(strategy: object) -> list[Pass]:
    """Fresh pass instances for `strategy` (a member or its name). Raises ValueError for an unknown
    strategy."""
    return [cls() for cls in _BY_STRATEGY[OptimizationStrategy.of(strategy)]]


class _TensorLevel(IRVisitor):
    """Finds the first construct only the tensor-level passes handle: a `pl.at` region (outlined
    into a kernel by the Outline*Scopes passes) or, outside Orchestration functions, an op that
    ConvertTensorToTileOps rewrites (OpSpec `tile_op` or `lowering`)."""

    def __init__(self) -> None:
        self.func: Function | None = None
        self.found: tuple[Span | None, str] | None = None

    def visit_ScopeStmt(self, s: ScopeStmt) -> None:
        if self.found is None and s.kind is ScopeKind.InCore:
            self.found = (s.span, "this pl.at region needs them to become a kernel")
        super().visit_ScopeStmt(s)

    def visit_Call(self, e: Call) -> None:
        if self.found is None and isinstance(e.op, str) and self.func is not None \
                and self.func.func_type is not FunctionType.Orchestration:
            spec = get_op(e.op)
            if (spec.tile_op is not None or spec.lowering) and not _folded_dim_query(e, self.func):
                self.found = (e.span, f"'pl.{python_name(e.op)}' in {self.func.func_type.name} function "
                                      f"'{self.func.name}' is a tensor-level op, which they lower to tile ops")
        super().visit_Call(e)


def _folded_dim_query(e: Call, func: Function) -> bool:
    """A `pl.dim` in a kernel that Simplify (which DebugTileOptimization runs) turns into a
    constant or a dynamic-dimension variable: tile-level code may ask its tensors' sizes."""
    return dim_query_value(e, func.func_type in KERNEL_TYPES) is not None


def check_strategy(program: Program, strategy: OptimizationStrategy) -> None:
    """Refuse, before any pass runs, a program that `strategy` cannot compile: DebugTileOptimization
    leaves out the tensor-level passes (User Manual "Compilation"), so it takes tile-level programs
    only. Raises CompileError at the first `pl.at` region or tensor-level op, naming the strategy,
    the passes it skips and what to do instead."""
    if strategy is not OptimizationStrategy.DebugTileOptimization:
        return
    v = _TensorLevel()
    for f in program.functions:
        v.func = f
        v.visit_stmt(f.body)
        if v.found is not None:
            break
    if v.found is None:
        return
    span, what = v.found
    skipped = ", ".join(p.name for p in DEFAULT_PIPELINE if p not in DEBUG_TILE_PIPELINE)
    raise CompileError(f"strategy=DebugTileOptimization skips the tensor-level passes ({skipped}) and "
                       f"compiles tile-level programs only, but {what}; compile with "
                       f"strategy=ir.OptimizationStrategy.Default (the default), or write the kernel at tile "
                       f"level (an InCore function using pl.load, tile ops and pl.store)", span)

