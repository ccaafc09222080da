"""ConvertTensorToTileOps: a cube op's operand computed on chip outside Mat — by vector ops in Vec or
by a matmul in Acc — is staged in Mat with `tile.move` (SPEC §5; Language Guide "InCore Scopes":
a mixed region's vector-to-cube transfer lands in Mat)."""

import pypto.language as pl
from pypto import ir
from pypto.passes.base import PassContext
from pypto.passes.convert_tensor_to_tile_ops import ConvertTensorToTileOps

VEC, MAT, ACC = pl.Mem.Vec, pl.Mem.Mat, pl.Mem.Acc


def convert(program):
    return ConvertTensorToTileOps().run(program, PassContext())


@pl.program
class CastMatmul:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP16],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t: pl.Tensor[[64, 64], pl.FP16] = pl.cast(a, pl.FP16)
        m: pl.Tensor[[64, 64], pl.FP32] = pl.matmul(t, b)
        y1: pl.Tensor[[64, 64], pl.FP32] = pl.assemble(y, m, [0, 0])
        return y1


@pl.program
class CastMatmulExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP16],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        a_v: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.load(a, [0, 0], [64, 64], target_memory=VEC)
        t: pl.Tile[[64, 64], pl.FP16, VEC] = pl.tile.cast(a_v, target_type=pl.FP16, mode="round")
        t_mat: pl.Tile[[64, 64], pl.FP16, MAT] = pl.tile.move(t, target_memory=MAT)   # the transfer
        b_mat: pl.Tile[[64, 64], pl.FP16, MAT] = pl.tile.load(b, [0, 0], [64, 64], target_memory=MAT)
        m: pl.Tile[[64, 64], pl.FP32, ACC] = pl.tile.matmul(t_mat, b_mat)
        y1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(m, [0, 0], y)
        return y1


def test_a_vector_result_feeding_a_matmul_is_moved_to_mat():
    ir.assert_structural_equal(convert(CastMatmul), CastMatmulExpected)


@pl.program
class Reused:
    """A weight cast once, multiplied twice per iteration of a loop."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP16],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        w: pl.Tensor[[64, 64], pl.FP16] = pl.cast(a, pl.FP16)
        for i, (y1,) in pl.range(4, init_values=(y,)):
            bi: pl.Tensor[[16, 64], pl.FP16] = pl.slice(b, [16, 64], [i * 16, 0])
            m: pl.Tensor[[16, 64], pl.FP32] = pl.matmul(bi, w)
            n: pl.Tensor[[16, 64], pl.FP32] = pl.matmul(bi, w, b_trans=True)
            s: pl.Tensor[[16, 64], pl.FP32] = pl.add(m, n)
            y2: pl.Tensor[[64, 64], pl.FP32] = pl.assemble(y1, s, [i * 16, 0])
            y3: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(y2)
        return y3


@pl.program
class ReusedExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP16],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        a_v: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.load(a, [0, 0], [64, 64], target_memory=VEC)
        w: pl.Tile[[64, 64], pl.FP16, VEC] = pl.tile.cast(a_v, target_type=pl.FP16, mode="round")
        w_mat: pl.Tile[[64, 64], pl.FP16, MAT] = pl.tile.move(w, target_memory=MAT)   # once, before the loop
        for i, (y1,) in pl.range(4, init_values=(y,)):
            bi: pl.Tile[[16, 64], pl.FP16, MAT] = pl.tile.load(b, [i * 16, 0], [16, 64], target_memory=MAT)
            m: pl.Tile[[16, 64], pl.FP32, ACC] = pl.tile.matmul(bi, w_mat)
            m_vec: pl.Tile[[16, 64], pl.FP32, VEC] = pl.tile.move(m, target_memory=VEC)   # for the add
            n: pl.Tile[[16, 64], pl.FP32, ACC] = pl.tile.matmul(bi, w_mat, b_trans=True)
            n_vec: pl.Tile[[16, 64], pl.FP32, VEC] = pl.tile.move(n, target_memory=VEC)
            s: pl.Tile[[16, 64], pl.FP32, VEC] = pl.tile.add(m_vec, n_vec)
            y2: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(s, [i * 16, 0], y1)
            y3: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(y2)
        return y3


def test_an_operand_used_by_several_cube_ops_is_moved_once_where_it_is_computed():
    ir.assert_structural_equal(convert(Reused), ReusedExpected)


@pl.program
class Carried:
    """A carried tensor: its tile is a new value every iteration, moved where the matmuls use it; the
    matmul results go to Vec for the vector add, right where they are computed."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP16]]) -> pl.Tensor[[64, 64], pl.FP16]:
        x0: pl.Tensor[[64, 64], pl.FP16] = pl.muls(a, 0.5)
        for i, (x,) in pl.range(3, init_values=(x0,)):
            m: pl.Tensor[[64, 64], pl.FP32] = pl.matmul(x, b)
            p: pl.Tensor[[64, 64], pl.FP32] = pl.matmul(x, b, b_trans=True)
            s0: pl.Tensor[[64, 64], pl.FP32] = pl.add(m, p)
            s: pl.Tensor[[64, 64], pl.FP16] = pl.cast(s0, pl.FP16)
            x1: pl.Tensor[[64, 64], pl.FP16] = pl.yield_(s)
        y1: pl.Tensor[[64, 64], pl.FP16] = pl.assemble(y, x1, [0, 0])
        return y1


