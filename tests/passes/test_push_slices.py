"""push_slices (issue 11): a slice of a value computed in a tensor-level region moves onto the
region's inputs — through elementwise ops, broadcasts, casts, reductions and matmul — so that
TileTensorBlocks can block the region; Before / Expected IR of the rewrite."""

from dataclasses import replace

import pytest

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import MemoryCapacityError
from pypto.passes.base import PassContext
from pypto.passes.push_slices import computed_slices, push_slices
from pypto.passes.tile_tensor_blocks import TileTensorBlocks

FP32, FP16 = pl.FP32, pl.FP16


def pushed(program):
    return replace(program, functions=tuple(push_slices(f) for f in program.functions))


@pl.program
class Chain:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 1024], FP32], b: pl.Tensor[[1, 1024], FP32], r: pl.Tensor[[2048, 1], FP32],
          y: pl.Out[pl.Tensor[[1000, 1000], FP16]]) -> pl.Tensor[[1000, 1000], FP16]:
        t: pl.Tensor[[2048, 1024], FP32] = pl.tensor.add(a, b)               # [1, C] broadcast
        u: pl.Tensor[[2048, 1024], FP32] = pl.tensor.row_expand_mul(t, r)    # [R, 1] broadcast
        h: pl.Tensor[[2048, 1024], FP16] = pl.tensor.cast(u, target_type=FP16)
        d: pl.Tensor[[1000, 1000], FP16] = pl.tensor.slice(h, [1000, 1000], [37, 5])
        y1: pl.Tensor[[1000, 1000], FP16] = pl.tensor.assemble(y, d, [0, 0])
        return y1


@pl.program
class ChainExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 1024], FP32], b: pl.Tensor[[1, 1024], FP32], r: pl.Tensor[[2048, 1], FP32],
          y: pl.Out[pl.Tensor[[1000, 1000], FP16]]) -> pl.Tensor[[1000, 1000], FP16]:
        a_s0: pl.Tensor[[1000, 1000], FP32] = pl.tensor.slice(a, [1000, 1000], [37, 5])
        b_s0: pl.Tensor[[1, 1000], FP32] = pl.tensor.slice(b, [1, 1000], [0, 5])        # columns only
        t_s0: pl.Tensor[[1000, 1000], FP32] = pl.tensor.add(a_s0, b_s0)
        r_s0: pl.Tensor[[1000, 1], FP32] = pl.tensor.slice(r, [1000, 1], [37, 0])       # rows only
        u_s0: pl.Tensor[[1000, 1000], FP32] = pl.tensor.row_expand_mul(t_s0, r_s0)
        d: pl.Tensor[[1000, 1000], FP16] = pl.tensor.cast(u_s0, target_type=FP16)
        y1: pl.Tensor[[1000, 1000], FP16] = pl.tensor.assemble(y, d, [0, 0])
        return y1


def test_a_slice_moves_through_elementwise_ops_broadcasts_and_casts():
    ir.assert_structural_equal(pushed(Chain), ChainExpected)


@pl.program
class Matmul:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 256], FP16], b: pl.Tensor[[1024, 256], FP16],
          y: pl.Out[pl.Tensor[[1000, 992], FP32]]) -> pl.Tensor[[1000, 992], FP32]:
        c: pl.Tensor[[2048, 1024], FP32] = pl.tensor.matmul(a, b, out_dtype=None, a_trans=False, b_trans=True)
        e: pl.Tensor[[2048, 1024], FP32] = pl.tensor.exp(c)
        s: pl.Tensor[[2048, 1], FP32] = pl.tensor.row_sum(e)
        d: pl.Tensor[[1000, 1], FP32] = pl.tensor.slice(s, [1000, 1], [100, 0])
        w: pl.Tensor[[1000, 992], FP32] = pl.tensor.slice(c, [1000, 992], [100, 8])
        q: pl.Tensor[[1000, 992], FP32] = pl.tensor.row_expand_div(w, d)
        y1: pl.Tensor[[1000, 992], FP32] = pl.tensor.assemble(y, q, [0, 0])
        return y1


