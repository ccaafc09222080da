"""The Default pipeline runs the passes of SPEC §5 in the seeds' order."""

from pypto.passes.pipeline import DEBUG_TILE_PIPELINE, DEFAULT_PIPELINE

SPEC_ORDER = [
    "InlineFunctions",
    "LowerCollectives",  # issue 10: kernel-level pld collectives become primitives, on pre-SSA IR
    "UnrollLoops", "CtrlFlowTransform", "ConvertToSSA", "Simplify", "FlattenCallExpr",
    "OutlineHierarchyScopes", "OutlineIncoreScopes", "OutlineClusterScopes",
    "TileTensorBlocks",  # issue 11: automatic tiling, between outlining and the lowering
    "ConvertTensorToTileOps",
    "FlattenTileNdTo2D", "LegalizeTileCast", "InferTileMemorySpace", "ResolveBackendOpLayouts",
    "ExpandMixedKernel", "InitMemRef", "MemoryReuse",
    "PipelineLoops",  # issue 14.2: pl.pipeline's rotating buffer copies, placed by AllocateMemoryAddr
    "AllocateMemoryAddr", "DeriveCallDirections",
    "AutoDeriveTaskDependencies",
]


def test_default_pipeline_follows_spec_order():
    assert [p.name for p in DEFAULT_PIPELINE] == SPEC_ORDER


def test_debug_tile_pipeline_is_the_default_without_tensor_only_passes():
    tensor_only = {"OutlineHierarchyScopes", "OutlineIncoreScopes", "OutlineClusterScopes", "TileTensorBlocks",
                   "ConvertTensorToTileOps"}
    assert [p.name for p in DEBUG_TILE_PIPELINE] == [n for n in SPEC_ORDER if n not in tensor_only]


# ---- what DebugTileOptimization accepts ------------------------------------------------------

def _line(marker: str) -> int:
    from pathlib import Path

    lines = Path(__file__).read_text().splitlines()
    hits = [i + 1 for i, t in enumerate(lines) if t.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, hits
    return hits[0]


_SKIPS = ("strategy=DebugTileOptimization skips the tensor-level passes (OutlineHierarchyScopes, "
          "OutlineIncoreScopes, OutlineClusterScopes, TileTensorBlocks, ConvertTensorToTileOps) and compiles tile-level "
          "programs only, but ")
_FIX = ("; compile with strategy=ir.OptimizationStrategy.Default (the default), or write the kernel at "
        "tile level (an InCore function using pl.load, tile ops and pl.store)")


def test_debug_tile_strategy_refuses_a_tensor_level_program_up_front(tmp_path):
    """A user trial: a pl.at program under DebugTileOptimization failed in codegen with a message
    that did not name the strategy. The check runs before any pass and writes no build folder."""
    import pytest

    import pypto.language as pl
    from pypto import ir
    from pypto.core.errors import CompileError

    @pl.program
    class Scoped:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                 o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):  # MARK-debug-at
                o[:] = pl.adds(x, 1.0)
            return o

    @pl.program
    class TensorKernel:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 64], pl.FP32],
              o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 64])
            y = pl.mul(x, 2.0)  # MARK-debug-tensor-op
            o = pl.store(t, [0, 0], o)
            return o

    cases = [(Scoped, "MARK-debug-at", "this pl.at region needs them to become a kernel"),
             (TensorKernel, "MARK-debug-tensor-op",
              "'pl.tensor.muls' in InCore function 'k' is a tensor-level op, which they lower to tile ops")]
    for program, marker, what in cases:
        out = tmp_path / program.name
        with pytest.raises(CompileError) as e:
            ir.compile(program, output_dir=out, skip_ptoas=True,
                       strategy=ir.OptimizationStrategy.DebugTileOptimization)
        assert type(e.value) is CompileError
        assert e.value.message == _SKIPS + what + _FIX
        assert (e.value.span.filename, e.value.span.begin_line) == (__file__, _line(marker))
        assert not out.exists()
        ir.compile(program, output_dir=out, skip_ptoas=True, dump_passes=False)  # Default compiles it


def test_debug_tile_strategy_accepts_a_tile_kernel_asking_its_tensors_sizes(tmp_path):
    """`pl.dim` / `pl.tensor.dim` in a tile-level kernel is no tensor-level op: Simplify turns it
    into the constant or the `pl.dynamic` variable, under either strategy, and the kernel runs."""
    import torch

    import pypto.language as pl
    from pypto import ir

    M = pl.dynamic("M")

    @pl.program
    class Sized:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[M, 64], pl.FP32],
              o: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
            m = pl.tensor.dim(x, 0)
            n = pl.dim(x, 1)
            for i in pl.range(0, m, 8):
                t = pl.load(x, [i, 0], [8, 64], valid_shape=[pl.min(8, m - i), n])
                o = pl.store(pl.muls(t, 2.0), [i, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M, 64], pl.FP32],
                 o: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
            o = self.k(x, o)
            return o

    for strategy in ir.OptimizationStrategy:
        compiled = ir.compile(Sized, output_dir=tmp_path / strategy.name, skip_ptoas=True, dump_passes=False,
                              strategy=strategy)
        x, o = torch.randn(21, 64), torch.zeros(21, 64)
        compiled(x, o)
        torch.testing.assert_close(o, 2 * x)
        assert "dim" not in compiled.program.get_function("k").as_python()
