"""The pass lists of each optimization strategy, built from the pass classes (STYLE rule 5)."""

from __future__ import annotations

import enum

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
from .memory_reuse import MemoryReuse
from .outline_cluster_scopes import OutlineClusterScopes
from .outline_hierarchy_scopes import OutlineHierarchyScopes
from .outline_incore_scopes import OutlineIncoreScopes
from .resolve_backend_op_layouts import ResolveBackendOpLayouts
from .simplify import Simplify
from .tile_tensor_blocks import TileTensorBlocks
from .unroll_loops import UnrollLoops

__all__ = ["OptimizationStrategy", "DEFAULT_PIPELINE", "DEBUG_TILE_PIPELINE", "passes_for"]


class OptimizationStrategy(enum.Enum):
    """`Default`: the full tensor-oriented pipeline. `DebugTileOptimization`: tile-level programs
    only, without the tensor-only passes (User Manual "Compilation")."""

    Default = "Default"
    DebugTileOptimization = "DebugTileOptimization"


# Order follows SPEC §5; passes of later issues slot in at their positions.
DEFAULT_PIPELINE: list[type[Pass]] = [
    InlineFunctions,
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
    AllocateMemoryAddr,
    DeriveCallDirections,
    AutoDeriveTaskDependencies,
]
DEBUG_TILE_PIPELINE: list[type[Pass]] = [
    InlineFunctions, UnrollLoops, CtrlFlowTransform, ConvertToSSA, Simplify, FlattenCallExpr,
    FlattenTileNdTo2D, LegalizeTileCast, InferTileMemorySpace, ResolveBackendOpLayouts,
    ExpandMixedKernel, InitMemRef, MemoryReuse, AllocateMemoryAddr, DeriveCallDirections,
    AutoDeriveTaskDependencies,
]

_BY_STRATEGY = {OptimizationStrategy.Default: DEFAULT_PIPELINE,
                OptimizationStrategy.DebugTileOptimization: DEBUG_TILE_PIPELINE}


def passes_for(strategy: object) -> list[Pass]:
    """Fresh pass instances for `strategy`. Raises ValueError for an unknown strategy."""
    if not isinstance(strategy, OptimizationStrategy):
        raise ValueError(f"unknown optimization strategy {strategy!r}; expected one of "
                         f"{', '.join('ir.OptimizationStrategy.' + s.name for s in OptimizationStrategy)}")
    return [cls() for cls in _BY_STRATEGY[strategy]]