@pl.program
class MatmulExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 256], FP16], b: pl.Tensor[[1024, 256], FP16],
          y: pl.Out[pl.Tensor[[1000, 992], FP32]]) -> pl.Tensor[[1000, 992], FP32]:
        # rows of a row sum: the rows of its operand, all of its columns; rows of a @ b: rows of a,
        # all of b (b stored transposed: its columns are rows)
        a_s0: pl.Tensor[[1000, 256], FP16] = pl.tensor.slice(a, [1000, 256], [100, 0])
        c_s0: pl.Tensor[[1000, 1024], FP32] = pl.tensor.matmul(a_s0, b, out_dtype=None, a_trans=False,
                                                                b_trans=True)
        e_s0: pl.Tensor[[1000, 1024], FP32] = pl.tensor.exp(c_s0)
        d: pl.Tensor[[1000, 1], FP32] = pl.tensor.row_sum(e_s0)
        a_s1: pl.Tensor[[1000, 256], FP16] = pl.tensor.slice(a, [1000, 256], [100, 0])
        b_s0: pl.Tensor[[992, 256], FP16] = pl.tensor.slice(b, [992, 256], [8, 0])
        w: pl.Tensor[[1000, 992], FP32] = pl.tensor.matmul(a_s1, b_s0, out_dtype=None, a_trans=False,
                                                            b_trans=True)
        q: pl.Tensor[[1000, 992], FP32] = pl.tensor.row_expand_div(w, d)
        y1: pl.Tensor[[1000, 992], FP32] = pl.tensor.assemble(y, q, [0, 0])
        return y1


def test_a_slice_moves_through_reductions_and_matmul():
    out = pushed(Matmul)
    ir.assert_structural_equal(out, MatmulExpected)
    assert computed_slices(out.functions[0]) == []


@pl.program
class SliceOfSlice:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 1024], FP32],
          y: pl.Out[pl.Tensor[[100, 200], FP32]]) -> pl.Tensor[[100, 200], FP32]:
        e: pl.Tensor[[2048, 1024], FP32] = pl.tensor.exp(a)
        f: pl.Tensor[[1000, 1000], FP32] = pl.tensor.slice(e, [1000, 1000], [10, 20])
        g: pl.Tensor[[100, 200], FP32] = pl.tensor.slice(f, [100, 200], [3, 4])
        y1: pl.Tensor[[100, 200], FP32] = pl.tensor.assemble(y, g, [0, 0])
        return y1


@pl.program
class SliceOfSliceExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 1024], FP32],
          y: pl.Out[pl.Tensor[[100, 200], FP32]]) -> pl.Tensor[[100, 200], FP32]:
        a_s0: pl.Tensor[[100, 200], FP32] = pl.tensor.slice(a, [100, 200], [13, 24])   # offsets add up
        g: pl.Tensor[[100, 200], FP32] = pl.tensor.exp(a_s0)
        y1: pl.Tensor[[100, 200], FP32] = pl.tensor.assemble(y, g, [0, 0])
        return y1


def test_a_slice_of_a_slice_adds_the_offsets():
    ir.assert_structural_equal(pushed(SliceOfSlice), SliceOfSliceExpected)


@pl.program
class Small:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], FP32], y: pl.Out[pl.Tensor[[16, 64], FP32]]) -> pl.Tensor[[16, 64], FP32]:
        e: pl.Tensor[[64, 64], FP32] = pl.tensor.exp(a)
        d: pl.Tensor[[16, 64], FP32] = pl.tensor.slice(e, [16, 64], [16, 0])
        y1: pl.Tensor[[16, 64], FP32] = pl.tensor.assemble(y, d, [0, 0])
        return y1


def test_a_region_that_fits_keeps_its_slice_of_the_tile():
    out = TileTensorBlocks().run(Small, PassContext(backend_type=BackendType.Ascend910B))
    ir.assert_structural_equal(out, Small)


