"""TileTensorBlocks (issue 11): a tensor-level InCore chain whose values do not fit Vec becomes a
block loop of slice / chain / assemble; block shapes follow the SoC model (pass docstring)."""

import pytest

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.passes.base import PassContext
from pypto.passes.tile_tensor_blocks import TileTensorBlocks

FP32 = pl.FP32


def blocked(program, backend=BackendType.Ascend910B):
    return TileTensorBlocks().run(program, PassContext(backend_type=backend))


@pl.program
class Add256:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[256, 256], FP32], b: pl.Tensor[[256, 256], FP32],
          c: pl.Out[pl.Tensor[[256, 256], FP32]]) -> pl.Tensor[[256, 256], FP32]:
        t: pl.Tensor[[256, 256], FP32] = pl.tensor.muls(a, 2.0)
        s: pl.Tensor[[256, 256], FP32] = pl.tensor.add(t, b)
        c1: pl.Tensor[[256, 256], FP32] = pl.tensor.assemble(c, s, [0, 0])
        return c1


@pl.program
class Add256Expected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[256, 256], FP32], b: pl.Tensor[[256, 256], FP32],
          c: pl.Out[pl.Tensor[[256, 256], FP32]]) -> pl.Tensor[[256, 256], FP32]:
        # lowered: a_tile and b_tile live (muls / add are computed in place) = 2 KiB per row, plus
        # room for a second copy of the loads (the loop runs several blocks) = 4 KiB per row;
        # Vec 184 KiB -> 46 rows fit: 40 (a multiple of 8), 7 blocks, the last one partial
        for i, (c_it,) in pl.range(0, 256, 40, init_values=(c,)):
            rows_valid: pl.INDEX = pl.min(40, 256 - i)
            a_blk: pl.Tensor[[40, 256], FP32, pl.TensorView(valid_shape=[rows_valid, 256])] = \
                pl.tensor.slice(a, [40, 256], [i, 0], [rows_valid, 256])
            t: pl.Tensor[[40, 256], FP32, pl.TensorView(valid_shape=[rows_valid, 256])] = \
                pl.tensor.muls(a_blk, 2.0)   # the whole chain per block
            b_blk: pl.Tensor[[40, 256], FP32, pl.TensorView(valid_shape=[rows_valid, 256])] = \
                pl.tensor.slice(b, [40, 256], [i, 0], [rows_valid, 256])
            s: pl.Tensor[[40, 256], FP32, pl.TensorView(valid_shape=[rows_valid, 256])] = pl.tensor.add(t, b_blk)
            c1: pl.Tensor[[256, 256], FP32] = pl.tensor.assemble(c_it, s, [i, 0])
            c_rv: pl.Tensor[[256, 256], FP32] = pl.yield_(c1)
        return c_rv


def test_a_chain_too_large_for_vec_runs_per_block_of_rows():
    ir.assert_structural_equal(blocked(Add256), Add256Expected)


@pl.program
class PrimeRows:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[257, 300], FP32],
          c: pl.Out[pl.Tensor[[257, 300], FP32]]) -> pl.Tensor[[257, 300], FP32]:
        e: pl.Tensor[[257, 300], FP32] = pl.tensor.exp(a)
        c1: pl.Tensor[[257, 300], FP32] = pl.tensor.assemble(c, e, [0, 0])
        return c1


@pl.program
class PrimeRowsExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[257, 300], FP32],
          c: pl.Out[pl.Tensor[[257, 300], FP32]]) -> pl.Tensor[[257, 300], FP32]:
        # one 1216 B row (300 FP32, 32-byte aligned) in Vec + a second copy of the load: 77 rows fit;
        # 4 blocks either way, so the smallest multiple of 8 giving 4 blocks: 72 rows
        for i, (c_it,) in pl.range(0, 257, 72, init_values=(c,)):
            rows_valid: pl.INDEX = pl.min(72, 257 - i)
            # 257 is prime: the last block holds one row (valid_shape)
            a_blk: pl.Tensor[[72, 300], FP32, pl.TensorView(valid_shape=[rows_valid, 300])] = \
                pl.tensor.slice(a, [72, 300], [i, 0], [rows_valid, 300])
            e: pl.Tensor[[72, 300], FP32, pl.TensorView(valid_shape=[rows_valid, 300])] = pl.tensor.exp(a_blk)
            c1: pl.Tensor[[257, 300], FP32] = pl.tensor.assemble(c_it, e, [i, 0])
            c_rv: pl.Tensor[[257, 300], FP32] = pl.yield_(c1)
        return c_rv


