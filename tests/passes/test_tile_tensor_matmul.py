"""TileTensorBlocks, matmul regions (issue 11; tile_tensor_matmul, fuse_matmul_acc): a tensor-level
matmul too large for Acc / Left / Right / Mat becomes M / N blocks with a K loop of matmul_acc, the
blocks parallel tasks when the kernel is called from orchestration; a user's K loop
`acc = acc + pl.matmul(...)` becomes matmul_acc."""

import pytest

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.enums import MemorySpace
from pypto.passes.base import PassContext
from pypto.passes.tile_tensor_blocks import TileTensorBlocks
from pypto.passes.tile_tensor_matmul import MatmulPlan, choose_matmul_blocks

FP16, FP32 = pl.FP16, pl.FP32


def blocked(program, backend=BackendType.Ascend910B):
    return TileTensorBlocks().run(program, PassContext(backend_type=backend))


@pl.program
class MatmulTasks:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[300, 200], FP16], b: pl.Tensor[[200, 170], FP16],
             c: pl.Out[pl.Tensor[[300, 170], FP32]]) -> pl.Tensor[[300, 170], FP32]:
        c1: pl.Tensor[[300, 170], FP32] = self.k(a, b, c)
        return c1

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[300, 200], FP16], b: pl.Tensor[[200, 170], FP16],
          c: pl.Out[pl.Tensor[[300, 170], FP32]]) -> pl.Tensor[[300, 170], FP32]:
        m: pl.Tensor[[300, 170], FP32] = pl.tensor.matmul(a, b)
        c1: pl.Tensor[[300, 170], FP32] = pl.tensor.assemble(c, m, [0, 0])
        return c1


@pl.program
class MatmulTasksExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[300, 200], FP16], b: pl.Tensor[[200, 170], FP16],
          c: pl.Out[pl.Tensor[[300, 170], FP32]], i: pl.Scalar[pl.INDEX],
          j: pl.Scalar[pl.INDEX]) -> pl.Tensor[[300, 170], FP32]:
        # Acc 128 KiB holds 256 x 128 FP32 (the largest 16 x 2^k block; 304 x 64 is smaller);
        # K: Left 256 x 128 FP16 = 64 KiB -> 128, then a 72-wide tail (k_valid)
        rows_valid: pl.INDEX = pl.min(256, 300 - i)
        cols_valid: pl.INDEX = pl.min(128, 170 - j)
        a_k0: pl.Tensor[[256, 128], FP16, pl.TensorView(valid_shape=[rows_valid, 128])] = \
            pl.tensor.slice(a, [256, 128], [i, 0], [rows_valid, 128])
        b_k0: pl.Tensor[[128, 128], FP16, pl.TensorView(valid_shape=[128, cols_valid])] = \
            pl.tensor.slice(b, [128, 128], [0, j], [128, cols_valid])
        acc: pl.Tensor[[256, 128], FP32, pl.TensorView(valid_shape=[rows_valid, cols_valid])] = \
            pl.tensor.matmul(a_k0, b_k0)
        for k, (acc_it,) in pl.range(128, 200, 128, init_values=(acc,)):
            k_valid: pl.INDEX = pl.min(128, 200 - k)
            a_k: pl.Tensor[[256, 128], FP16, pl.TensorView(valid_shape=[rows_valid, k_valid])] = \
                pl.tensor.slice(a, [256, 128], [i, k], [rows_valid, k_valid])
            b_k: pl.Tensor[[128, 128], FP16, pl.TensorView(valid_shape=[k_valid, cols_valid])] = \
                pl.tensor.slice(b, [128, 128], [k, j], [k_valid, cols_valid])
            acc_1: pl.Tensor[[256, 128], FP32, pl.TensorView(valid_shape=[rows_valid, cols_valid])] = \
                pl.tensor.matmul_acc(acc_it, a_k, b_k)           # on the cube unit, in Acc
            acc_rv: pl.Tensor[[256, 128], FP32, pl.TensorView(valid_shape=[rows_valid, cols_valid])] = \
                pl.yield_(acc_1)
        c1: pl.Tensor[[300, 170], FP32] = pl.tensor.assemble(c, acc_rv, [i, j])
        return c1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[300, 200], FP16], b: pl.Tensor[[200, 170], FP16],
             c: pl.Out[pl.Tensor[[300, 170], FP32]]) -> pl.Tensor[[300, 170], FP32]:
        # one task per output block, spread over the cube cores
        for i, (c_it,) in pl.parallel(0, 300, 256, init_values=(c,)):
            for j, (c_it_it,) in pl.parallel(0, 170, 128, init_values=(c_it,)):
                c1_blk: pl.Tensor[[300, 170], FP32] = self.k(a, b, c_it_it, i, j)
                c1_j: pl.Tensor[[300, 170], FP32] = pl.yield_(c1_blk)
            c1: pl.Tensor[[300, 170], FP32] = pl.yield_(c1_j)
        return c1


