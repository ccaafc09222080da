"""FlattenTileNdTo2D: compute on rank > 2 tiles runs on 2-D tiles; loads/stores keep N-D regions."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserTypeError
from pypto.passes.base import PassContext
from pypto.passes.flatten_tile_nd_to_2d import FlattenTileNdTo2D
from pypto.runtime import RunConfig

X = [4, 8, 64]


def run(prog):
    return FlattenTileNdTo2D().run(prog, PassContext())


@pl.program
class Before:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[X, pl.FP32], y: pl.Out[pl.Tensor[X, pl.FP32]]) -> pl.Tensor[X, pl.FP32]:
        t = pl.load(x, [0, 0, 0], [2, 8, 64])
        u = pl.add(t, t)
        e = pl.exp(u)
        w = pl.mul(e, 2.0)
        z = pl.create_tile([2, 8, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        y = pl.store(w, [2, 0, 0], y)
        y = pl.store(t, [0, 0, 0], y)
        return y


@pl.program
class Expected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[X, pl.FP32], y: pl.Out[pl.Tensor[X, pl.FP32]]) -> pl.Tensor[X, pl.FP32]:
        t = pl.load(x, [0, 0, 0], [2, 8, 64])
        t_2d = pl.tile.reshape(t, [16, 64])
        u = pl.add(t_2d, t_2d)
        e = pl.exp(u)
        w = pl.mul(e, 2.0)
        # z, a buffer without contents that nothing uses, is not created
        w_nd = pl.tile.reshape(w, [2, 8, 64])
        y = pl.store(w_nd, [2, 0, 0], y)
        y = pl.store(t, [0, 0, 0], y)   # t itself is still N-D: no reshape back
        return y


def test_nd_compute_becomes_2d():
    out = run(Before)
    ir.assert_structural_equal(out, Expected)
    ir.assert_structural_equal(run(out), out)  # idempotent
    for s in out.get_function("k").body.stmts:
        if isinstance(s, ir.AssignStmt) and isinstance(s.value, ir.Call) and s.value.op in ("tile.add", "tile.exp"):
            assert len(s.var.type.shape) == 2


@pl.program
class Loop:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4, 2, 8, 32], pl.FP32], y: pl.Out[pl.Tensor[[2, 8, 32], pl.FP32]]) -> pl.Tensor[[2, 8, 32], pl.FP32]:
        acc = pl.load(x, [0, 0, 0, 0], [1, 2, 8, 32])
        for i in pl.range(1, 4):
            blk = pl.load(x, [i, 0, 0, 0], [1, 2, 8, 32])
            acc = pl.add(acc, pl.exp(blk))
        out = pl.reshape(acc, [2, 8, 32])
        y = pl.store(out, [0, 0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4, 2, 8, 32], pl.FP32], y: pl.Out[pl.Tensor[[2, 8, 32], pl.FP32]]) -> pl.Tensor[[2, 8, 32], pl.FP32]:
        y = self.k(x, y)
        return y


def test_nd_loop_kernel_runs_like_torch(tmp_path):
    compiled = ir.compile(Loop, output_dir=tmp_path / "b", verification_level=ir.VerificationLevel.ROUNDTRIP)
    body = compiled.program.get_function("k").as_python()
    assert "pl.tile.add(acc_2d, exp" in body or "pl.tile.add(acc_2d" in body
    x = torch.randn(4, 2, 8, 32)
    y = torch.zeros(2, 8, 32)
    compiled(x, y, config=RunConfig(platform="a2a3sim", sanitize=True))  # reshapes share buffers
    torch.testing.assert_close(y, x[0] + torch.exp(x[1:]).sum(0), rtol=1e-5, atol=1e-5)


# ---- reductions and row/column broadcasts of rank > 2 tiles -----------------------------------
@pl.program
class Reduce:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[2, 8, 64], pl.FP32], y: pl.Out[pl.Tensor[[2, 8, 64], pl.FP32]],
          z: pl.Out[pl.Tensor[[1, 8, 64], pl.FP32]]) -> tuple[pl.Tensor[[2, 8, 64], pl.FP32], pl.Tensor[[1, 8, 64], pl.FP32]]:
        t = pl.load(x, [0, 0, 0], [2, 8, 64])
        tmp = pl.create_tile([2, 8, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        m = pl.row_max(t, tmp)                 # [2, 8, 1]: every row on its own
        e = pl.row_expand_sub(t, m)
        y = pl.store(e, [0, 0, 0], y)
        s = pl.load(x, [1, 0, 0], [1, 8, 64])
        tmp2 = pl.create_tile([1, 8, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        cs = pl.col_sum(s, tmp2)               # [1, 1, 64]: leading dimension 1
        d = pl.col_expand_mul(s, cs)
        z = pl.store(d, [0, 0, 0], z)
        return y, z


@pl.program
class ReduceExpected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[2, 8, 64], pl.FP32], y: pl.Out[pl.Tensor[[2, 8, 64], pl.FP32]],
          z: pl.Out[pl.Tensor[[1, 8, 64], pl.FP32]]) -> tuple[pl.Tensor[[2, 8, 64], pl.FP32], pl.Tensor[[1, 8, 64], pl.FP32]]:
        t = pl.load(x, [0, 0, 0], [2, 8, 64])
        t_2d = pl.tile.reshape(t, [16, 64])
        tmp = pl.create_tile([16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)  # where it is used
        m = pl.row_max(t_2d, tmp)              # [16, 1]
        e = pl.row_expand_sub(t_2d, m)
        e_nd = pl.tile.reshape(e, [2, 8, 64])
        y = pl.store(e_nd, [0, 0, 0], y)
        s = pl.load(x, [1, 0, 0], [1, 8, 64])
        s_2d = pl.tile.reshape(s, [8, 64])
        tmp2 = pl.create_tile([8, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        cs = pl.col_sum(s_2d, tmp2)            # [1, 64]
        d = pl.col_expand_mul(s_2d, cs)
        d_nd = pl.tile.reshape(d, [1, 8, 64])
        z = pl.store(d_nd, [0, 0, 0], z)
        return y, z


def test_nd_reductions_and_broadcasts_become_2d():
    out = run(Reduce)
    ir.assert_structural_equal(out, ReduceExpected)
    ir.assert_structural_equal(run(out), out)  # idempotent


@pl.program
class PartialReduce:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[1, 16, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[1, 16, 1], pl.FP32]]) -> pl.Tensor[[1, 16, 1], pl.FP32]:
        t = pl.load(x, [0, 0, 0], [1, 16, 64], valid_shape=[1, n, 64])
        tmp = pl.create_tile([1, 16, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
        m = pl.row_sum(t, tmp)
        y = pl.store(m, [0, 0, 0], y)
        return y


def test_a_partial_nd_reduction_keeps_its_scratch_nd_without_reshaping_it():
    # a partial tile stays N-D (a reshape would mix valid and padding elements); its scratch buffer
    # is created N-D where the reduction uses it, not created 2-D and reshaped (its contents are
    # undefined: a reshape would read them)
    ir.assert_structural_equal(run(PartialReduce), PartialReduce)


def test_a_column_reduction_over_blocks_is_rejected_at_the_users_line():
    with pytest.raises(ParserTypeError) as err:
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[[2, 8, 64], pl.FP32], y: pl.Out[pl.Tensor[[2, 1, 64], pl.FP32]]) -> pl.Tensor[[2, 1, 64], pl.FP32]:
            t = pl.load(x, [0, 0, 0], [2, 8, 64])
            tmp = pl.create_tile([2, 8, 64], dtype=pl.FP32, target_memory=pl.Mem.Vec)
            c = pl.col_max(t, tmp)
            y = pl.store(c, [0, 0, 0], y)
            return y
    msg = str(err.value)
    assert "c = pl.col_max(t, tmp)" in msg
    assert ("tile.col_max: a column op on a tile with more than 2 dimensions needs every leading "
            "dimension to be 1") in msg and "process each [1, 8, 64] block separately" in msg


# ---- end to end at tensor level, against torch -------------------------------------------------
PLATFORMS = ["a2a3sim", "a5sim"]


@pl.jit
def softmax3d(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        e = pl.exp(pl.sub(x, pl.row_max(x)))      # NumPy-style broadcast of [2, 16, 1]
        y[:] = pl.row_expand_div(e, pl.row_sum(e))
    return y


@pl.jit
def col_stats(x: pl.Tensor, s: pl.Out[pl.Tensor], m: pl.Out[pl.Tensor], a: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for b in pl.range(2):
            blk = pl.slice(x, [1, 16, 64], [b, 0, 0])
            s[b:b + 1, :, :] = pl.col_sum(blk)
            m[b:b + 1, :, :] = pl.row_min(blk)
            a[b:b + 1, :, :] = pl.row_argmax(blk)
    return s, m, a


@pl.jit
def partial_row_sum(x: pl.Tensor, lens: pl.Tensor, y: pl.InOut[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        for b in pl.range(2):
            n = pl.tensor.read(lens, [0, b])
            blk = pl.slice(x, [1, 16, 64], [b, 0, 0], valid_shape=[1, n, 64])
            y[b:b + 1, :, :] = pl.row_sum(blk)
    return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_nd_reductions_run_like_torch(platform):
    config = RunConfig(platform=platform, sanitize=True)
    x = torch.randn(2, 16, 64)
    y = torch.zeros(2, 16, 64)
    softmax3d(x, y, config=config)
    torch.testing.assert_close(y, torch.softmax(x, dim=-1), rtol=1e-5, atol=1e-6)
    s, m, a = torch.zeros(2, 1, 64), torch.zeros(2, 16, 1), torch.zeros(2, 16, 1, dtype=torch.int32)
    col_stats(x, s, m, a, config=config)
    torch.testing.assert_close(s, x.sum(-2, keepdim=True), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(m, x.amin(-1, keepdim=True))
    torch.testing.assert_close(a, x.argmax(-1, keepdim=True).to(torch.int32))
    lens = torch.tensor([[5, 16]], dtype=torch.int32)
    p = torch.full((2, 16, 1), -7.0)
    partial_row_sum(x, lens, p, config=config)
    torch.testing.assert_close(p[0, :5], x[0, :5].sum(-1, keepdim=True), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(p[1], x[1].sum(-1, keepdim=True), rtol=1e-5, atol=1e-5)
    assert torch.all(p[0, 5:] == -7.0)   # rows past the valid region are not written
