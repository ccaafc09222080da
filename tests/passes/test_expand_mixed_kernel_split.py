"""Split modes of mixed kernels: `pl.split(...)` / `pl.cross_core_slot(...)` travel from the `pl.at`
scope onto the outlined function (printed in `@pl.function(...)`, parsed back), and ExpandMixedKernel
halves the vector half of the kernel between the two vector cores (Language Guide "InCore Scopes";
SPEC §2.2 "SplitMode")."""

import pytest

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import CompileError, ParserTypeError
from pypto.passes.base import PassContext
from pypto.passes.expand_mixed_kernel import ExpandMixedKernel
from pypto.passes.outline_incore_scopes import OutlineIncoreScopes

M = K = N = 32
UD, LR, NONE = pl.SplitMode.UP_DOWN, pl.SplitMode.LEFT_RIGHT, pl.SplitMode.NONE


@pl.program
class Scoped:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 32], pl.FP32]) -> pl.Tensor[[16, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(UD), pl.cross_core_slot(slot_num=4)]):
            y = pl.add(x, x)
        return y


@pl.program
class ScopedExpected:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CORE_GROUP,
                 optimizations=[pl.split(UD), pl.cross_core_slot(slot_num=4)])
    def main_incore_0(self, x: pl.Tensor[[16, 32], pl.FP32],
                      y_out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        y = pl.add(x, x)
        y_stored = pl.assemble(y_out, y, [0, 0])
        return y_stored

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 32], pl.FP32]) -> pl.Tensor[[16, 32], pl.FP32]:
        y_buf = pl.create_tensor([16, 32], dtype=pl.FP32)
        y = self.main_incore_0(x, y_buf)
        return y


def test_outlining_carries_the_scope_optimizations_onto_the_function():
    out = OutlineIncoreScopes().run(Scoped, PassContext())
    ir.assert_structural_equal(out, ScopedExpected)
    f = out.get_function("main_incore_0")
    assert f.optimizations == (("split", (("mode", UD),)), ("cross_core_slot", (("slot_num", 4),)))
    # a different split is a different function
    other = ScopedExpected.as_python().replace("pl.split(pl.SplitMode.UP_DOWN)", "pl.split(pl.SplitMode.LEFT_RIGHT)")
    assert not ir.structural_equal(pl.parse(other), ScopedExpected)


def test_function_optimizations_round_trip_through_text_and_msgpack():
    text = ScopedExpected.as_python()
    assert ("@pl.function(type=pl.FunctionType.InCore, level=pl.Level.CORE_GROUP, optimizations="
            "[pl.split(pl.SplitMode.UP_DOWN), pl.cross_core_slot(slot_num=4)])") in text
    again = pl.parse(text)
    ir.assert_structural_equal(again, ScopedExpected)
    assert again.as_python() == text
    assert ir.deserialize(ir.serialize(ScopedExpected)).as_python() == text


def test_bad_function_optimizations_are_a_located_type_error():
    bad = ScopedExpected.as_python().replace("pl.cross_core_slot(slot_num=4)", "4")
    with pytest.raises(ParserTypeError, match=r"optimizations=\.\.\.\) expects a list of pl.split"):
        pl.parse(bad)


# ---- ExpandMixedKernel with a split ---------------------------------------------------------