def test_a_matmul_too_large_for_acc_becomes_output_block_tasks_with_a_k_loop_of_matmul_acc():
    ir.assert_structural_equal(blocked(MatmulTasks), MatmulTasksExpected)


@pl.program
class BiasTransposed:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 512], FP32], b: pl.Tensor[[256, 64], FP32], bias: pl.Tensor[[1, 256], FP32],
          c: pl.Out[pl.Tensor[[512, 256], FP16]]) -> pl.Tensor[[512, 256], FP16]:
        m: pl.Tensor[[512, 256], FP32] = pl.tensor.matmul_bias(a, b, bias, a_trans=True, b_trans=True)
        r: pl.Tensor[[512, 256], FP32] = pl.tensor.relu(m)
        h: pl.Tensor[[512, 256], FP16] = pl.tensor.cast(r, target_type=FP16)
        c1: pl.Tensor[[512, 256], FP16] = pl.tensor.assemble(c, h, [0, 0])
        return c1


@pl.program
class BiasTransposedExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 512], FP32], b: pl.Tensor[[256, 64], FP32], bias: pl.Tensor[[1, 256], FP32],
          c: pl.Out[pl.Tensor[[512, 256], FP16]]) -> pl.Tensor[[512, 256], FP16]:
        # 128 x 256 fits Acc, but its relu / cast epilogue not Vec: the block is halved to 128 x 128;
        # K = 64 whole (no K loop). Not called from orchestration: the block loops stay here.
        for i, (c_it,) in pl.range(0, 512, 128, init_values=(c,)):
            for j, (c_it_it,) in pl.range(0, 256, 128, init_values=(c_it,)):
                a_k0: pl.Tensor[[64, 128], FP32] = pl.tensor.slice(a, [64, 128], [0, i])   # a is [K, M]
                b_k0: pl.Tensor[[128, 64], FP32] = pl.tensor.slice(b, [128, 64], [j, 0])   # b is [N, K]
                bias_blk: pl.Tensor[[1, 128], FP32] = pl.tensor.slice(bias, [1, 128], [0, j])
                acc: pl.Tensor[[128, 128], FP32] = pl.tensor.matmul_bias(a_k0, b_k0, bias_blk, a_trans=True,
                                                                          b_trans=True)
                r: pl.Tensor[[128, 128], FP32] = pl.tensor.relu(acc)
                h: pl.Tensor[[128, 128], FP16] = pl.tensor.cast(r, target_type=FP16)
                c1: pl.Tensor[[512, 256], FP16] = pl.tensor.assemble(c_it_it, h, [i, j])
                c_it_rv: pl.Tensor[[512, 256], FP16] = pl.yield_(c1)
            c_rv: pl.Tensor[[512, 256], FP16] = pl.yield_(c_it_rv)
        return c_rv


def test_transposed_operands_a_bias_and_an_epilogue_are_blocked_together():
    ir.assert_structural_equal(blocked(BiasTransposed), BiasTransposedExpected)


@pl.program
class KLoop:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 256], FP16], b: pl.Tensor[[256, 64], FP16],
          c: pl.Out[pl.Tensor[[64, 64], FP32]]) -> pl.Tensor[[64, 64], FP32]:
        a0: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(a, [64, 64], [0, 0])
        b0: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(b, [64, 64], [0, 0])
        acc: pl.Tensor[[64, 64], FP32] = pl.tensor.matmul(a0, b0)
        for k, (acc_it,) in pl.range(64, 256, 64, init_values=(acc,)):
            ak: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(a, [64, 64], [0, k])
            bk: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(b, [64, 64], [k, 0])
            p: pl.Tensor[[64, 64], FP32] = pl.tensor.matmul(ak, bk)
            acc_next: pl.Tensor[[64, 64], FP32] = pl.tensor.add(acc_it, p)
            acc_rv: pl.Tensor[[64, 64], FP32] = pl.yield_(acc_next)
        c1: pl.Tensor[[64, 64], FP32] = pl.tensor.assemble(c, acc_rv, [0, 0])
        return c1