@pl.program
class CarriedExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP16]]) -> pl.Tensor[[64, 64], pl.FP16]:
        a_v: pl.Tile[[64, 64], pl.FP16, VEC] = pl.tile.load(a, [0, 0], [64, 64], target_memory=VEC)
        x0: pl.Tile[[64, 64], pl.FP16, VEC] = pl.tile.muls(a_v, 0.5)
        for i, (x,) in pl.range(3, init_values=(x0,)):
            x_mat: pl.Tile[[64, 64], pl.FP16, MAT] = pl.tile.move(x, target_memory=MAT)   # once per iteration
            b_mat: pl.Tile[[64, 64], pl.FP16, MAT] = pl.tile.load(b, [0, 0], [64, 64], target_memory=MAT)
            m: pl.Tile[[64, 64], pl.FP32, ACC] = pl.tile.matmul(x_mat, b_mat)
            m_vec: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.move(m, target_memory=VEC)
            p: pl.Tile[[64, 64], pl.FP32, ACC] = pl.tile.matmul(x_mat, b_mat, b_trans=True)
            p_vec: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.move(p, target_memory=VEC)
            s0: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.add(m_vec, p_vec)
            s: pl.Tile[[64, 64], pl.FP16, VEC] = pl.tile.cast(s0, target_type=pl.FP16, mode="round")
            x1: pl.Tile[[64, 64], pl.FP16, VEC] = pl.yield_(s)
        y1: pl.Tensor[[64, 64], pl.FP16] = pl.tile.store(x1, [0, 0], y)
        return y1


def test_a_carried_vector_tile_is_moved_at_its_cube_use_in_the_loop():
    ir.assert_structural_equal(convert(Carried), CarriedExpected)


@pl.program
class Carry:
    """Carried values whose initial and yielded tiles live in different memories are kept in Vec."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], w: pl.Tensor[[64, 64], pl.FP32],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
          z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> tuple[pl.Tensor[[64, 64], pl.FP32], pl.Tensor[[64, 64], pl.FP32]]:
        x0: pl.Tensor[[64, 64], pl.FP32] = pl.muls(a, 0.5)
        for i, (x,) in pl.range(2, init_values=(x0,)):
            m: pl.Tensor[[64, 64], pl.FP32] = pl.matmul(x, w)
            x1: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(m)
        r0: pl.Tensor[[64, 64], pl.FP32] = pl.matmul(a, w)
        for j, (r,) in pl.range(2, init_values=(r0,)):
            e: pl.Tensor[[64, 64], pl.FP32] = pl.relu(r)
            r1: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(e)
        y1: pl.Tensor[[64, 64], pl.FP32] = pl.assemble(y, x1, [0, 0])
        z1: pl.Tensor[[64, 64], pl.FP32] = pl.assemble(z, r1, [0, 0])
        return y1, z1


@pl.program
class CarryExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], w: pl.Tensor[[64, 64], pl.FP32],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
          z: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> tuple[pl.Tensor[[64, 64], pl.FP32], pl.Tensor[[64, 64], pl.FP32]]:
        a_v: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.load(a, [0, 0], [64, 64], target_memory=VEC)
        x0: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.muls(a_v, 0.5)
        for i, (x,) in pl.range(2, init_values=(x0,)):
            x_mat: pl.Tile[[64, 64], pl.FP32, MAT] = pl.tile.move(x, target_memory=MAT)
            w_mat: pl.Tile[[64, 64], pl.FP32, MAT] = pl.tile.load(w, [0, 0], [64, 64], target_memory=MAT)
            m: pl.Tile[[64, 64], pl.FP32, ACC] = pl.tile.matmul(x_mat, w_mat)
            m_vec: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.move(m, target_memory=VEC)   # back to x's memory
            x1: pl.Tile[[64, 64], pl.FP32, VEC] = pl.yield_(m_vec)
        a_mat: pl.Tile[[64, 64], pl.FP32, MAT] = pl.tile.load(a, [0, 0], [64, 64], target_memory=MAT)
        w_mat2: pl.Tile[[64, 64], pl.FP32, MAT] = pl.tile.load(w, [0, 0], [64, 64], target_memory=MAT)
        r0: pl.Tile[[64, 64], pl.FP32, ACC] = pl.tile.matmul(a_mat, w_mat2)
        r0_vec: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.move(r0, target_memory=VEC)   # carried in Vec
        for j, (r,) in pl.range(2, init_values=(r0_vec,)):
            e: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.relu(r)
            r1: pl.Tile[[64, 64], pl.FP32, VEC] = pl.yield_(e)
        y1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(x1, [0, 0], y)
        z1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(r1, [0, 0], z)
        return y1, z1


def test_a_carried_value_made_by_both_units_is_carried_in_vec():
    ir.assert_structural_equal(convert(Carry), CarryExpected)


@pl.program
class Running:
    """The matmul result is both added on the vector unit and carried: one move to Vec serves both."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 32], pl.FP32], w: pl.Tensor[[32, 32], pl.FP32],
          y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        x0: pl.Tensor[[32, 32], pl.FP32] = pl.muls(a, 0.5)
        for i, (x, acc) in pl.range(2, init_values=(x0, x0)):
            m: pl.Tensor[[32, 32], pl.FP32] = pl.matmul(x, w)
            acc2: pl.Tensor[[32, 32], pl.FP32] = pl.add(acc, m)
            x1, acc3 = pl.yield_(m, acc2)
        y1: pl.Tensor[[32, 32], pl.FP32] = pl.assemble(y, acc3, [0, 0])
        return y1


