"""Ops and options of upstream's `pl` (SPEC §13) on the simulator against torch: `high_precision=`
on div / log / rsqrt / recip."""

import pytest
import torch
from op_harness import close, rand, run_kernel

import pypto.language as pl
from pypto import ir

M, N = 16, 32
SHAPE = (M, N)


def test_high_precision_option_prints_parses_and_computes_exactly_rounded():
    body = """
    ta = pl.load(a, [0, 0], [16, 32])
    tb = pl.load(b, [0, 0], [16, 32])
    y1_t = pl.div(ta, tb, high_precision=True)
    y2_t = pl.divs(ta, 3.0, high_precision=True)
    y3_t = pl.log(pl.abs(ta), high_precision=True)
    y4_t = pl.rsqrt(pl.abs(ta), high_precision=True)
    y5_t = pl.recip(tb, high_precision=True)
    y6_t = pl.div(ta, tb)
    """
    a, b = rand("FP32", SHAPE), rand("FP32", SHAPE) + 3.0
    outs = [(f"y{i}", "FP32", SHAPE) for i in range(1, 7)]
    ys = run_kernel(body, [("a", "FP32", SHAPE), ("b", "FP32", SHAPE)], outs, a, b)
    a64, b64 = a.double(), b.double()
    wants = [a64 / b64, a64 / 3.0, a64.abs().log(), a64.abs().rsqrt(), 1.0 / b64]
    for y, want in zip(ys, wants):
        assert torch.equal(y, want.float())  # float64 then one rounding: exactly rounded
    close(ys[5], a / b, "FP32")


def test_high_precision_at_tensor_level_and_in_the_pto():
    @pl.jit
    def f(x: pl.Tensor, y: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            y[:] = pl.recip(x, high_precision=True)
        return y

    x, y = rand("FP16", SHAPE) + 2.0, torch.empty(SHAPE, dtype=torch.float16)
    f(x, y)
    assert torch.equal(y, (1.0 / x.double()).half())
    cp = f.compile(x, y)
    pto = "".join(p.read_text() for p in __import__("pathlib").Path(cp.output_dir).glob("kernels/*/*.pto"))
    assert "pto.trecip" in pto and "high_precision = true" in pto
    assert "high_precision=True" in f.specialize(x, y).as_python()
    assert ir.structural_equal(f.specialize(x, y), pl.parse(f.specialize(x, y).as_python()))


def test_tensor_slice_with_pad_value_reads_the_pad_outside_the_valid_region():
    @pl.jit
    def f(x: pl.Tensor, y: pl.Out[pl.Tensor], z: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            s = pl.slice(x, [16, 32], [0, 0], valid_shape=[16, 20], pad_value=pl.PadValue.min)
            y[:] = pl.row_max(s)
            z[:] = pl.slice(x, [16, 32], [0, 0], valid_shape=[10, 32], pad_value=pl.PadValue.zero)
        return y, z

    x = rand("FP32", (16, 32)) - 5.0
    y, z = torch.empty(16, 1), torch.empty(16, 32)
    f(x, y, z)
    assert torch.equal(y, x[:, :20].amax(dim=1, keepdim=True))
    want = x.clone()
    want[10:] = 0
    assert torch.equal(z, want)
    text = f.specialize(x, y, z).as_python()
    assert "pad_value=pl.PadValue.min" in text
    ir.assert_structural_equal(f.specialize(x, y, z), pl.parse(text))


def test_tile_slice_with_pad_value_points_to_fillpad():
    from pypto.core.errors import ParserTypeError

    with pytest.raises(ParserTypeError, match="pad_value applies to tensor-level slices"):
        @pl.function(type=pl.FunctionType.InCore)
        def k(a: pl.Tensor[[16, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            t = pl.load(a, [0, 0], [16, 32])
            u = pl.tile.slice(t, [8, 32], [0, 0], pad_value=pl.PadValue.zero)
            c = pl.store(u, [0, 0], c)
            return c


def test_reinterpret_view_is_a_bit_cast():
    body = """
    t = pl.load(x, [0, 0], [16, 32])
    y1_t = pl.tile.reinterpret_view(t, pl.INT32)
    h = pl.tile.reinterpret_view(t, pl.FP16)
    y2_t = pl.tile.reinterpret_view(h, pl.FP32)
    """
    x = rand("FP32", SHAPE)
    y1, y2 = run_kernel(body, [("x", "FP32", SHAPE)], [("y1", "INT32", SHAPE), ("y2", "FP32", SHAPE)], x)
    assert torch.equal(y1, x.view(torch.int32)) and torch.equal(y2, x)

    @pl.function
    def f(a: pl.Tensor[[16, 32], pl.FP32]) -> pl.Tensor[[16, 64], pl.BF16]:
        r = pl.reinterpret_view(a, pl.BF16)
        return r

    assert f.return_types[0].shape[1].value == 64
    from pypto.core.errors import ParserTypeError

    with pytest.raises(ParserTypeError, match="not a whole number of INT64 elements"):
        @pl.function
        def g(a: pl.Tensor[[16, 3], pl.FP32]) -> pl.Tensor[[16, 3], pl.FP32]:
            r = pl.reinterpret_view(a, pl.INT64)
            return a


def test_batch_matmul_tensor_and_tile_levels():
    @pl.jit
    def f(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
        with pl.at(level=pl.Level.CORE_GROUP):
            c[:] = pl.batch_matmul(a, b, b_trans=True)
        return c

    a, b = rand("FP16", (4, 16, 32)), rand("FP16", (4, 16, 32))
    c = torch.zeros(4, 16, 16)
    f(a, b, c)
    close(c, torch.bmm(a.float(), b.float().transpose(1, 2)), "FP16")

    body = """
    a3 = pl.load(a, [0, 0, 0], [2, 16, 32], target_memory=pl.Mem.Mat)
    b3 = pl.load(b, [0, 0, 0], [2, 32, 16], target_memory=pl.Mem.Mat)
    al = pl.move(a3, target_memory=pl.Mem.Left)
    br = pl.move(b3, target_memory=pl.Mem.Right)
    p = pl.batch_matmul(al, br)
    y_t = pl.batch_matmul_acc(p, al, br)
    """
    a, b = rand("FP16", (2, 16, 32)), rand("FP16", (2, 32, 16))
    (y,) = run_kernel(body, [("a", "FP16", (2, 16, 32)), ("b", "FP16", (2, 32, 16))],
                      [("y", "FP32", (2, 16, 16))], a, b)
    close(y, 2 * torch.bmm(a.float(), b.float()), "FP16")

    from pypto.core.errors import ParserTypeError

    with pytest.raises(ParserTypeError, match=r"batch_matmul operands must be 3-D"):
        @pl.function
        def g(x: pl.Tensor[[16, 32], pl.FP16]) -> pl.Tensor[[16, 16], pl.FP32]:
            r = pl.batch_matmul(x, x)
            return r