@pl.program
class Looped:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 1024], FP32],
          y: pl.Out[pl.Tensor[[1000, 1024], FP32]]) -> pl.Tensor[[1000, 1024], FP32]:
        e: pl.Tensor[[2048, 1024], FP32] = pl.tensor.exp(a)
        for k, (x,) in pl.range(0, 2, 1, init_values=(e,)):
            x1: pl.Tensor[[2048, 1024], FP32] = pl.tensor.adds(x, 1.0)
            x_rv: pl.Tensor[[2048, 1024], FP32] = pl.yield_(x1)
        d: pl.Tensor[[1000, 1024], FP32] = pl.tensor.slice(x_rv, [1000, 1024], [0, 0])
        y1: pl.Tensor[[1000, 1024], FP32] = pl.tensor.assemble(y, d, [0, 0])
        return y1


def test_a_slice_that_cannot_move_onto_the_inputs_of_a_too_large_region_says_what_to_do():
    with pytest.raises(MemoryCapacityError) as err:
        TileTensorBlocks().run(Looped, PassContext(backend_type=BackendType.Ascend910B))
    msg = str(err.value)
    assert "function 'k': the region does not fit one core, and it cannot be split into blocks because 'd' " \
           "slices 'x_rv', computed by a loop or branch" in msg
    assert "slice the inputs instead (e.g. pl.matmul(a[16:32, :], b)" in msg


@pl.program
class InputWindow:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 1024], FP32],
          y: pl.Out[pl.Tensor[[1000, 1000], FP32]]) -> pl.Tensor[[1000, 1000], FP32]:
        s: pl.Tensor[[1000, 1000], FP32] = pl.tensor.slice(a, [1000, 1000], [37, 5])
        e: pl.Tensor[[1000, 1000], FP32] = pl.tensor.exp(s)
        y1: pl.Tensor[[1000, 1000], FP32] = pl.tensor.assemble(y, e, [0, 0])
        return y1


@pl.program
class InputWindowExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 1024], FP32],
          y: pl.Out[pl.Tensor[[1000, 1000], FP32]]) -> pl.Tensor[[1000, 1000], FP32]:
        for i, (y_it,) in pl.range(0, 1000, 16, init_values=(y,)):
            rows_valid: pl.INDEX = pl.min(16, 1000 - i)
            # the block of the window: the window's offsets plus the block's
            s_blk: pl.Tensor[[16, 1000], FP32, pl.TensorView(valid_shape=[rows_valid, 1000])] = \
                pl.tensor.slice(a, [16, 1000], [37 + i, 5], [rows_valid, 1000])
            e: pl.Tensor[[16, 1000], FP32, pl.TensorView(valid_shape=[rows_valid, 1000])] = pl.tensor.exp(s_blk)
            y1: pl.Tensor[[1000, 1000], FP32] = pl.tensor.assemble(y_it, e, [i, 0])
            y_rv: pl.Tensor[[1000, 1000], FP32] = pl.yield_(y1)
        return y_rv


def test_a_window_of_an_input_is_blocked_at_shifted_offsets():
    out = TileTensorBlocks().run(InputWindow, PassContext(backend_type=BackendType.Ascend910B))
    ir.assert_structural_equal(out, InputWindowExpected)


@pl.program
class Whole:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 1024], FP32],
          y: pl.Out[pl.Tensor[[2048, 1024], FP32]]) -> pl.Tensor[[2048, 1024], FP32]:
        e: pl.Tensor[[2048, 1024], FP32] = pl.tensor.exp(a)
        d: pl.Tensor[[2048, 1024], FP32] = pl.tensor.slice(e, [2048, 1024], [0, 0])
        y1: pl.Tensor[[2048, 1024], FP32] = pl.tensor.assemble(y, d, [0, 0])
        return y1


@pl.program
class WholeExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[2048, 1024], FP32],
          y: pl.Out[pl.Tensor[[2048, 1024], FP32]]) -> pl.Tensor[[2048, 1024], FP32]:
        e: pl.Tensor[[2048, 1024], FP32] = pl.tensor.exp(a)
        y1: pl.Tensor[[2048, 1024], FP32] = pl.tensor.assemble(y, e, [0, 0])   # the slice was all of e
        return y1


def test_a_slice_covering_the_whole_value_reads_the_value():
    ir.assert_structural_equal(pushed(Whole), WholeExpected)