@pl.program
class RunningExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 32], pl.FP32], w: pl.Tensor[[32, 32], pl.FP32],
          y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        a_v: pl.Tile[[32, 32], pl.FP32, VEC] = pl.tile.load(a, [0, 0], [32, 32], target_memory=VEC)
        x0: pl.Tile[[32, 32], pl.FP32, VEC] = pl.tile.muls(a_v, 0.5)
        for i, (x, acc) in pl.range(2, init_values=(x0, x0)):
            x_mat: pl.Tile[[32, 32], pl.FP32, MAT] = pl.tile.move(x, target_memory=MAT)
            w_mat: pl.Tile[[32, 32], pl.FP32, MAT] = pl.tile.load(w, [0, 0], [32, 32], target_memory=MAT)
            m: pl.Tile[[32, 32], pl.FP32, ACC] = pl.tile.matmul(x_mat, w_mat)
            m_vec: pl.Tile[[32, 32], pl.FP32, VEC] = pl.tile.move(m, target_memory=VEC)
            acc2: pl.Tile[[32, 32], pl.FP32, VEC] = pl.tile.add(acc, m_vec)
            x1, acc3 = pl.yield_(m_vec, acc2)
        y1: pl.Tensor[[32, 32], pl.FP32] = pl.tile.store(acc3, [0, 0], y)
        return y1


def test_a_yielded_matmul_result_reuses_its_move_to_vec():
    ir.assert_structural_equal(convert(Running), RunningExpected)


@pl.program
class Branches:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], w: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        if n > 0:
            t: pl.Tensor[[64, 64], pl.FP32] = pl.matmul(a, w)
            r: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(t)
        else:
            u: pl.Tensor[[64, 64], pl.FP32] = pl.muls(a, 2.0)
            r: pl.Tensor[[64, 64], pl.FP32] = pl.yield_(u)
        y1: pl.Tensor[[64, 64], pl.FP32] = pl.assemble(y, r, [0, 0])
        return y1


