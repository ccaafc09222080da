"""InferTileMemorySpace: operands move where their op needs them, along a path the backend has —
directly, or through Mat (the vector-to-cube transfer of a mixed kernel) — SPEC §5, §6 "Allowed
moves"."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import CompileError
from pypto.passes.base import PassContext
from pypto.passes.infer_tile_memory_space import InferTileMemorySpace

VEC, MAT, LEFT, RIGHT, ACC = pl.Mem.Vec, pl.Mem.Mat, pl.Mem.Left, pl.Mem.Right, pl.Mem.Acc
BACKENDS = [(BackendType.Ascend910B, "a2a3sim"), (BackendType.Ascend950, "a5sim")]


def _annotations_win():
    """Parse so that a tile annotated without a memory *has* none — a tile whose memory is left to
    InferTileMemorySpace. (The parser itself refines annotations with the value's memory, so IR
    like this comes from passes or hand-built programs.)"""
    from unittest import mock

    from pypto.language.parser import stmts

    return mock.patch.object(stmts, "refine", lambda declared, inferred: declared)


def _unplaced():
    """`u` has no memory: computed on the vector unit, the left operand of two matmuls."""
    with _annotations_win():
        @pl.program
        class Before:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
                  c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
                b1: pl.Tile[[16, 16], pl.FP16, MAT] = pl.load(b, [0, 0], [16, 16], target_memory=MAT)
                av: pl.Tile[[16, 16], pl.FP16, VEC] = pl.load(a, [0, 0], [16, 16])
                u: pl.Tile[[16, 16], pl.FP16] = pl.add(av, 1.0)
                p: pl.Tile[[16, 16], pl.FP32, ACC] = pl.matmul(u, b1)
                q: pl.Tile[[16, 16], pl.FP32, ACC] = pl.matmul(u, b1, b_trans=True)
                s: pl.Tile[[16, 16], pl.FP32, ACC] = pl.add(p, q)
                c1 = pl.store(s, [0, 0], c)
                return c1

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
                     c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
                c = self.k(a, b, c)
                return c
    return Before


Before = _unplaced()


@pl.program
class Expected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
          c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        b1: pl.Tile[[16, 16], pl.FP16, MAT] = pl.load(b, [0, 0], [16, 16], target_memory=MAT)
        av: pl.Tile[[16, 16], pl.FP16, VEC] = pl.load(a, [0, 0], [16, 16])
        u: pl.Tile[[16, 16], pl.FP16, VEC] = pl.add(av, 1.0)
        u_mat: pl.Tile[[16, 16], pl.FP16, MAT] = pl.move(u, target_memory=MAT)   # once: the transfer
        u_left: pl.Tile[[16, 16], pl.FP16, LEFT] = pl.move(u_mat, target_memory=LEFT)
        b_right: pl.Tile[[16, 16], pl.FP16, RIGHT] = pl.move(b1, target_memory=RIGHT)
        p: pl.Tile[[16, 16], pl.FP32, ACC] = pl.matmul(u_left, b_right)
        u_left2: pl.Tile[[16, 16], pl.FP16, LEFT] = pl.move(u_mat, target_memory=LEFT)
        b_right2: pl.Tile[[16, 16], pl.FP16, RIGHT] = pl.move(b1, target_memory=RIGHT)
        q: pl.Tile[[16, 16], pl.FP32, ACC] = pl.matmul(u_left2, b_right2, b_trans=True)
        s: pl.Tile[[16, 16], pl.FP32, ACC] = pl.add(p, q)
        c1 = pl.store(s, [0, 0], c)
        return c1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
             c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        c = self.k(a, b, c)
        return c


@pytest.mark.parametrize("backend,platform", BACKENDS)
def test_a_vector_operand_of_a_matmul_goes_through_mat_once(backend, platform, tmp_path):
    # Vec -> Left exists on neither chip; Vec -> Mat is on chip on Ascend950, the pipe through DDR
    # on Ascend910B (ExpandMixedKernel makes it a transfer)
    ir.assert_structural_equal(InferTileMemorySpace().run(Before, PassContext(backend_type=backend)), Expected)
    a, b = torch.randn(16, 16).half(), torch.randn(16, 16).half()
    c = torch.zeros(16, 16)
    cp = ir.compile(Before, output_dir=tmp_path / "b", backend_type=backend, platform=platform)
    cp(a, b, c)
    u = (a + 1).float()
    torch.testing.assert_close(c, u @ b.float() + u @ b.float().T, rtol=1e-3, atol=1e-3)


def test_a_move_without_a_path_names_the_operand_and_both_memories():
    # an AIC kernel has no vector core to send from: Vec -> Mat must be a move the chip makes
    text = Before.as_python().replace("type=pl.FunctionType.InCore", "type=pl.FunctionType.AIC")
    with _annotations_win():
        aic, aic_950 = pl.parse(text, filename="aic.py"), pl.parse(text)
    with pytest.raises(CompileError) as e:
        InferTileMemorySpace().run(aic, PassContext(backend_type=BackendType.Ascend910B))
    msg = str(e.value)
    assert "tile.matmul: operand 'lhs' is in Vec but must be in Left, and Ascend910B cannot move Vec → Left" in msg
    assert "aic.py:" in msg
    # Ascend950 moves Vec -> Mat on chip, so the same kernel is placed there
    out = InferTileMemorySpace().run(aic_950, PassContext(backend_type=BackendType.Ascend950))
    assert "pl.tile.move(u, target_memory=pl.Mem.Mat)" in out.get_function("k").as_python()


def test_operands_in_place_are_left_alone():
    out = InferTileMemorySpace().run(Expected, PassContext())
    ir.assert_structural_equal(out, Expected)