def test_a_partial_tail_block_has_a_valid_shape():
    ir.assert_structural_equal(blocked(PrimeRows), PrimeRowsExpected)


@pl.program
class WideRows:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 6000], FP32],
          c: pl.Out[pl.Tensor[[16, 6000], FP32]]) -> pl.Tensor[[16, 6000], FP32]:
        r: pl.Tensor[[16, 6000], FP32] = pl.tensor.relu(a)
        n: pl.Tensor[[16, 6000], FP32] = pl.tensor.neg(r)
        x: pl.Tensor[[16, 6000], FP32] = pl.tensor.exp(n)
        y: pl.Tensor[[16, 6000], FP32] = pl.tensor.adds(x, 1.0)
        c1: pl.Tensor[[16, 6000], FP32] = pl.tensor.assemble(c, y, [0, 0])
        return c1


@pl.program
class WideRowsExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 6000], FP32],
          c: pl.Out[pl.Tensor[[16, 6000], FP32]]) -> pl.Tensor[[16, 6000], FP32]:
        # 8 whole rows (one 24000 B row in Vec: the chain runs in place) need 187.5 KiB with the
        # second copy of the load > 184 KiB: columns in blocks of 128 x 2^k FP32 (128 = 512 B, the
        # 910B DDR granularity): 8 x 2048 x 4 B x 2 = 128 KiB fits, 4096 does not; the last partial
        for i, (c_it,) in pl.range(0, 16, 8, init_values=(c,)):
            for j, (c_it_it,) in pl.range(0, 6000, 2048, init_values=(c_it,)):
                cols_valid: pl.INDEX = pl.min(2048, 6000 - j)
                a_blk: pl.Tensor[[8, 2048], FP32, pl.TensorView(valid_shape=[8, cols_valid])] = \
                    pl.tensor.slice(a, [8, 2048], [i, j], [8, cols_valid])
                r: pl.Tensor[[8, 2048], FP32, pl.TensorView(valid_shape=[8, cols_valid])] = pl.tensor.relu(a_blk)
                n: pl.Tensor[[8, 2048], FP32, pl.TensorView(valid_shape=[8, cols_valid])] = pl.tensor.neg(r)
                x: pl.Tensor[[8, 2048], FP32, pl.TensorView(valid_shape=[8, cols_valid])] = pl.tensor.exp(n)
                y: pl.Tensor[[8, 2048], FP32, pl.TensorView(valid_shape=[8, cols_valid])] = pl.tensor.adds(x, 1.0)
                c1: pl.Tensor[[16, 6000], FP32] = pl.tensor.assemble(c_it_it, y, [i, j])
                c_rv: pl.Tensor[[16, 6000], FP32] = pl.yield_(c1)
            c_rv_1: pl.Tensor[[16, 6000], FP32] = pl.yield_(c_rv)
        return c_rv_1


def test_rows_too_long_for_a_block_of_rows_are_split_into_column_blocks():
    ir.assert_structural_equal(blocked(WideRows), WideRowsExpected)


@pl.program
class Softmax:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[1000, 97], FP32],
          y: pl.Out[pl.Tensor[[1000, 97], FP32]]) -> pl.Tensor[[1000, 97], FP32]:
        m: pl.Tensor[[1000, 1], FP32] = pl.tensor.row_max(x)
        d: pl.Tensor[[1000, 97], FP32] = pl.tensor.row_expand_sub(x, m)
        e: pl.Tensor[[1000, 97], FP32] = pl.tensor.exp(d)
        s: pl.Tensor[[1000, 1], FP32] = pl.tensor.row_sum(e)
        r: pl.Tensor[[1000, 97], FP32] = pl.tensor.row_expand_div(e, s)
        y1: pl.Tensor[[1000, 97], FP32] = pl.tensor.assemble(y, r, [0, 0])
        return y1