@pl.program
class KLoopExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 256], FP16], b: pl.Tensor[[256, 64], FP16],
          c: pl.Out[pl.Tensor[[64, 64], FP32]]) -> pl.Tensor[[64, 64], FP32]:
        a0: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(a, [64, 64], [0, 0])
        b0: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(b, [64, 64], [0, 0])
        acc: pl.Tensor[[64, 64], FP32] = pl.tensor.matmul(a0, b0)
        for k, (acc_it,) in pl.range(64, 256, 64, init_values=(acc,)):
            ak: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(a, [64, 64], [0, k])
            bk: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(b, [64, 64], [k, 0])
            acc_next: pl.Tensor[[64, 64], FP32] = pl.tensor.matmul_acc(acc_it, ak, bk)   # acc + ak @ bk in Acc
            acc_rv: pl.Tensor[[64, 64], FP32] = pl.yield_(acc_next)
        c1: pl.Tensor[[64, 64], FP32] = pl.tensor.assemble(c, acc_rv, [0, 0])
        return c1


def test_a_user_k_loop_adding_matmuls_becomes_matmul_acc():
    ir.assert_structural_equal(blocked(KLoop), KLoopExpected)


@pl.program
class KLoopVector:
    """The accumulator starts in Vec (an elementwise value), so the loop stays an add."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 256], FP16], b: pl.Tensor[[256, 64], FP16], z: pl.Tensor[[64, 64], FP32],
          c: pl.Out[pl.Tensor[[64, 64], FP32]]) -> pl.Tensor[[64, 64], FP32]:
        acc: pl.Tensor[[64, 64], FP32] = pl.tensor.muls(z, 0.0)
        for k, (acc_it,) in pl.range(0, 256, 64, init_values=(acc,)):
            ak: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(a, [64, 64], [0, k])
            bk: pl.Tensor[[64, 64], FP16] = pl.tensor.slice(b, [64, 64], [k, 0])
            p: pl.Tensor[[64, 64], FP32] = pl.tensor.matmul(ak, bk)
            acc_next: pl.Tensor[[64, 64], FP32] = pl.tensor.add(acc_it, p)
            acc_rv: pl.Tensor[[64, 64], FP32] = pl.yield_(acc_next)
        c1: pl.Tensor[[64, 64], FP32] = pl.tensor.assemble(c, acc_rv, [0, 0])
        return c1


def test_a_k_loop_whose_accumulator_starts_outside_acc_is_left_alone():
    ir.assert_structural_equal(blocked(KLoopVector), KLoopVector)


CAPS = {MemorySpace.Acc: 128 * 1024, MemorySpace.Left: 64 * 1024, MemorySpace.Right: 64 * 1024,
        MemorySpace.Mat: 512 * 1024}


@pytest.mark.parametrize(("mnk", "operand", "limits", "want"), [
    ((4096, 4096, 4096), 2, {}, MatmulPlan(128, 256, 128)),     # Acc: 128 x 256 FP32; Right: 128 x 256 FP16
    ((4096, 4096, 4096), 4, {}, MatmulPlan(128, 256, 64)),      # FP32 operands: half the K block
    ((100, 50, 40), 2, {}, MatmulPlan(112, 64, 40)),            # whole (rounded to 16); K whole, never past K
    ((4096, 4096, 4096), 2, {"max_bn": 128}, MatmulPlan(256, 128, 128)),
    ((1 << 40, 4096, 2048), 2, {}, MatmulPlan(128, 256, 128)),  # a dynamic M counts as unbounded
], ids=["fp16", "fp32", "small", "capped", "dynamic"])
def test_choose_matmul_blocks(mnk, operand, limits, want):
    assert choose_matmul_blocks(*mnk, operand, 4, CAPS, **limits) == want


@pl.program
class HandSplit:
    """pl.at(optimizations=[pl.split(...)]): the cross-core layout was chosen by hand."""

    @pl.function(type=pl.FunctionType.InCore, optimizations=[pl.split(pl.SplitMode.UP_DOWN)])
    def k(self, a: pl.Tensor[[300, 200], FP16], b: pl.Tensor[[200, 170], FP16],
          c: pl.Out[pl.Tensor[[300, 170], FP32]]) -> pl.Tensor[[300, 170], FP32]:
        m: pl.Tensor[[300, 170], FP32] = pl.tensor.matmul(a, b)
        r: pl.Tensor[[300, 170], FP32] = pl.tensor.relu(m)
        c1: pl.Tensor[[300, 170], FP32] = pl.tensor.assemble(c, r, [0, 0])
        return c1


def test_a_region_with_optimizations_is_left_as_written():
    ir.assert_structural_equal(blocked(HandSplit), HandSplit)


M = pl.dynamic("M")


@pl.program
class DynamicRows:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, 512], FP16], b: pl.Tensor[[512, 256], FP16],
             c: pl.Out[pl.Tensor[[M, 256], FP16]]) -> pl.Tensor[[M, 256], FP16]:
        c1: pl.Tensor[[M, 256], FP16] = self.k(a, b, c)
        return c1

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[M, 512], FP16], b: pl.Tensor[[512, 256], FP16],
          c: pl.Out[pl.Tensor[[M, 256], FP16]]) -> pl.Tensor[[M, 256], FP16]:
        m: pl.Tensor[[M, 256], FP16] = pl.tensor.matmul(a, b, out_dtype=FP16)
        c1: pl.Tensor[[M, 256], FP16] = pl.tensor.assemble(c, m, [0, 0])
        return c1


@pl.program
class DynamicRowsExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[M, 512], FP16], b: pl.Tensor[[512, 256], FP16],
          c: pl.Out[pl.Tensor[[M, 256], FP16]], i: pl.Scalar[pl.INDEX],
          j: pl.Scalar[pl.INDEX]) -> pl.Tensor[[M, 256], FP16]:
        # 128 x 256 fits Acc, but the FP16 cast of the block (the FP32 block moved to Vec, 128 KiB,
        # and its cast, 64 KiB) not Vec: 128 x 128, and then K blocks of 256 fit Left and Right
        rows_valid: pl.INDEX = pl.min(128, M - i)
        a_k0: pl.Tensor[[128, 256], FP16, pl.TensorView(valid_shape=[rows_valid, 256])] = \
            pl.tensor.slice(a, [128, 256], [i, 0], [rows_valid, 256])
        b_k0: pl.Tensor[[256, 128], FP16] = pl.tensor.slice(b, [256, 128], [0, j])
        acc: pl.Tensor[[128, 128], FP32, pl.TensorView(valid_shape=[rows_valid, 128])] = pl.tensor.matmul(a_k0, b_k0)
        for k, (acc_it,) in pl.range(256, 512, 256, init_values=(acc,)):
            a_k: pl.Tensor[[128, 256], FP16, pl.TensorView(valid_shape=[rows_valid, 256])] = \
                pl.tensor.slice(a, [128, 256], [i, k], [rows_valid, 256])
            b_k: pl.Tensor[[256, 128], FP16] = pl.tensor.slice(b, [256, 128], [k, j])
            acc_1: pl.Tensor[[128, 128], FP32, pl.TensorView(valid_shape=[rows_valid, 128])] = \
                pl.tensor.matmul_acc(acc_it, a_k, b_k)
            acc_rv: pl.Tensor[[128, 128], FP32, pl.TensorView(valid_shape=[rows_valid, 128])] = pl.yield_(acc_1)
        # out_dtype: one cast after the K loop (the accumulator stays FP32)
        m: pl.Tensor[[128, 128], FP16, pl.TensorView(valid_shape=[rows_valid, 128])] = \
            pl.tensor.cast(acc_rv, target_type=FP16)
        c1: pl.Tensor[[M, 256], FP16] = pl.tensor.assemble(c, m, [i, j])
        return c1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, 512], FP16], b: pl.Tensor[[512, 256], FP16],
             c: pl.Out[pl.Tensor[[M, 256], FP16]]) -> pl.Tensor[[M, 256], FP16]:
        for i, (c_it,) in pl.parallel(0, M, 128, init_values=(c,)):     # to the run-time M
            for j, (c_it_it,) in pl.parallel(0, 256, 128, init_values=(c_it,)):
                c1_blk: pl.Tensor[[M, 256], FP16] = self.k(a, b, c_it_it, i, j)
                c1_j: pl.Tensor[[M, 256], FP16] = pl.yield_(c1_blk)
            c1: pl.Tensor[[M, 256], FP16] = pl.yield_(c1_j)
        return c1


def test_a_dynamic_row_count_and_out_dtype():
    ir.assert_structural_equal(blocked(DynamicRows), DynamicRowsExpected)
