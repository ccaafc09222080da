"""InitMemRef: buffer sizes — the on-chip footprint of a tile as the hardware lays it out (SPEC §6) —
and carried values computed in place in their carried buffer."""

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType, get_soc
from pypto.passes.init_memref import buffer_bytes

SOC = get_soc(BackendType.Ascend910B)
CI = ir.ConstInt


def tile(shape, dtype, space, layout=None):
    view = ir.TileView(None, layout, pl.PadValue.null) if layout is not None else None
    return ir.TileType(tuple(CI(d) for d in shape), dtype, space, view=view)


@pytest.mark.parametrize("shape,dtype,space,layout,want", [
    ((64, 128), pl.FP32, pl.Mem.Vec, None, 64 * 128 * 4),      # aligned: the dense size
    ((3, 5), pl.FP16, pl.Mem.Vec, None, 3 * 32),                # each 10-byte row padded to 32
    ((64, 1), pl.FP32, pl.Mem.Vec, None, 64 * 32),              # a row-major column wastes rows
    ((64, 1), pl.FP32, pl.Mem.Vec, pl.TensorLayout.DN, 256),    # column-major: one 256-byte column
    ((100,), pl.FP32, pl.Mem.Vec, None, 416),                   # 1-D: one row, 400 -> 416
    ((30, 64), pl.FP16, pl.Mem.Left, None, 32 * 128),           # 30 rows -> two 16-row fractals
    ((64, 40), pl.FP16, pl.Mem.Right, None, 64 * 96),           # 80-byte rows -> 96
    ((16, 8), pl.FP32, pl.Mem.Acc, None, 16 * 64),              # Acc rows: 64-byte fractal rows
    ((64, 64), pl.FP16, pl.Mem.Mat, None, 64 * 64 * 2),
])
def test_buffer_bytes(shape, dtype, space, layout, want):
    assert buffer_bytes(tile(shape, dtype, space, layout), SOC) == want


# ---- carried values computed in place -----------------------------------------------------------


R, C = 16, 64


def _buffers(compiled, kernel):
    """Tile name -> (memory space, MemRef id) of `kernel` in the compiled (lowered) program."""
    out = {}

    class V(ir.IRVisitor):
        def visit_Var(self, e):
            m = getattr(e.type, "memref", None)
            if m is not None:
                out.setdefault(e.name, (m.memory_space, m.id))
        visit_IterArg = visit_Var

    V().visit_function(compiled.program.get_function(kernel))
    return out


@pl.program
class CarriedInPlace:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        acc0 = pl.load(x, [0, 0], [R, C])
        for i, (acc,) in pl.range(1, 4, init_values=(acc0,)):
            blk = pl.load(x, [i * R, 0], [R, C])
            s = pl.add(acc, blk)       # acc is not read after this: s is computed in acc's buffer
            out = pl.yield_(s)
        y = pl.store(out, [0, 0], y)
        return y


@pl.program
class CarriedReadLater:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]) -> pl.Tensor[[4 * R, C], pl.FP32]:
        acc0 = pl.load(x, [0, 0], [R, C])
        for i, (acc, yy) in pl.range(1, 4, init_values=(acc0, y)):
            blk = pl.load(x, [i * R, 0], [R, C])
            s = pl.add(acc, blk)
            u = pl.mul(acc, 2.0)       # reads acc after s exists: s needs a buffer of its own
            y2 = pl.store(u, [i * R, 0], yy)
            out, yo = pl.yield_(s, y2)
        y3 = pl.store(out, [0, 0], yo)
        return y3


