"""block_shape (issue 11): the footprint of a candidate block kernel is what MemoryReuse packs, and
the block choice is the documented, deterministic one (module docstring)."""

import pytest

import pypto.language as pl
from pypto.core.enums import MemorySpace
from pypto.passes.base import PassContext
from pypto.passes.block_shape import BlockPlan, Footprint, choose_blocks, footprint

FP32 = pl.FP32
KIB = 1024


@pl.program
class Chain:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[256, 256], FP32], b: pl.Tensor[[256, 256], FP32],
          c: pl.Out[pl.Tensor[[256, 256], FP32]]) -> pl.Tensor[[256, 256], FP32]:
        t: pl.Tensor[[256, 256], FP32] = pl.tensor.muls(a, 2.0)
        s: pl.Tensor[[256, 256], FP32] = pl.tensor.add(t, b)
        c1: pl.Tensor[[256, 256], FP32] = pl.tensor.assemble(c, s, [0, 0])
        return c1


@pl.program
class RowMax:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 512], FP32], y: pl.Out[pl.Tensor[[16, 1], FP32]]) -> pl.Tensor[[16, 1], FP32]:
        m: pl.Tensor[[16, 1], FP32] = pl.tensor.row_max(x)
        y1: pl.Tensor[[16, 1], FP32] = pl.tensor.assemble(y, m, [0, 0])
        return y1


def test_the_footprint_counts_live_tiles_as_memory_reuse_packs_them():
    # a_tile and b_tile (256 KiB each) live together; muls and add are computed in place
    fp = footprint(Chain.functions[0], PassContext())
    assert fp == Footprint({MemorySpace.Vec: 512 * KIB}, 512 * KIB)
    # a row reduction's scratch tile (as large as its input) counts; the [16, 1] result takes 64 B
    fp = footprint(RowMax.functions[0], PassContext())
    assert fp == Footprint({MemorySpace.Vec: 2 * 32 * KIB + 64}, 32 * KIB)


def test_double_buffering_adds_a_second_copy_of_the_loads_to_vec_only():
    fp = Footprint({MemorySpace.Vec: 100, MemorySpace.Mat: 500}, 60)
    cap = {MemorySpace.Vec: 150, MemorySpace.Mat: 500}.__getitem__
    assert fp.fits(cap, double_buffer=False)
    assert not fp.fits(cap, double_buffer=True)       # 100 + 60 > 150
    assert not Footprint({MemorySpace.Mat: 501}).fits(cap, double_buffer=False)


def _budget(row_bytes, limit):
    """fits(r, c): r rows of c columns of `row_bytes` per column within `limit` bytes."""
    return lambda r, c: r * c * row_bytes <= limit


@pytest.mark.parametrize(("rows", "cols", "static", "reduces", "limit", "want"), [
    (256, 256, True, False, 1 << 30, BlockPlan(256, 256)),       # everything fits: whole
    (1000, 100, True, False, 100 * 4 * 100, BlockPlan(96, 100)),  # 100 rows fit -> 96, 11 blocks
    (1000, 100, False, False, 1 << 30, BlockPlan(992, 100)),      # dynamic rows: never whole
    (16, 6000, True, False, 8 * 2500 * 4, BlockPlan(8, 2048)),    # 8 rows of 6000 do not fit: 128 x 2^4
    (16, 6000, True, True, 8 * 2500 * 4, BlockPlan(3, 6000)),     # rows kept whole (argmax): 3 fit
    (4, 6000, True, True, 5000 * 4, None),                        # ... and one row does not fit
    (16, 6000, True, False, 8 * 100 * 4, BlockPlan(6, 128)),      # not even 8 x unit: 6 rows
], ids=["whole", "rows", "dynamic", "columns", "reduction", "reduction-too-long", "narrow"])
def test_choose_blocks(rows, cols, static, reduces, limit, want):
    assert choose_blocks(rows, cols, static, reduces, 128, _budget(4, limit)) == want


def _footprint_by_running_memory_reuse(func, ctx):
    """The footprint as the Default pipeline's passes give it: every pass of LOWERING run (MemoryReuse
    included), its records read back and the loaded tiles' buffers measured on the rewritten kernels."""
    from pypto.core.errors import PyPTOError
    from pypto.ir import Program
    from pypto.passes.block_shape import LOWERING, _Loads

    sub = PassContext(ctx.backend_type)
    program = Program(name=f"{func.name}_block", functions=(func,))
    try:
        for cls in LOWERING:
            program = cls().run(program, sub)
    except PyPTOError:
        return None
    packed = {}
    for spaces in sub.records.get("memory_reuse", {}).values():
        for name, stats in spaces.items():
            packed[MemorySpace[name]] = max(packed.get(MemorySpace[name], 0), stats["reused"])
    loads = _Loads()
    for f in program.functions:
        loads.visit_function(f)
    return Footprint(packed, loads.bytes)


@pytest.mark.parametrize("backend", ["Ascend910B", "Ascend950"])
def test_a_candidate_refused_early_is_one_the_whole_lowering_refuses(backend, examples_dir, monkeypatch):
    """fits_core (module docstring "Refused early") gives footprint's answer for every candidate block
    the tensor-level examples try, and the early refusal happens (it is what makes the search cheap);
    footprint (MemoryReuse's plan, the kernels not rewritten) is what running MemoryReuse gives."""
    import tensor_layernorm
    import tensor_rmsnorm_matmul
    import tensor_softmax

    from pypto.backend import BackendType
    from pypto.compiler import lower
    from pypto.passes import block_shape, tile_tensor_blocks

    fits_core = block_shape.fits_core
    calls, early = [], []
    surely_over = block_shape._surely_over

    def spy_surely_over(program, vec, double_buffer):
        over = surely_over(program, vec, double_buffer)
        early.append(over)
        return over

    def checked(func, ctx, double_buffer):
        got = fits_core(func, ctx, double_buffer)
        fp = footprint(func, ctx)
        assert fp == _footprint_by_running_memory_reuse(func, ctx), func.name
        calls.append((func.name, got))
        assert got == (fp is not None and fp.fits(ctx.soc.capacity_of, double_buffer)), func.name
        return got

    blocks_surely_over = block_shape._blocks_surely_over

    def spy_blocks_surely_over(func, vec, double_buffer):
        over = blocks_surely_over(func, vec, double_buffer)
        early.append(over)
        return over

    monkeypatch.setattr(block_shape, "_surely_over", spy_surely_over)
    monkeypatch.setattr(block_shape, "_blocks_surely_over", spy_blocks_surely_over)
    monkeypatch.setattr(tile_tensor_blocks, "fits_core", checked)
    for jit in (tensor_softmax.softmax, tensor_layernorm.layernorm, tensor_rmsnorm_matmul.rmsnorm_matmul):
        lower(jit.specialize(), backend_type=BackendType[backend])
    assert len(calls) >= 20 and any(early) and not all(early)
