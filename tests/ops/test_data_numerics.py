"""Cast, creation, memory, shape/view, matmul, gather/sort, block identity and system ops on the
simulator against torch."""

import pytest
import torch
from op_harness import TORCH, close, rand, run_kernel

import pypto.language as pl

M, N = 16, 32
SHAPE = (M, N)


@pytest.mark.parametrize("src,dst", [("FP32", "FP16"), ("FP16", "FP32"), ("FP32", "BF16"), ("BF16", "FP32"),
                                     ("INT32", "FP32"), ("INT8", "FP16"), ("FP16", "INT8"), ("INT32", "INT8")])
def test_cast_pairs(src, dst):
    x = rand(src, SHAPE, low=-100, high=100) if src.startswith("INT") else (torch.randn(SHAPE) * 20).to(TORCH[src])
    (y,) = run_kernel(f"t = pl.load(x, [0, 0], [{M}, {N}])\ny_t = pl.cast(t, pl.{dst}, mode=\"trunc\")",
                      [("x", src, SHAPE)], [("y", dst, SHAPE)], x)
    want = x.float().trunc() if x.is_floating_point() and not TORCH[dst].is_floating_point else x
    assert torch.equal(y, want.to(TORCH[dst]))


def test_tensor_cast_mode_survives_lowering():
    @pl.jit
    def f(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.cast(x, pl.INT32, mode="floor")
        return y

    x, y = torch.randn(M, N) * 5, torch.empty(M, N, dtype=torch.int32)
    f(x, y)
    assert torch.equal(y, torch.floor(x).to(torch.int32))


def test_creation_full_ci_tri():
    body = """
    y1_t = pl.tile.full([4, 16], 2.5, dtype=pl.FP16)
    y2_t = pl.tile.ci(s, [2, 16], dtype=pl.INT32)
    y3_t = pl.tile.ci(5, [1, 16], dtype=pl.INT16, descending=True)
    y4_t = pl.tile.tri([8, 8], 1, dtype=pl.FP32)
    y5_t = pl.tile.tri([8, 8], 0, dtype=pl.INT32, upper=True)
    """
    outs = [("y1", "FP16", (4, 16)), ("y2", "INT32", (2, 16)), ("y3", "INT16", (1, 16)), ("y4", "FP32", (8, 8)),
            ("y5", "INT32", (8, 8))]
    y1, y2, y3, y4, y5 = run_kernel(body, [("x", "FP32", SHAPE), ("s", "INT32", None)], outs, rand("FP32", SHAPE), 7)
    assert torch.equal(y1, torch.full((4, 16), 2.5, dtype=torch.float16))
    assert torch.equal(y2, (7 + torch.arange(16, dtype=torch.int32)).expand(2, 16))
    assert torch.equal(y3, (5 - torch.arange(16)).to(torch.int16).unsqueeze(0))
    assert torch.equal(y4, torch.tril(torch.ones(8, 8), diagonal=1))
    assert torch.equal(y5, torch.triu(torch.ones(8, 8, dtype=torch.int32)))


def test_tile_read_and_write():
    body = """
    t = pl.load(x, [0, 0], [16, 32])
    v = pl.tile.read(t, [3, 5])
    w = pl.tile.write(t, [0, 0], v)
    y_t = pl.tile.write(w, [1, 1], n)
    z_t = t
    """
    x = rand("FP32", SHAPE)
    y, z = run_kernel(body, [("x", "FP32", SHAPE), ("n", "INT32", None)],
                      [("y", "FP32", SHAPE), ("z", "FP32", SHAPE)], x, 7)
    want = x.clone()
    want[0, 0], want[1, 1] = x[3, 5], 7.0
    assert torch.equal(y, want)
    assert torch.equal(z, x)  # tile.write made new values; `t` is unchanged


def test_tensor_dim_read_write_run_on_the_host():
    prog = pl.parse("""
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 32], pl.FP32], z: pl.InOut[pl.Tensor[[2, 2], pl.FP32]]):
        d = pl.tensor.dim(x, axis=1)
        v = pl.tensor.read(x, [3, 5])
        z = pl.tensor.write(z, [0, 1], v)
        z = pl.tensor.write(z, [1, 0], d)
""")
    x, z = rand("FP32", SHAPE), torch.zeros(2, 2)
    from pypto import ir

    ir.compile(prog, dump_passes=False, skip_ptoas=True)(x, z)
    assert torch.equal(z, torch.tensor([[0.0, float(x[3, 5])], [32.0, 0.0]]))


def test_reshape_view_transpose_and_transpose_view():
    body = """
    t = pl.load(x, [0, 0], [16, 32])
    y1_t = pl.reshape(t, [32, 16])
    y2_t = pl.view(t, [8, 64])
    y3_t = pl.transpose(t, 0, 1)
    y4_t = pl.tile.transpose_view(t)
    """
    x = rand("FP32", SHAPE)
    outs = [("y1", "FP32", (32, 16)), ("y2", "FP32", (8, 64)), ("y3", "FP32", (32, 16)), ("y4", "FP32", (32, 16))]
    y1, y2, y3, y4 = run_kernel(body, [("x", "FP32", SHAPE)], outs, x)
    assert torch.equal(y1, x.reshape(32, 16)) and torch.equal(y2, x.reshape(8, 64))
    assert torch.equal(y3, x.T) and torch.equal(y4, x.T)


def test_slice_assemble_concat_extract():
    body = """
    t = pl.load(x, [0, 0], [16, 32])
    u = pl.load(z, [0, 0], [16, 32])
    y1_t = pl.tile.slice(t, [8, 16], [4, 8])
    y2_t = pl.tile.assemble(t, y1_t, [0, 16])
    y3_t = pl.concat(t, u, axis=0)
    y4_t = pl.concat(t, u)
    y5_t = pl.extract(t, [8, 0], [8, 32])
    """
    x, z = rand("FP16", SHAPE), rand("FP16", SHAPE)
    outs = [("y1", "FP16", (8, 16)), ("y2", "FP16", SHAPE), ("y3", "FP16", (32, 32)), ("y4", "FP16", (16, 64)),
            ("y5", "FP16", (8, 32))]
    y1, y2, y3, y4, y5 = run_kernel(body, [("x", "FP16", SHAPE), ("z", "FP16", SHAPE)], outs, x, z)
    assert torch.equal(y1, x[4:12, 8:24])
    want = x.clone()
    want[0:8, 16:32] = x[4:12, 8:24]
    assert torch.equal(y2, want)
    assert torch.equal(y3, torch.cat([x, z], 0)) and torch.equal(y4, torch.cat([x, z], 1))
    assert torch.equal(y5, x[8:16])


@pytest.mark.parametrize("dt", ["FP16", "BF16", "FP32", "INT8"])
def test_matmul_with_transposed_operand_and_acc(dt):
    K = 32
    body = f"""
    a1 = pl.load(a, [0, 0], [{M}, {K}], target_memory=pl.Mem.Mat)
    b1 = pl.load(b, [0, 0], [{N}, {K}], target_memory=pl.Mem.Mat)
    a0 = pl.move(a1, target_memory=pl.Mem.Left)
    b0 = pl.move(b1, target_memory=pl.Mem.Right)
    c0 = pl.matmul(a0, b0, b_trans=True)
    y_t = pl.matmul_acc(c0, a0, pl.move(pl.load(bt, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat),
                                       target_memory=pl.Mem.Right))
    """
    odt = "INT32" if dt == "INT8" else "FP32"
    a, b = rand(dt, (M, K), low=-5, high=5), rand(dt, (N, K), low=-5, high=5)
    (y,) = run_kernel(body, [("a", dt, (M, K)), ("b", dt, (N, K)), ("bt", dt, (K, N))], [("y", odt, SHAPE)],
                      a, b, b.T.contiguous())
    want = 2 * (a.to(torch.float64) @ b.to(torch.float64).T)
    close(y.double(), want, "FP32" if dt == "INT8" else "FP16", scale=10.0)


def test_matmul_bias_and_gemv():
    K = 32
    body = f"""
    a1 = pl.load(a, [0, 0], [{M}, {K}], target_memory=pl.Mem.Mat)
    b1 = pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat)
    c1 = pl.load(c, [0, 0], [1, {N}], target_memory=pl.Mem.Mat)
    r1 = pl.load(a, [3, 0], [1, {K}], target_memory=pl.Mem.Mat)
    y1_t = pl.matmul_bias(pl.move(a1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right),
                          pl.move(c1, target_memory=pl.Mem.Bias))
    y2_t = pl.gemv(pl.move(r1, target_memory=pl.Mem.Left), pl.move(b1, target_memory=pl.Mem.Right))
    """
    a, b, c = rand("FP16", (M, K)), rand("FP16", (K, N)), rand("FP32", (1, N))
    outs = [("y1", "FP32", SHAPE), ("y2", "FP32", (1, N))]
    y1, y2 = run_kernel(body, [("a", "FP16", (M, K)), ("b", "FP16", (K, N)), ("c", "FP32", (1, N))], outs, a, b, c)
    close(y1, a.float() @ b.float() + c, "FP16")
    close(y2, a[3:4].float() @ b.float(), "FP16")


def test_gemv_acc_and_gemv_bias():
    """SPEC §13: the accumulating and bias forms of gemv, on the cube unit."""
    K = 32
    body = f"""
    b1 = pl.load(b, [0, 0], [{K}, {N}], target_memory=pl.Mem.Mat)
    c1 = pl.load(c, [0, 0], [1, {N}], target_memory=pl.Mem.Mat)
    r1 = pl.load(a, [3, 0], [1, {K}], target_memory=pl.Mem.Mat)
    r2 = pl.load(a, [5, 0], [1, {K}], target_memory=pl.Mem.Mat)
    br = pl.move(b1, target_memory=pl.Mem.Right)
    g = pl.gemv(pl.move(r1, target_memory=pl.Mem.Left), br)
    y1_t = pl.gemv_acc(g, pl.move(r2, target_memory=pl.Mem.Left), br)
    y2_t = pl.gemv_bias(pl.move(r1, target_memory=pl.Mem.Left), br, pl.move(c1, target_memory=pl.Mem.Bias))
    """
    a, b, c = rand("FP16", (M, K)), rand("FP16", (K, N)), rand("FP32", (1, N))
    outs = [("y1", "FP32", (1, N)), ("y2", "FP32", (1, N))]
    y1, y2 = run_kernel(body, [("a", "FP16", (M, K)), ("b", "FP16", (K, N)), ("c", "FP32", (1, N))], outs, a, b, c)
    close(y1, (a[3:4].float() + a[5:6].float()) @ b.float(), "FP16")
    close(y2, a[3:4].float() @ b.float() + c, "FP16")


def test_tensor_matmul_with_b_trans_and_bias_lower_correctly():
    @pl.jit
    def f(a: pl.Tensor, b: pl.Tensor, c: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.matmul(a, b, b_trans=True)
        with pl.at(level=pl.Level.CORE_GROUP):
            z[:] = pl.matmul_bias(a, b, c)
        return y, z

    a, b, c = rand("FP16", (32, 32)), rand("FP16", (32, 32)), rand("FP32", (1, 32))
    y, z = torch.empty(32, 32), torch.empty(32, 32)
    f(a, b, c, y, z)
    close(y, a.float() @ b.float().T, "FP16")
    close(z, a.float() @ b.float() + c, "FP16")


@pytest.mark.parametrize("dt", ["FP32", "FP16", "INT32"])
def test_gather_family(dt):
    body = """
    t = pl.load(x, [0, 0], [16, 32])
    i = pl.load(idx, [0, 0], [16, 8])
    r = pl.load(ridx, [0, 0], [4, 1])
    u = pl.load(z, [0, 0], [16, 8])
    v = pl.load(x, [0, 0], [4, 32])
    y1_t = pl.gather(t, i)
    y2_t = pl.gather_row(t, r)
    y3_t = pl.scatter(t, i, u)
    y4_t = pl.scatter_update(t, r, v)
    """
    x, z = rand(dt, SHAPE), rand(dt, (16, 8))
    idx = torch.stack([torch.randperm(N)[:8] for _ in range(M)]).to(torch.int32)
    ridx = torch.tensor([[5], [0], [15], [9]], dtype=torch.int32)
    ins = [("x", dt, SHAPE), ("idx", "INT32", (16, 8)), ("ridx", "INT32", (4, 1)), ("z", dt, (16, 8))]
    outs = [("y1", dt, (16, 8)), ("y2", dt, (4, 32)), ("y3", dt, SHAPE), ("y4", dt, SHAPE)]
    y1, y2, y3, y4 = run_kernel(body, ins, outs, x, idx, ridx, z)
    assert torch.equal(y1, torch.gather(x, 1, idx.long()))
    assert torch.equal(y2, x[ridx[:, 0].long()])
    assert torch.equal(y3, x.clone().scatter_(1, idx.long(), z))
    want = x.clone()
    want[ridx[:, 0].long()] = x[:4]
    assert torch.equal(y4, want)


def test_gather_index_out_of_range_is_a_runtime_error():
    from pypto.core.errors import RuntimeSimError

    idx = torch.full((16, 8), 40, dtype=torch.int32)
    with pytest.raises(RuntimeSimError, match="tile.gather failed"):
        run_kernel("t = pl.load(x, [0, 0], [16, 32])\ni = pl.load(idx, [0, 0], [16, 8])\ny_t = pl.gather(t, i)",
                   [("x", "FP32", SHAPE), ("idx", "INT32", (16, 8))], [("y", "FP32", (16, 8))],
                   rand("FP32", SHAPE), idx)


def test_sort32_and_mrgsort_give_descending_value_index_pairs():
    body = """
    t = pl.load(x, [0, 0], [4, 64])
    i = pl.tile.ci(0, [4, 64], dtype=pl.INT32)
    p = pl.sort32(t, i)
    y1_t = p
    y2_t = pl.mrgsort(p, block_len=32)
    """
    x = torch.randn(4, 64)
    x[0, :8] = 1.0  # ties: lower index first
    outs = [("y1", "FP32", (4, 128)), ("y2", "FP32", (4, 128))]
    y1, y2 = run_kernel(body, [("x", "FP32", (4, 64))], outs, x)
    for blk in range(2):
        vals, pos = torch.sort(x[:, blk * 32:(blk + 1) * 32], dim=1, descending=True, stable=True)
        assert torch.equal(y1[:, blk * 64:(blk + 1) * 64:2], vals)
        assert torch.equal(y1[:, blk * 64 + 1:(blk + 1) * 64:2], (pos + blk * 32).float())
    vals, pos = torch.sort(x, dim=1, descending=True, stable=True)
    assert torch.equal(y2[:, 0::2], vals) and torch.equal(y2[:, 1::2], pos.float())


def test_block_identity_follows_the_block_context():
    from pypto.ops.block import block_context
    from pypto.ops.registry import get_op

    with block_context(block_idx=3, block_num=8, subblock_idx=1, subblock_num=2):
        assert (get_op("tile.get_block_idx").compute(), get_op("tile.get_block_num").compute(),
                get_op("tile.get_subblock_idx").compute()) == (3, 8, 1)
    body = """
    t = pl.load(x, [0, 0], [16, 32])
    b = pl.get_block_idx()
    n = pl.get_block_num()
    y_t = pl.adds(t, b * 10 + n)
    """
    x = rand("FP32", SHAPE)
    (y,) = run_kernel(body, [("x", "FP32", SHAPE)], [("y", "FP32", SHAPE)], x)
    assert torch.equal(y, x + 1.0)  # outside a launch: block 0 of 1


def test_system_ops_run_and_pipes_carry_tiles_in_order():
    body = """
    pl.system.sync_src(set_pipe="MTE2", wait_pipe="V", event_id=0)
    pl.system.sync_dst(set_pipe="MTE2", wait_pipe="V", event_id=0)
    pl.system.bar_all()
    t = pl.load(x, [0, 0], [16, 32])
    u = pl.muls(t, 2.0)
    pl.system.tpush_to_aic(t)
    pl.system.tpush_to_aic(u)
    p1 = pl.system.tpop_from_aiv([16, 32], dtype=pl.FP32)
    p2 = pl.system.tpop_from_aiv([16, 32], dtype=pl.FP32)
    pl.system.tfree_to_aiv(p1)
    pl.system.tfree_to_aiv(p2)
    y_t = pl.sub(pl.move(p2, target_memory=pl.Mem.Vec), pl.move(p1, target_memory=pl.Mem.Vec))
    """
    from pypto.ops.system import pipe_context

    x = rand("FP32", SHAPE)
    with pipe_context():
        (y,) = run_kernel(body, [("x", "FP32", SHAPE)], [("y", "FP32", SHAPE)], x)
    assert torch.equal(y, x)


def test_pipe_split_up_down_gives_each_vector_core_its_half():
    from pypto.ops.block import block_context
    from pypto.ops.registry import get_op
    from pypto.ops.system import PipeChannel, pipe_context

    push, pop = get_op("system.tpush_to_aiv").compute, get_op("system.tpop_from_aic").compute
    x = torch.arange(32.0).reshape(4, 8)
    with pipe_context(PipeChannel()):
        with block_context(subblock_idx=0, subblock_num=2):
            push(x, split=pl.SplitMode.UP_DOWN)
            top = pop((2, 8), split=pl.SplitMode.UP_DOWN)
        with block_context(subblock_idx=1, subblock_num=2):
            bottom = pop((2, 8), split=pl.SplitMode.UP_DOWN)
            with pytest.raises(RuntimeError, match="empty"):
                pop((2, 8))
    assert torch.equal(top, x[:2]) and torch.equal(bottom, x[2:])
