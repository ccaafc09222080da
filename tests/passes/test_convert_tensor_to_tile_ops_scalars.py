"""ConvertTensorToTileOps: scalars computed inside a kernel keep every use — including the types
that name them (a tile's `valid_shape`) — and a tensor of dynamic shape is rejected at the user's
line with the block loop to write instead (SPEC §5, §9 "valid region lost"; docs/language.md
"Dynamic dimensions")."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core.errors import CompileError
from pypto.passes.base import PassContext
from pypto.passes.convert_tensor_to_tile_ops import ConvertTensorToTileOps
from pypto.passes.verifier import verify_basic
from pypto.runtime import RunConfig

VEC = pl.Mem.Vec
BACKEND = {"a2a3sim": BackendType.Ascend910B, "a5sim": BackendType.Ascend950}
PLATFORMS = list(BACKEND)


def convert(program):
    out = ConvertTensorToTileOps().run(program, PassContext())
    verify_basic(out, "ConvertTensorToTileOps")   # every use is defined
    return out


# ---- a tensor.read result as a load's valid_shape (the new-user trial's kernel) -----------------
@pl.program
class ReadValid:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], lens: pl.Tensor[[1, 2], pl.INT32],
          y: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        n: pl.Scalar[pl.INT32] = pl.tensor.read(lens, [0, 0])
        t: pl.Tile[[16, 64], pl.FP32, VEC, pl.TileView(valid_shape=[n, 64])] = pl.load(
            x, [0, 0], [16, 64], valid_shape=[n, 64])
        y1: pl.Tensor[[16, 64], pl.FP32] = pl.store(t, [0, 0], y)
        return y1


@pl.program
class ReadValidExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], lens: pl.Tensor[[1, 2], pl.INT32],
          y: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        lens_tile: pl.Tile[[1, 2], pl.INT32, VEC] = pl.tile.load(lens, [0, 0], [1, 2], target_memory=VEC)
        n: pl.Scalar[pl.INT32] = pl.tile.read(lens_tile, [0, 0])   # the same variable: no renaming
        t: pl.Tile[[16, 64], pl.FP32, VEC, pl.TileView(valid_shape=[n, 64])] = pl.tile.load(
            x, [0, 0], [16, 64], [n, 64], target_memory=VEC)
        y1: pl.Tensor[[16, 64], pl.FP32] = pl.tile.store(t, [0, 0], y)
        return y1


def test_a_scalar_read_in_a_kernel_sizes_a_partial_tile():
    ir.assert_structural_equal(convert(ReadValid), ReadValidExpected)


# ---- loop-carried scalars in offsets: every use follows the loop's carried value ----------------
@pl.program
class CarriedOffset:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 64], pl.FP32], n0: pl.Scalar[pl.INDEX],
          y: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i, (off, y1) in pl.range(4, init_values=(n0, y)):
            s: pl.Tensor[[16, 64], pl.FP32] = pl.slice(x, [16, 64], [off, 0])
            e: pl.Tensor[[16, 64], pl.FP32] = pl.exp(s)
            y2: pl.Tensor[[64, 64], pl.FP32] = pl.assemble(y1, e, [off, 0])
            off2: pl.Scalar[pl.INDEX] = off + 16
            off3, y3 = pl.yield_(off2, y2)
        return y3


@pl.program
class CarriedOffsetExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 64], pl.FP32], n0: pl.Scalar[pl.INDEX],
          y: pl.InOut[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        for i, (off, y1) in pl.range(4, init_values=(n0, y)):
            s: pl.Tile[[16, 64], pl.FP32, VEC] = pl.tile.load(x, [off, 0], [16, 64], target_memory=VEC)
            e: pl.Tile[[16, 64], pl.FP32, VEC] = pl.tile.exp(s)
            y2: pl.Tensor[[64, 64], pl.FP32] = pl.tile.store(e, [off, 0], y1)
            off2: pl.Scalar[pl.INDEX] = off + 16
            off3, y3 = pl.yield_(off2, y2)
        return y3


def test_slice_and_assemble_offsets_use_the_loop_carried_scalar():
    ir.assert_structural_equal(convert(CarriedOffset), CarriedOffsetExpected)


# ---- a loop-carried tile whose valid_shape names a value read in the kernel -------------------
@pl.program
class CarriedPartial:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 64], pl.FP32], lens: pl.Tensor[[1, 2], pl.INT32],
          y: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        n: pl.Scalar[pl.INT32] = pl.tensor.read(lens, [0, 1])
        acc = pl.load(x, [0, 0], [16, 64], valid_shape=[n, 64])
        for i in pl.range(1, 4):
            blk = pl.load(x, [i * 16, 0], [16, 64], valid_shape=[n, 64])
            acc = pl.add(acc, blk)
        y = pl.store(acc, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], lens: pl.Tensor[[1, 2], pl.INT32],
             y: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        y = self.k(x, lens, y)
        return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_carried_partial_tile_sized_by_a_read_runs_like_torch(tmp_path, platform):
    compiled = ir.compile(CarriedPartial, output_dir=tmp_path / "b", platform=platform,
                          backend_type=BACKEND[platform], verification_level=ir.VerificationLevel.ROUNDTRIP)
    x, lens, y = torch.randn(64, 64), torch.tensor([[5, 11]], dtype=torch.int32), torch.zeros(16, 64)
    compiled(x, lens, y, config=RunConfig(platform=platform, sanitize=True))
    want = torch.zeros(16, 64)
    want[:11] = x.reshape(4, 16, 64)[:, :11].sum(0)
    torch.testing.assert_close(y, want, rtol=1e-5, atol=1e-5)


# ---- end to end: the trial's @pl.jit kernel ----------------------------------------------------
@pl.jit.incore
def read_len_kernel(x: pl.Tensor, lens: pl.Tensor, y: pl.InOut[pl.Tensor]):
    n = pl.tensor.read(lens, [0, 0])
    t = pl.load(x, [0, 0], [16, 64], valid_shape=[n, 64])
    y = pl.store(t, [0, 0], y)
    return y


@pl.jit
def read_len(x: pl.Tensor, lens: pl.Tensor, y: pl.InOut[pl.Tensor]):
    y = read_len_kernel(x, lens, y)
    return y


@pl.jit
def read_len_slice(x: pl.Tensor, lens: pl.Tensor, y: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        n = pl.tensor.read(lens, [0, 1])
        s = pl.slice(x, [16, 64], [0, 0], valid_shape=[n, 64])
        y = pl.assemble(y, pl.exp(s), [0, 0])
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("kernel", "col", "fn"), [(read_len, 0, lambda t: t), (read_len_slice, 1, torch.exp)])
def test_a_length_read_in_the_kernel_bounds_what_is_stored(platform, kernel, col, fn):
    x, lens = torch.randn(16, 64), torch.tensor([[5, 9]], dtype=torch.int32)
    y = torch.full((16, 64), -7.0)
    kernel(x, lens, y, config=RunConfig(platform=platform, sanitize=True))
    n = int(lens[0, col])
    torch.testing.assert_close(y[:n], fn(x[:n]), rtol=1e-5, atol=1e-5)
    assert torch.all(y[n:] == -7.0)   # rows past the valid region are not written


# ---- a whole-tensor op on a dynamic dimension: tiled by TileTensorBlocks when it is a chain it
# handles (issue 11), else a clear error, and the pattern that works -------------------------------
M = pl.dynamic("M")


@pl.jit
def exp_whole(x: pl.Tensor[[M, 64], pl.FP32], y: pl.InOut[pl.Tensor[[M, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(x)
        y = pl.assemble(y, e, [0, 0])
    return y


@pytest.mark.parametrize("rows", [1, 40, 97, 1000])
def test_a_dynamic_shaped_elementwise_region_is_blocked_by_the_compiler(rows):
    x, y = torch.randn(rows, 64), torch.zeros(rows, 64)
    exp_whole(x, y)
    torch.testing.assert_close(y, torch.exp(x))


@pl.jit
def colargmax_whole(x: pl.Tensor[[M, 64], pl.FP32], y: pl.InOut[pl.Tensor[[1, 64], pl.INT32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.col_argmax(x)
        y = pl.assemble(y, e, [0, 0])
    return y


def test_a_dynamic_shaped_tensor_op_in_a_kernel_names_the_block_loop():
    with pytest.raises(CompileError) as err:   # a column argmax is not blocked automatically
        colargmax_whole(torch.randn(40, 64), torch.zeros(1, 64, dtype=torch.int32))
    msg = str(err.value)
    assert "test_convert_tensor_to_tile_ops_scalars.py" in msg and "e = pl.col_argmax(x)" in msg  # the user's line
    assert "'x' has the dynamic shape [M, 64]" in msg
    assert ("`for i in pl.range(0, M, 16):` with `blk = pl.slice(x, [16, 64], [i, 0], "
            "valid_shape=[pl.min(16, M - i), 64])`") in msg


@pl.jit
def exp_blocks(x: pl.Tensor[[M, 64], pl.FP32], y: pl.InOut[pl.Tensor[[M, 64], pl.FP32]]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for i in pl.range(0, M, 16):
            blk = pl.slice(x, [16, 64], [i, 0], valid_shape=[pl.min(16, M - i), 64])
            y[i:i + 16, :] = pl.exp(blk)
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_documented_block_loop_handles_any_size(platform):
    for m in (40, 16, 7):
        x, y = torch.randn(m, 64), torch.zeros(m, 64)
        exp_blocks(x, y, config=RunConfig(platform=platform, sanitize=True))
        torch.testing.assert_close(y, torch.exp(x), rtol=1e-5, atol=1e-5)


M_DIM = pl.dynamic("M_DIM")


@pl.program
class DimInKernel:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M_DIM, 32], pl.FP32],
          y: pl.Out[pl.Tensor[[M_DIM, 32], pl.FP32]]) -> pl.Tensor[[M_DIM, 32], pl.FP32]:
        n = pl.dim(x, 0)     # the dynamic dimension
        w = pl.dim(x, 1)     # a constant
        for i in pl.range(0, n, 16):
            t = pl.load(x, [i, 0], [16, 32])
            y = pl.store(pl.muls(t, w), [i, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M_DIM, 32], pl.FP32],
             y: pl.Out[pl.Tensor[[M_DIM, 32], pl.FP32]]) -> pl.Tensor[[M_DIM, 32], pl.FP32]:
        y = self.k(x, y)
        return y


@pytest.mark.parametrize("backend,platform", [(BackendType.Ascend910B, "a2a3sim"), (BackendType.Ascend950, "a5sim")])
def test_pl_dim_inside_a_kernel_becomes_the_dimension(backend, platform, tmp_path):
    """tensor.dim lowers (OpSpec.lowering "shape") to the constant or the dynamic-dimension variable,
    so a kernel using pl.dim compiles to PTO and runs for any size of the dynamic dimension."""
    compiled = ir.compile(DimInKernel, output_dir=tmp_path / "b", backend_type=backend, platform=platform,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    text = compiled.program.get_function("k").as_python()
    assert "pl.tensor.dim" not in text and "n: pl.Scalar[pl.INDEX] = M_DIM" in text
    for rows in (16, 48):
        x, y = torch.randn(rows, 32), torch.zeros(rows, 32)
        compiled(x, y)
        torch.testing.assert_close(y, x * 32)