@pl.program
class BranchesExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], w: pl.Tensor[[64, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        if n > 0:
            a_mat: pl.Tile[[64, 64], pl.FP32, MAT] = pl.tile.load(a, [0, 0], [64, 64], target_memory=MAT)
            w_mat: pl.Tile[[64, 64], pl.FP32, MAT] = pl.tile.load(w, [0, 0], [64, 64], target_memory=MAT)
            t: pl.Tile[[64, 64], pl.FP32, ACC] = pl.tile.matmul(a_mat, w_mat)
            t_vec: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.move(t, target_memory=VEC)   # the other branch's memory
            r: pl.Tile[[64, 64], pl.FP32, VEC] = pl.yield_(t_vec)
        else:
            a_v: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.load(a, [0, 0], [64, 64], target_memory=VEC)
            u: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.muls(a_v, 2.0)
            r: pl.Tile[[64, 64], pl.FP32, VEC] = pl.yield_(u)
        y1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(r, [0, 0], y)
        return y1


def test_branches_yielding_tiles_of_both_units_yield_them_in_vec():
    ir.assert_structural_equal(convert(Branches), BranchesExpected)


@pl.program
class Bias:
    """matmul_bias of a matmul result (Acc) with a bias row scaled on the vector unit (Vec)."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32], bias: pl.Tensor[[1, 64], pl.FP32],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        p: pl.Tensor[[64, 64], pl.FP32] = pl.matmul(a, b)
        bias2: pl.Tensor[[1, 64], pl.FP32] = pl.muls(bias, 2.0)
        q: pl.Tensor[[64, 64], pl.FP32] = pl.matmul_bias(p, b, bias2)
        y1: pl.Tensor[[64, 64], pl.FP32] = pl.assemble(y, q, [0, 0])
        return y1


@pl.program
class BiasExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP32], bias: pl.Tensor[[1, 64], pl.FP32],
          y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        a_mat: pl.Tile[[64, 64], pl.FP32, MAT] = pl.tile.load(a, [0, 0], [64, 64], target_memory=MAT)
        b_mat: pl.Tile[[64, 64], pl.FP32, MAT] = pl.tile.load(b, [0, 0], [64, 64], target_memory=MAT)
        p: pl.Tile[[64, 64], pl.FP32, ACC] = pl.tile.matmul(a_mat, b_mat)
        p_mat: pl.Tile[[64, 64], pl.FP32, MAT] = pl.tile.move(p, target_memory=MAT)   # Acc -> Mat, on the cube core
        bias_v: pl.Tile[[1, 64], pl.FP32, VEC] = pl.tile.load(bias, [0, 0], [1, 64], target_memory=VEC)
        bias2: pl.Tile[[1, 64], pl.FP32, VEC] = pl.tile.muls(bias_v, 2.0)
        bias2_mat: pl.Tile[[1, 64], pl.FP32, MAT] = pl.tile.move(bias2, target_memory=MAT)
        q: pl.Tile[[64, 64], pl.FP32, ACC] = pl.tile.matmul_bias(p_mat, b_mat, bias2_mat)
        y1: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(q, [0, 0], y)
        return y1


def test_a_matmul_result_and_a_vector_bias_are_moved_to_mat():
    ir.assert_structural_equal(convert(Bias), BiasExpected)


def test_converted_programs_print_and_parse_back():
    # every carried / yielded tile agrees with its loop or if result, so the printed IR re-parses
    for before in (CastMatmul, Reused, Carried, Carry, Running, Branches, Bias):
        out = convert(before)
        ir.assert_structural_equal(pl.parse(out.as_python()), out)


def test_a_matmul_result_used_by_vector_ops_moves_to_vec_once_where_it_is_computed():
    text = convert(Carried).as_python()
    assert text.count("target_memory=pl.Mem.Vec)") == 3   # a's load, m and p


@pl.program
class SliceComputed:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 64], pl.FP16],
          y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        c: pl.Tensor[[64, 64], pl.FP32] = pl.matmul(a, b)
        e: pl.Tensor[[64, 64], pl.FP32] = pl.exp(c)
        d: pl.Tensor[[16, 64], pl.FP32] = pl.slice(e, [16, 64], [16, 0])
        y1: pl.Tensor[[16, 64], pl.FP32] = pl.assemble(y, d, [0, 0])
        return y1


@pl.program
class SliceComputedExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 32], pl.FP16], b: pl.Tensor[[32, 64], pl.FP16],
          y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        a_tile: pl.Tile[[64, 32], pl.FP16, MAT] = pl.tile.load(a, [0, 0], [64, 32], target_memory=MAT)
        b_tile: pl.Tile[[32, 64], pl.FP16, MAT] = pl.tile.load(b, [0, 0], [32, 64], target_memory=MAT)
        c_tile: pl.Tile[[64, 64], pl.FP32, ACC] = pl.tile.matmul(a_tile, b_tile)
        c_tile_vec: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.move(c_tile, target_memory=VEC)
        e_tile: pl.Tile[[64, 64], pl.FP32, VEC] = pl.tile.exp(c_tile_vec)
        # the slice of a value computed on chip is a view of its tile, not a DDR region
        d_tile: pl.Tile[[16, 64], pl.FP32, VEC] = pl.tile.slice(e_tile, [16, 64], [16, 0])
        y1: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(d_tile, [0, 0], y)
        return y1


def test_a_slice_of_a_value_computed_in_the_region_is_a_tile_slice():
    ir.assert_structural_equal(convert(SliceComputed), SliceComputedExpected)