@pl.program
class SoftmaxExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[1000, 97], FP32],
          y: pl.Out[pl.Tensor[[1000, 97], FP32]]) -> pl.Tensor[[1000, 97], FP32]:
        # rows whole (the reduced dim); x_tile and the reductions' scratch tile (416 B per row each,
        # everything else in place or [rows, 1]) + a second copy of x_tile: 151 rows fit;
        # 7 blocks, evened out to 144 rows (a multiple of 8)
        for i, (y_it,) in pl.range(0, 1000, 144, init_values=(y,)):
            rows_valid: pl.INDEX = pl.min(144, 1000 - i)
            x_blk: pl.Tensor[[144, 97], FP32, pl.TensorView(valid_shape=[rows_valid, 97])] = \
                pl.tensor.slice(x, [144, 97], [i, 0], [rows_valid, 97])
            m: pl.Tensor[[144, 1], FP32, pl.TensorView(valid_shape=[rows_valid, 1])] = pl.tensor.row_max(x_blk)
            d: pl.Tensor[[144, 97], FP32, pl.TensorView(valid_shape=[rows_valid, 97])] = \
                pl.tensor.row_expand_sub(x_blk, m)
            e: pl.Tensor[[144, 97], FP32, pl.TensorView(valid_shape=[rows_valid, 97])] = pl.tensor.exp(d)
            s: pl.Tensor[[144, 1], FP32, pl.TensorView(valid_shape=[rows_valid, 1])] = pl.tensor.row_sum(e)
            r: pl.Tensor[[144, 97], FP32, pl.TensorView(valid_shape=[rows_valid, 97])] = \
                pl.tensor.row_expand_div(e, s)
            y1: pl.Tensor[[1000, 97], FP32] = pl.tensor.assemble(y_it, r, [i, 0])
            y_rv: pl.Tensor[[1000, 97], FP32] = pl.yield_(y1)
        return y_rv


def test_a_softmax_chain_is_blocked_along_rows_with_rows_kept_whole():
    ir.assert_structural_equal(blocked(Softmax), SoftmaxExpected)


@pl.program
class Small:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 128], FP32], c: pl.Out[pl.Tensor[[64, 128], FP32]]) -> pl.Tensor[[64, 128], FP32]:
        e: pl.Tensor[[64, 128], FP32] = pl.tensor.exp(a)
        c1: pl.Tensor[[64, 128], FP32] = pl.tensor.assemble(c, e, [0, 0])
        return c1


@pytest.mark.parametrize("program", [Small], ids=["fits"])
def test_a_chain_that_fits_is_unchanged(program):
    assert blocked(program) is program or ir.structural_equal(blocked(program), program)


def _steps(program):
    """(start, stop, step) of each loop of the blocked function, outermost first."""
    from pypto.ir.stmt import ForStmt

    out, stmts = [], list(program.functions[0].body.stmts) if hasattr(program.functions[0].body, "stmts") else []
    while stmts:
        s = stmts.pop(0)
        if isinstance(s, ForStmt):
            out.append((s.start.value, s.stop.value, s.step.value))
            stmts = list(s.body.stmts)
    return out


@pl.program
class Exp400:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[1000, 400], FP32], c: pl.Out[pl.Tensor[[1000, 400], FP32]]) -> pl.Tensor[[1000, 400], FP32]:
        e: pl.Tensor[[1000, 400], FP32] = pl.tensor.exp(a)
        c1: pl.Tensor[[1000, 400], FP32] = pl.tensor.assemble(c, e, [0, 0])
        return c1


def test_the_950_vec_gives_other_blocks():
    # Exp400: 1600 B per row, twice (the loop runs several blocks: room for the next load):
    # 910B Vec 184 KiB -> 58 rows -> 56 (a multiple of 8); 950 Vec 240 KiB -> 76 rows -> 72.
    assert _steps(blocked(Exp400)) == [(0, 1000, 56)]
    assert _steps(blocked(Exp400, BackendType.Ascend950)) == [(0, 1000, 72)]
    # WideRows: 8 rows x 2048 columns x 4 B x 2 = 128 KiB fits both, 4096 columns fit neither;
    # Add256: 4 KiB per row -> 60 rows -> 56 (5 blocks); Softmax: 1248 B per row -> 196 rows -> 192,
    # 6 blocks, evened out to 168 rows
    assert _steps(blocked(WideRows, BackendType.Ascend950)) == [(0, 16, 8), (0, 6000, 2048)]
    assert _steps(blocked(Add256, BackendType.Ascend950)) == [(0, 256, 56)]
    assert _steps(blocked(Softmax, BackendType.Ascend950)) == [(0, 1000, 168)]


