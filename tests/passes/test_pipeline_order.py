"""The Default pipeline runs the passes of SPEC §5 in the seeds' order."""

from pypto.passes.pipeline import DEBUG_TILE_PIPELINE, DEFAULT_PIPELINE

SPEC_ORDER = [
    "InlineFunctions", "UnrollLoops", "CtrlFlowTransform", "ConvertToSSA", "Simplify", "FlattenCallExpr",
    "OutlineHierarchyScopes", "OutlineIncoreScopes", "OutlineClusterScopes",
    "TileTensorBlocks",  # issue 11: automatic tiling, between outlining and the lowering
    "ConvertTensorToTileOps",
    "FlattenTileNdTo2D", "LegalizeTileCast", "InferTileMemorySpace", "ResolveBackendOpLayouts",
    "ExpandMixedKernel", "InitMemRef", "MemoryReuse", "AllocateMemoryAddr", "DeriveCallDirections",
    "AutoDeriveTaskDependencies",
]


def test_default_pipeline_follows_spec_order():
    assert [p.name for p in DEFAULT_PIPELINE] == SPEC_ORDER


def test_debug_tile_pipeline_is_the_default_without_tensor_only_passes():
    tensor_only = {"OutlineHierarchyScopes", "OutlineIncoreScopes", "OutlineClusterScopes", "TileTensorBlocks",
                   "ConvertTensorToTileOps"}
    assert [p.name for p in DEBUG_TILE_PIPELINE] == [n for n in SPEC_ORDER if n not in tensor_only]