@pl.program
class Before:
    """matmul on the cube core; exp plus a bias row on the vector cores, split UP_DOWN."""

    @pl.function(type=pl.FunctionType.InCore, optimizations=[pl.split(UD)])
    def k(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], bias: pl.Tensor[[1, N], pl.FP32],
          c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        a1: pl.Tile[[M, K], pl.FP16, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        b1: pl.Tile[[K, N], pl.FP16, pl.Mem.Mat] = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        a0: pl.Tile[[M, K], pl.FP16, pl.Mem.Left] = pl.move(a1, target_memory=pl.Mem.Left)
        b0: pl.Tile[[K, N], pl.FP16, pl.Mem.Right] = pl.move(b1, target_memory=pl.Mem.Right)
        p: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.matmul(a0, b0)
        e: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.exp(p)
        bt: pl.Tile[[1, N], pl.FP32] = pl.load(bias, [0, 0], [1, N])
        s: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.col_expand_add(e, bt)
        c1 = pl.store(s, [0, 0], c)
        return c1


@pl.program
class Expected:
    @pl.function(type=pl.FunctionType.AIC)
    def k_aic(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16]):
        a1: pl.Tile[[M, K], pl.FP16, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        b1: pl.Tile[[K, N], pl.FP16, pl.Mem.Mat] = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        a0: pl.Tile[[M, K], pl.FP16, pl.Mem.Left] = pl.move(a1, target_memory=pl.Mem.Left)
        b0: pl.Tile[[K, N], pl.FP16, pl.Mem.Right] = pl.move(b1, target_memory=pl.Mem.Right)
        p: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.matmul(a0, b0)
        pl.system.tpush_to_aiv(p, split=UD)      # the whole tile; each vector core gets half
        return

    @pl.function(type=pl.FunctionType.AIV)
    def k_aiv(self, bias: pl.Tensor[[1, N], pl.FP32],
              c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        subblock: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()
        p: pl.Tile[[M // 2, N], pl.FP32, pl.Mem.Vec] = pl.system.tpop_from_aic([M // 2, N], dtype=pl.FP32, split=UD)
        e: pl.Tile[[M // 2, N], pl.FP32, pl.Mem.Vec] = pl.exp(p)
        pl.system.tfree_to_aic(p)
        bt: pl.Tile[[1, N], pl.FP32, pl.Mem.Vec] = pl.load(bias, [0, 0], [1, N])   # extent 1: kept whole
        s: pl.Tile[[M // 2, N], pl.FP32, pl.Mem.Vec] = pl.col_expand_add(e, bt)
        c1 = pl.store(s, [subblock * (M // 2), 0], c)   # this core's rows
        return c1

    @pl.function(type=pl.FunctionType.Group, optimizations=[pl.split(UD)])
    def k(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], bias: pl.Tensor[[1, N], pl.FP32],
          c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        self.k_aic(a, b)
        r = self.k_aiv(bias, c)
        return r


def test_up_down_halves_the_rows_of_every_vector_tile():
    ctx = PassContext()
    out = ExpandMixedKernel().run(Before, ctx)
    ir.assert_structural_equal(out, Expected)
    assert ctx.records["mixed_kernels"]["k"] == {"aic": "k_aic", "aiv": "k_aiv", "pipes": ["C->V"], "split": "UP_DOWN"}


def test_left_right_halves_the_columns_and_offsets_column_loads():
    before = pl.parse(Before.as_python().replace("UP_DOWN", "LEFT_RIGHT"))
    aiv = ExpandMixedKernel().run(before, PassContext()).get_function("k_aiv").as_python()
    h = N // 2
    assert f"pl.Tile[[{M}, {h}], pl.FP32, pl.Mem.Vec] = pl.system.tpop_from_aic([{M}, {h}], dtype=pl.FP32, " \
           "split=pl.SplitMode.LEFT_RIGHT)" in aiv
    # the bias row is split too now (its columns), and loaded at this core's column offset
    assert f"bt: pl.Tile[[1, {h}], pl.FP32, pl.Mem.Vec] = pl.tile.load(bias, [0, subblock * {h}], [1, {h}]" in aiv
    assert f"pl.tile.store(s, [0, subblock * {h}], c)" in aiv


@pl.program
class VecToCube:
    """Scale on the vector cores, matmul on the cube core: the vector cores each send half."""

    @pl.function(type=pl.FunctionType.InCore, optimizations=[pl.split(UD)])
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


@pytest.mark.parametrize("backend", [BackendType.Ascend950, BackendType.Ascend910B])
def test_vector_to_cube_sends_halves_and_the_cube_receives_the_whole_tile(backend):
    out = ExpandMixedKernel().run(VecToCube, PassContext(backend_type=backend))
    aiv, aic = out.get_function("k_aiv").as_python(), out.get_function("k_aic").as_python()
    assert "pl.tile.load(a, [subblock * 16, 0], [16, 32], target_memory=pl.Mem.Vec)" in aiv
    assert "pl.system.tpush_to_aic(av2, split=pl.SplitMode.UP_DOWN)" in aiv
    assert "pl.system.tpop_from_aiv([32, 32], dtype=pl.FP16, split=pl.SplitMode.UP_DOWN)" in aic


def _split_error(body: str, mode: str = "UP_DOWN") -> str:
    src = f'''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore, optimizations=[pl.split(pl.SplitMode.{mode})])
    def k(self, a: pl.Tensor[[32, 32], pl.FP16], b: pl.Tensor[[32, 32], pl.FP16],
          c: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        a1 = pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        b1 = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        p = pl.matmul(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
{body}
        return c
'''
    with pytest.raises(CompileError) as e:
        ExpandMixedKernel().run(pl.parse(src), PassContext())
    return str(e.value)


def test_a_reduction_across_the_split_dimension_is_rejected():
    msg = _split_error("""        tmp = pl.create_tile([32, 32], dtype=pl.FP32)
        r = pl.row_sum(p, tmp)
        c = pl.store(r, [0, 0], c)""", "LEFT_RIGHT")
    assert "tile.row_sum reduces across the split dimension" in msg and "pl.SplitMode.LEFT_RIGHT" in msg
    # the same reduction along the other dimension is fine under UP_DOWN
    ok = ExpandMixedKernel().run(pl.parse(Before.as_python()), PassContext())
    assert ok.get_function("k_aiv") is not None


def test_ops_that_address_elements_cannot_be_split():
    msg = _split_error("""        e = pl.exp(p)
        t = pl.tile.transpose(e, axis1=0, axis2=1)
        c = pl.store(t, [0, 0], c)""")
    assert "tile.transpose cannot run on half of a tile" in msg


@pl.program
class RowToCube:
    """A [1, N] row scaled on the vector cores is the bias of a matmul: under UP_DOWN it is not
    halved (extent 1), both vector cores hold it whole, and vector core 0 alone sends it."""

    @pl.function(type=pl.FunctionType.InCore, optimizations=[pl.split(UD)])
    def k(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], bias: pl.Tensor[[1, N], pl.FP32],
          c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        bv: pl.Tile[[1, N], pl.FP32, pl.Mem.Vec] = pl.load(bias, [0, 0], [1, N])
        b2: pl.Tile[[1, N], pl.FP32, pl.Mem.Vec] = pl.mul(bv, 2.0)
        bm: pl.Tile[[1, N], pl.FP32, pl.Mem.Mat] = pl.move(b2, target_memory=pl.Mem.Mat)
        a1: pl.Tile[[M, K], pl.FP16, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        b1: pl.Tile[[K, N], pl.FP16, pl.Mem.Mat] = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        a0: pl.Tile[[M, K], pl.FP16, pl.Mem.Left] = pl.move(a1, target_memory=pl.Mem.Left)
        b0: pl.Tile[[K, N], pl.FP16, pl.Mem.Right] = pl.move(b1, target_memory=pl.Mem.Right)
        bb: pl.Tile[[1, N], pl.FP32, pl.Mem.Bias] = pl.move(bm, target_memory=pl.Mem.Bias)
        p: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.matmul_bias(a0, b0, bb)
        c1 = pl.store(p, [0, 0], c)
        return c1


@pl.program
class RowToCubeExpected:
    @pl.function(type=pl.FunctionType.AIV)
    def k_aiv(self, bias: pl.Tensor[[1, N], pl.FP32]):
        subblock: pl.Scalar[pl.INDEX] = pl.tile.get_subblock_idx()
        bv: pl.Tile[[1, N], pl.FP32, pl.Mem.Vec] = pl.load(bias, [0, 0], [1, N])
        b2: pl.Tile[[1, N], pl.FP32, pl.Mem.Vec] = pl.mul(bv, 2.0)
        if subblock == 0:
            pl.system.tpush_to_aic(b2, split=NONE)
        return

    @pl.function(type=pl.FunctionType.AIC)
    def k_aic(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
              c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        bm: pl.Tile[[1, N], pl.FP32, pl.Mem.Mat] = pl.system.tpop_from_aiv([1, N], dtype=pl.FP32, split=NONE)
        a1: pl.Tile[[M, K], pl.FP16, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        b1: pl.Tile[[K, N], pl.FP16, pl.Mem.Mat] = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
        a0: pl.Tile[[M, K], pl.FP16, pl.Mem.Left] = pl.move(a1, target_memory=pl.Mem.Left)
        b0: pl.Tile[[K, N], pl.FP16, pl.Mem.Right] = pl.move(b1, target_memory=pl.Mem.Right)
        bb: pl.Tile[[1, N], pl.FP32, pl.Mem.Bias] = pl.move(bm, target_memory=pl.Mem.Bias)
        pl.system.tfree_to_aiv(bm)
        p: pl.Tile[[M, N], pl.FP32, pl.Mem.Acc] = pl.matmul_bias(a0, b0, bb)
        c1 = pl.store(p, [0, 0], c)
        return c1

    @pl.function(type=pl.FunctionType.Group, optimizations=[pl.split(UD)])
    def k(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16], bias: pl.Tensor[[1, N], pl.FP32],
          c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        self.k_aiv(bias)
        r = self.k_aic(a, b, c)
        return r


@pytest.mark.parametrize("backend", [BackendType.Ascend950, BackendType.Ascend910B])
def test_a_one_row_tile_is_sent_to_the_cube_core_by_vector_core_0_alone(backend):
    ctx = PassContext(backend_type=backend)
    ir.assert_structural_equal(ExpandMixedKernel().run(RowToCube, ctx), RowToCubeExpected)
    assert ctx.records["mixed_kernels"]["k"]["pipes"] == ["V->C"]
    # under LEFT_RIGHT the row has N columns to halve: each vector core sends its half, no guard
    lr = pl.parse(RowToCube.as_python().replace("UP_DOWN", "LEFT_RIGHT"))
    aiv = ExpandMixedKernel().run(lr, PassContext(backend_type=backend)).get_function("k_aiv").as_python()
    assert "pl.system.tpush_to_aic(b2, split=pl.SplitMode.LEFT_RIGHT)" in aiv and "if " not in aiv


def test_a_tile_without_a_path_to_the_other_core_is_a_compile_error():
    src = '''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 32], pl.FP16], c: pl.Out[pl.Tensor[[32, 32], pl.FP16]]) -> pl.Tensor[[32, 32], pl.FP16]:
        a1 = pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        e = pl.exp(a1)
        c = pl.store(e, [0, 0], c)
        return c
'''
    for backend in (BackendType.Ascend910B, BackendType.Ascend950):
        with pytest.raises(CompileError, match=r"tile 'a1' \(FP16, in Mat on the cube \(AIC\) core\) is used on "
                           rf"the vector \(AIV\) core, but {backend.name} can move Mat neither to Vec nor to DDR") as e:
            ExpandMixedKernel().run(pl.parse(src), PassContext(backend_type=backend))
        assert ":8:" in str(e.value)   # where the tile is made (and would be sent)