@pl.program
class Called:
    @pl.function(type=pl.FunctionType.Orchestration)
    def host(self, a: pl.Tensor[[1000, 97], FP32],
             c: pl.Out[pl.Tensor[[1000, 97], FP32]]) -> pl.Tensor[[1000, 97], FP32]:
        c1: pl.Tensor[[1000, 97], FP32] = self.k(a, c)
        return c1

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[1000, 97], FP32],
          c: pl.Out[pl.Tensor[[1000, 97], FP32]]) -> pl.Tensor[[1000, 97], FP32]:
        e: pl.Tensor[[1000, 97], FP32] = pl.tensor.exp(a)
        r: pl.Tensor[[1000, 97], FP32] = pl.tensor.relu(e)
        c1: pl.Tensor[[1000, 97], FP32] = pl.tensor.assemble(c, r, [0, 0])
        return c1


@pl.program
class CalledExpected:
    @pl.function(type=pl.FunctionType.Orchestration)
    def host(self, a: pl.Tensor[[1000, 97], FP32],
             c: pl.Out[pl.Tensor[[1000, 97], FP32]]) -> pl.Tensor[[1000, 97], FP32]:
        # one task per row block, spread over the cores as pl.parallel does; a task computes one
        # block (nothing to double-buffer): 416 B per row (exp and relu in place):
        # 452 rows fit; 3 blocks, evened out to 336 rows
        for i, (c_it,) in pl.parallel(0, 1000, 336, init_values=(c,)):
            c1_blk: pl.Tensor[[1000, 97], FP32] = self.k(a, c_it, i)
            c1: pl.Tensor[[1000, 97], FP32] = pl.yield_(c1_blk)
        return c1

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[1000, 97], FP32], c: pl.Out[pl.Tensor[[1000, 97], FP32]],
          i: pl.Scalar[pl.INDEX]) -> pl.Tensor[[1000, 97], FP32]:
        rows_valid: pl.INDEX = pl.min(336, 1000 - i)
        a_blk: pl.Tensor[[336, 97], FP32, pl.TensorView(valid_shape=[rows_valid, 97])] = \
            pl.tensor.slice(a, [336, 97], [i, 0], [rows_valid, 97])
        e: pl.Tensor[[336, 97], FP32, pl.TensorView(valid_shape=[rows_valid, 97])] = pl.tensor.exp(a_blk)
        r: pl.Tensor[[336, 97], FP32, pl.TensorView(valid_shape=[rows_valid, 97])] = pl.tensor.relu(e)
        c1: pl.Tensor[[1000, 97], FP32] = pl.tensor.assemble(c, r, [i, 0])
        return c1


def test_a_kernel_called_from_orchestration_gets_one_parallel_task_per_row_block():
    ir.assert_structural_equal(blocked(Called), CalledExpected)


M = pl.dynamic("M")


@pl.program
class Dynamic:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, 300], FP32], y: pl.Out[pl.Tensor[[M, 300], FP32]]) -> pl.Tensor[[M, 300], FP32]:
        e: pl.Tensor[[M, 300], FP32] = pl.tensor.exp(x)
        y1: pl.Tensor[[M, 300], FP32] = pl.tensor.assemble(y, e, [0, 0])
        return y1


@pl.program
class DynamicExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, 300], FP32], y: pl.Out[pl.Tensor[[M, 300], FP32]]) -> pl.Tensor[[M, 300], FP32]:
        # M is only known at run time: always blocked, every block's rows bounded by M;
        # 77 rows fit -> 72, the largest multiple of 8
        for i, (y_it,) in pl.range(0, M, 72, init_values=(y,)):
            rows_valid: pl.INDEX = pl.min(72, M - i)
            x_blk: pl.Tensor[[72, 300], FP32, pl.TensorView(valid_shape=[rows_valid, 300])] = \
                pl.tensor.slice(x, [72, 300], [i, 0], [rows_valid, 300])
            e: pl.Tensor[[72, 300], FP32, pl.TensorView(valid_shape=[rows_valid, 300])] = pl.tensor.exp(x_blk)
            y1: pl.Tensor[[M, 300], FP32] = pl.tensor.assemble(y_it, e, [i, 0])
            y_rv: pl.Tensor[[M, 300], FP32] = pl.yield_(y1)
        return y_rv


def test_a_dynamic_dimension_gets_a_block_loop_with_valid_shape_tails():
    ir.assert_structural_equal(blocked(Dynamic), DynamicExpected)