def test_a_carried_value_is_computed_in_its_buffer():
    compiled = ir.compile(CarriedInPlace, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    b = _buffers(compiled, "k")
    assert b["s"] == b["acc"] == b["acc0"] == b["out"] and b["blk"] != b["acc"]
    x, y = torch.randn(4 * R, C), torch.zeros(R, C)
    compiled(x, y)
    torch.testing.assert_close(y, x.view(4, R, C).sum(0))


def test_a_carried_value_read_after_the_update_keeps_its_buffer():
    compiled = ir.compile(CarriedReadLater, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    b = _buffers(compiled, "k")
    assert b["s"] != b["acc"]
    x, y = torch.randn(4 * R, C), torch.zeros(4 * R, C)
    compiled(x, y)
    acc, want = x[:R].clone(), torch.zeros(4 * R, C)
    for i in range(1, 4):
        want[i * R:(i + 1) * R] = acc * 2.0
        acc = acc + x[i * R:(i + 1) * R]
    want[:R] = acc
    torch.testing.assert_close(y, want)


@pl.program
class CubeAccumulate:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, 4 * R], pl.FP16], b: pl.Tensor[[4 * R, R], pl.FP16],
          c: pl.Out[pl.Tensor[[R, R], pl.FP32]]) -> pl.Tensor[[R, R], pl.FP32]:
        acc0 = pl.matmul(pl.move(pl.load(a, [0, 0], [R, R], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left),
                         pl.move(pl.load(b, [0, 0], [R, R], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right))
        for k, (acc,) in pl.range(R, 4 * R, R, init_values=(acc0,)):
            lk = pl.move(pl.load(a, [0, k], [R, R], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Left)
            rk = pl.move(pl.load(b, [k, 0], [R, R], target_memory=pl.Mem.Mat), target_memory=pl.Mem.Right)
            nacc = pl.matmul_acc(acc, lk, rk)   # accumulates into the carried Acc tile
            out = pl.yield_(nacc)
        c = pl.store(out, [0, 0], c)
        return c


def test_matmul_acc_accumulates_into_the_carried_acc_tile():
    compiled = ir.compile(CubeAccumulate, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    b = _buffers(compiled, "k")
    assert b["nacc"] == b["acc"] and b["acc"][0] is pl.Mem.Acc
    a, w, c = torch.randn(R, 4 * R).half(), torch.randn(4 * R, R).half(), torch.zeros(R, R)
    compiled(a, w, c)
    torch.testing.assert_close(c, a.float() @ w.float(), rtol=1e-4, atol=1e-4)


# Found by tests/properties/test_differential.py: an inner loop started from a tile computed
# before an enclosing loop restarts from it on every outer iteration, so the inner loop must not
# carry its value in that tile's buffer (it did, and the second outer iteration read 4c for c).
@pl.program
class RestartFromOuter:
    @pl.function
    def f(self, a: pl.Tensor[[R, C], pl.FP32]) -> pl.Tensor[[R, C], pl.FP32]:
        c = pl.add(a, 2.0)
        out = a
        for j in pl.range(2):
            for i, (acc,) in pl.range(2, init_values=(c,)):
                out = pl.add(acc, out)
                _r = pl.yield_(pl.mul(acc, 2.0))
        return out


# The same through a whole-tile view made in the outer loop: the view must not live in the
# buffer of `c` when the inner loop then carries its value there.
@pl.program
class RestartFromOuterView:
    @pl.function
    def f(self, a: pl.Tensor[[R, C], pl.FP32]) -> pl.Tensor[[R, C], pl.FP32]:
        c = pl.add(a, 2.0)
        out = a
        for j in pl.range(2):
            v = pl.reshape(c, [R // 2, 2 * C])
            for i, (acc,) in pl.range(2, init_values=(v,)):
                out = pl.add(pl.reshape(acc, [R, C]), out)
                _r = pl.yield_(pl.mul(acc, 2.0))
        return out


@pytest.mark.parametrize("prog", [RestartFromOuter, RestartFromOuterView])
def test_an_inner_loop_restarted_by_an_outer_loop_keeps_its_init_value(prog):
    compiled = ir.compile(prog, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    b = _buffers(compiled, "f_incore_0")
    assert b["c_tile"] != b["acc"]
    a = torch.randn(R, C)
    torch.testing.assert_close(compiled(a.clone()), a + 6 * (a + 2.0))  # 2 x (c + 2c)
