"""ExpandMixedKernel: a kernel using cube and vector units becomes AIC + AIV kernels joined by
cross-core pipes, under a Group function with the original name (SPEC §3 "System", §5)."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.passes.base import PassContext
from pypto.passes.expand_mixed_kernel import ExpandMixedKernel
from pypto.runtime import RunConfig

M = K = N = 32
NONE = pl.SplitMode.NONE


@pl.program
class Before:
    @pl.function(type=pl.FunctionType.InCore)
    def mm_exp(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        a1: pl.Tile[[M, K], pl.FP16, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        b1: pl.Tile[[K, N], pl.FP16, pl.Mem.Mat] = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        a0: pl.Tile[[M, K], pl.FP16, pl.Mem.Left] = pl.move(a1, target_memory=pl.Mem.Left)
        b0: pl.Tile[[K, N], pl.FP16, pl.Mem.Right] = pl.move(b1, target_memory=pl.Mem.Right)
        p: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.matmul(a0, b0)
        e: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.exp(p)      # a vector op on a cube tile
        s: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.add(e, 1.0)
        c1 = pl.store(s, [0, 0], c)
        return c1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.mm_exp(a, b, c)
        return c


@pl.program
class Expected:
    @pl.function(type=pl.FunctionType.AIC)
    def mm_exp_aic(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16]):
        a1: pl.Tile[[M, K], pl.FP16, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        b1: pl.Tile[[K, N], pl.FP16, pl.Mem.Mat] = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        a0: pl.Tile[[M, K], pl.FP16, pl.Mem.Left] = pl.move(a1, target_memory=pl.Mem.Left)
        b0: pl.Tile[[K, N], pl.FP16, pl.Mem.Right] = pl.move(b1, target_memory=pl.Mem.Right)
        p: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.matmul(a0, b0)
        pl.system.tpush_to_aiv(p, split=NONE)
        return

    @pl.function(type=pl.FunctionType.AIV)
    def mm_exp_aiv(self, c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        p: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.system.tpop_from_aic([M, N], dtype=pl.FP32, split=NONE)
        e: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.exp(p)
        pl.system.tfree_to_aic(p)
        s: pl.Tile[[M, N], pl.FP32, pl.Mem.Vec] = pl.add(e, 1.0)
        c1 = pl.store(s, [0, 0], c)
        return c1

    @pl.function(type=pl.FunctionType.Group)
    def mm_exp(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        self.mm_exp_aic(a, b)
        r = self.mm_exp_aiv(c)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.mm_exp(a, b, c)
        return c


def test_mixed_kernel_splits_into_aic_and_aiv_joined_by_a_pipe():
    ctx = PassContext()
    out = ExpandMixedKernel().run(Before, ctx)
    ir.assert_structural_equal(out, Expected)
    assert ctx.records["mixed_kernels"]["mm_exp"] == {"aic": "mm_exp_aic", "aiv": "mm_exp_aiv",
                                                      "pipes": ["C->V"], "split": "NONE"}
    assert ExpandMixedKernel().run(Expected, PassContext()) is Expected  # nothing mixed left


PLATFORMS = [(BackendType.Ascend910B, "a2a3sim"), (BackendType.Ascend950, "a5sim")]


@pl.program
class Blocks:
    """Per row block: a matmul on the cube core, exp on the vector cores, summed over the blocks."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[4 * M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
          c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        b1 = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        b0 = pl.move(b1, target_memory=pl.Mem.Right)
        acc = pl.tile.full([M, N], 0.0, dtype=pl.FP32)
        for i in pl.range(4):
            a1 = pl.load(a, [i * M, 0], [M, K], target_memory=pl.Mem.Mat)
            a0 = pl.move(a1, target_memory=pl.Mem.Left)
            p = pl.matmul(a0, b0)
            acc = pl.add(acc, pl.exp(p))
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[4 * M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.k(a, b, c)
        return c


@pytest.mark.parametrize("backend,platform", PLATFORMS)
def test_split_kernels_run_like_torch(backend, platform, tmp_path):
    torch.manual_seed(0)
    a = torch.randn(4 * M, K, dtype=torch.float16) * 0.1
    b = torch.randn(K, N, dtype=torch.float16) * 0.1
    compiled = ir.compile(Blocks, output_dir=tmp_path / "b", backend_type=backend, platform=platform,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    kinds = {f.name: f.func_type for f in compiled.program.functions}
    assert kinds == {"k_aic": pl.FunctionType.AIC, "k_aiv": pl.FunctionType.AIV,
                     "k": pl.FunctionType.Group, "main": pl.FunctionType.Orchestration}
    aic = compiled.program.get_function("k_aic").as_python()
    aiv = compiled.program.get_function("k_aiv").as_python()
    assert "pl.system.tpush_to_aiv(p" in aic and "Mem.Vec" not in aic
    assert "pl.system.tpop_from_aic" in aiv and "pl.system.tfree_to_aic" in aiv
    assert all(s not in aiv for s in ("Mem.Mat", "Mem.Acc", "Mem.Left"))
    c = torch.zeros(M, N)
    compiled(a, b, c, config=RunConfig(platform=platform, sanitize=True))
    want = sum(torch.exp(a[i * M:(i + 1) * M].float() @ b.float()) for i in range(4))
    torch.testing.assert_close(c, want, rtol=1e-3, atol=1e-3)


@pl.program
class VecToCube:
    """Scale on the vector cores, then matmul on the cube core (Vec → Mat exists on Ascend950)."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
          c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        av = pl.load(a, [0, 0], [M, K])
        av2 = pl.mul(av, 2.0)
        a1 = pl.move(av2, target_memory=pl.Mem.Mat)
        a0 = pl.move(a1, target_memory=pl.Mem.Left)
        b1 = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        b0 = pl.move(b1, target_memory=pl.Mem.Right)
        p = pl.matmul(a0, b0)
        c = pl.store(p, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.k(a, b, c)
        return c


def test_vector_to_cube_pipe_runs_the_vector_kernel_first(tmp_path):
    compiled = ir.compile(VecToCube, output_dir=tmp_path / "b", backend_type=BackendType.Ascend950,
                          platform="a5sim", verification_level=ir.VerificationLevel.ROUNDTRIP)
    group = compiled.program.get_function("k").as_python()
    assert group.index("k_aiv(a)") < group.index("k_aic(b, c)")  # the sender runs first
    assert "pl.system.tpop_from_aiv" in compiled.program.get_function("k_aic").as_python()
    a = torch.randn(M, K, dtype=torch.float16)
    b = torch.randn(K, N, dtype=torch.float16)
    c = torch.zeros(M, N)
    compiled(a, b, c, config=RunConfig(platform="a5sim", sanitize=True))
    torch.testing.assert_close(c, (a.float() * 2) @ b.float(), rtol=1e-2, atol=1e-2)


@pl.program
class HandPiped:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 32], pl.FP32], y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 32])
        pl.system.tpush_to_aic(t)
        p = pl.system.tpop_from_aiv([16, 32], dtype=pl.FP32)
        pl.system.tfree_to_aiv(p)
        u = pl.move(p, target_memory=pl.Mem.Vec)
        y = pl.store(u, [0, 0], y)
        return y


def test_kernels_with_hand_placed_pipes_are_left_alone():
    assert ExpandMixedKernel().run(HandPiped, PassContext()) is HandPiped
