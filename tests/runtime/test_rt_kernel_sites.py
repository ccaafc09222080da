"""Ops specialised per call site (`OpSpec.specialize`, `pypto.ops.site`): every specialised kernel
gives bit for bit the numbers and the cost of the same kernel run through the general `compute`
of each op (`KernelExecutor(specialize=False)`), across dtypes and buffer placements, and errors
keep their message and location."""


import pytest
import torch
from rt_ir import (
    FP16,
    FP32,
    INDEX,
    Acc,
    In,
    Left,
    Mat,
    Out,
    Right,
    Vec,
    assign,
    binop,
    call,
    function,
    load,
    ret,
    store,
    tensor_t,
    tile,
)

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.core import dtype as dt
from pypto.core.errors import RuntimeSimError
from pypto.ir import Var
from pypto.ops.memory import _load_site, _store_site
from pypto.ops.site import NOT_CONST, KernelSite
from pypto.runtime.sim.device import SimDevice
from pypto.runtime.sim.kernel import KernelExecutor

R, C = 16, 32


def _both(func, make_args):
    """(general, specialised) runs of kernel `func`: (executor, argument tensors, TaskCost) each."""
    out = []
    for spec in (False, True):
        dev = SimDevice(BackendType.Ascend910B)
        ex = KernelExecutor(func, dev.soc, specialize=spec)
        args = make_args()
        cost = ex.run(args, dev.arena(ex.core_type, 0))
        cost2 = ex.run(args, dev.arena(ex.core_type, 0))   # a second run: templates and caches reused
        assert cost2 == cost
        out.append((ex, args, cost))
    return out


def _assert_same(runs) -> None:
    (g_ex, g_args, g_cost), (s_ex, s_args, s_cost) = runs
    assert g_ex.specialized_ops == ()
    for x, y in zip(g_args, s_args):
        assert x.dtype == y.dtype and torch.equal(x, y)
    assert g_cost == s_cost


def _randn(shape, dtype: dt.DataType, g: torch.Generator) -> torch.Tensor:
    t = torch.randn(shape, generator=g) * 40
    return t.to(dtype.value_torch())


_DTYPES = [dt.FP32, dt.FP16, dt.BF16, dt.INT32, dt.INT16, dt.INT8]


@pytest.mark.parametrize("op", ["tile.add", "tile.sub", "tile.mul", "tile.maximum", "tile.minimum"])
@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("place", ["apart", "in-place", "partial"])
def test_elementwise_writes_result_tile_bit_identical(op: str, dtype: dt.DataType, place: str) -> None:
    """c = op(a, b) with the result apart from, over (MemoryReuse), or half over an operand."""
    nbytes = R * C * dtype.get_byte()
    a, b, c = Var("a", tensor_t((2 * R, C), dtype)), Var("b", tensor_t((R, 2 * C), dtype)), \
        Var("c", tensor_t((2 * R, 2 * C), dtype))
    ta, tb = tile("ta", (R, C), dtype, Vec, 0), tile("tb", (R, C), dtype, Vec, 2 * nbytes)
    addr = {"apart": 4 * nbytes, "in-place": 0, "partial": nbytes // 2}[place]
    tc, c1 = tile("tc", (R, C), dtype, Vec, addr), Var("c1", tensor_t((2 * R, 2 * C), dtype))
    k = function("k", [(a, In), (b, In), (c, Out)], [
        load(ta, a, (R, 0)), load(tb, b, (0, C)), binop(op, tc, ta, tb), store(c1, tc, (R, C), c), ret(c1)])
    g = torch.Generator().manual_seed(len(op) + dtype.get_byte())
    host = [_randn((2 * R, C), dtype, g), _randn((R, 2 * C), dtype, g), torch.zeros(2 * R, 2 * C)]
    runs = _both(k, lambda: [host[0].clone(), host[1].clone(), host[2].to(dtype.value_torch())])
    _assert_same(runs)
    want = ["tile.load", "tile.load"] + ([op] if place != "partial" else []) + ["tile.store"]
    assert runs[1][0].specialized_ops == tuple(want)
    ref = {"tile.add": torch.add, "tile.sub": torch.sub, "tile.mul": torch.mul,
           "tile.maximum": torch.maximum, "tile.minimum": torch.minimum}[op](host[0][R:], host[1][:, C:])
    assert torch.equal(runs[1][1][2][R:, C:], ref)


def _mm_kernel(dtype, a_trans: bool, acc_at: int):
    """c = sum over two K blocks of a-block @ b-block: matmul, then matmul_acc with the result at
    Acc byte `acc_at` (0: in place over the first product; else apart)."""
    K = 2 * C
    a = Var("a", tensor_t((K, R) if a_trans else (R, K), dtype))
    b, c = Var("b", tensor_t((K, C), dtype)), Var("c", tensor_t((R, C)))
    half = R * C * dtype.get_byte()
    ash = (C, R) if a_trans else (R, C)
    a0, a1 = tile("a0", ash, dtype, Mat, 0), tile("a1", ash, dtype, Mat, 4 * half)
    b0, b1 = tile("b0", (C, C), dtype, Mat, 8 * half), tile("b1", (C, C), dtype, Mat, 12 * half)
    l0, l1 = tile("l0", ash, dtype, Left, 0), tile("l1", ash, dtype, Left, 4 * half)
    r0, r1 = tile("r0", (C, C), dtype, Right, 0), tile("r1", (C, C), dtype, Right, 4 * half)
    acc, nacc = tile("acc", (R, C), FP32, Acc, 0), tile("nacc", (R, C), FP32, Acc, acc_at)
    c1 = Var("c1", tensor_t((R, C)))
    mv = [assign(d, call("tile.move", [s], d.type, target_memory=d.type.memory_space))
          for d, s in ((l0, a0), (r0, b0), (l1, a1), (r1, b1))]
    return function("k", [(a, In), (b, In), (c, Out)], [
        load(a0, a, (0, 0), Mat), load(b0, b, (0, 0), Mat),
        load(a1, a, (C, 0) if a_trans else (0, C), Mat), load(b1, b, (C, 0), Mat), *mv,
        assign(acc, call("tile.matmul", [l0, r0], acc.type, a_trans=a_trans, b_trans=False)),
        assign(nacc, call("tile.matmul_acc", [acc, l1, r1], nacc.type, a_trans=a_trans, b_trans=False)),
        store(c1, nacc, (0, 0), c), ret(c1)])


@pytest.mark.parametrize("dtype", [dt.FP16, dt.BF16, dt.FP32], ids=lambda d: d.name)
@pytest.mark.parametrize("a_trans", [False, True], ids=["a", "aT"])
@pytest.mark.parametrize("acc_at", [0, 8192], ids=["acc-in-place", "acc-apart"])
def test_matmul_sites_bit_identical(dtype: dt.DataType, a_trans: bool, acc_at: int) -> None:
    k = _mm_kernel(dtype, a_trans, acc_at)
    g = torch.Generator().manual_seed(7)
    ashape = (2 * C, R) if a_trans else (R, 2 * C)
    host = [_randn(ashape, dtype, g), _randn((2 * C, C), dtype, g)]
    runs = _both(k, lambda: [host[0].clone(), host[1].clone(), torch.zeros(R, C)])
    _assert_same(runs)
    assert runs[1][0].specialized_ops == ("tile.load",) * 4 + ("tile.move",) * 4 + (
        "tile.matmul", "tile.matmul_acc", "tile.store")
    a = host[0].float().T if a_trans else host[0].float()
    torch.testing.assert_close(runs[1][1][2], a @ host[1].float(), rtol=1e-2, atol=1e-1)


def test_integer_matmul_keeps_the_general_path() -> None:
    k = _mm_kernel(dt.INT8, False, 0)
    assert "tile.matmul" not in KernelExecutor(k, SimDevice(BackendType.Ascend910B).soc).specialized_ops


N_K = 4


def _loop_program(dtype):
    @pl.program
    class Loop:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[R, N_K * C], dtype], b: pl.Tensor[[N_K * C, C], dtype],
              c: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            a0 = pl.load(a, [0, 0], [R, C], target_memory=pl.Mem.Mat)
            b0 = pl.load(b, [0, 0], [C, C], target_memory=pl.Mem.Mat)
            acc0 = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
            for kk, (acc,) in pl.range(C, N_K * C, C, init_values=(acc0,)):
                ak = pl.load(a, [0, kk], [R, C], target_memory=pl.Mem.Mat)
                bk = pl.load(b, [kk, 0], [C, C], target_memory=pl.Mem.Mat)
                nacc = pl.matmul_acc(acc, pl.move(ak, target_memory=pl.Mem.Left),
                                     pl.move(bk, target_memory=pl.Mem.Right))
                out = pl.yield_(nacc)
            c = pl.store(out, [0, 0], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[R, N_K * C], dtype], b: pl.Tensor[[N_K * C, C], dtype],
                 c: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            c = self.k(a, b, c)
            return c
    return Loop


@pytest.mark.parametrize("dtype", [pl.FP16, pl.BF16], ids=["FP16", "BF16"])
def test_loop_kernel_with_run_time_offsets_bit_identical(dtype, tmp_path) -> None:
    """Loads at loop-variable offsets (bounds checked per run against precomputed limits), the
    carried Acc tile, and the cost of a kernel with control flow (cached per executed path)."""
    compiled = ir.compile(_loop_program(dtype), output_dir=tmp_path / "build", skip_ptoas=True)
    k = next(f for f in compiled.program.functions if f.name == "k")
    g = torch.Generator().manual_seed(3)
    host = [_randn((R, N_K * C), dtype, g), _randn((N_K * C, C), dtype, g)]
    runs = _both(k, lambda: [host[0].clone(), host[1].clone(), torch.zeros(R, C)])
    _assert_same(runs)
    assert runs[1][0].specialized_ops.count("tile.load") == 4
    assert runs[1][2].counts is not None and runs[1][0].dynamic
    torch.testing.assert_close(runs[1][1][2], host[0].float() @ host[1].float(), rtol=1e-2, atol=1e-1)


def _dynamic_load_kernel(offset: int):
    """k(a [n, C] with a dynamic n, c) loads rows [offset, offset + R) of `a` into a tile and stores
    it to c: the load's tensor has no static shape, so its site checks the box per run."""
    n = Var("n", ir.ScalarType(INDEX))
    a, c, c1 = Var("a", tensor_t((n, C))), Var("c", tensor_t((R, C))), Var("c1", tensor_t((R, C)))
    t = tile("t", (R, C), FP32, Vec, 0)
    return function("k", [(a, In), (c, Out)], [load(t, a, (offset, 0)), store(c1, t, (0, 0), c), ret(c1)])


def test_out_of_bounds_load_is_located_like_the_general_path() -> None:
    k = _dynamic_load_kernel(8)
    msgs = []
    for spec in (False, True):
        dev = SimDevice(BackendType.Ascend910B)
        ex = KernelExecutor(k, dev.soc, specialize=spec)
        assert ex.specialized_ops == (("tile.load", "tile.store") if spec else ())
        c = torch.zeros(R, C)
        ex.run([torch.arange(24.0 * C).reshape(24, C), c], dev.arena(ex.core_type, 0))
        assert torch.equal(c, torch.arange(24.0 * C).reshape(24, C)[8:24])
        with pytest.raises(RuntimeSimError, match=r"tile.load failed in kernel 'k': load region "
                                                  r"\[8:24, 0:32\] is out of bounds") as err:
            ex.run([torch.zeros(20, C), torch.zeros(R, C)], dev.arena(ex.core_type, 0))
        msgs.append(str(err.value))
    assert msgs[0] == msgs[1]


def _site(consts, types, dst, attrs=None):
    n = len(consts)
    return KernelSite(tuple(consts), tuple(types), dict(attrs or {}), dst, (False,) * n, (True,) * n)


def test_specialised_load_falls_back_for_a_tensor_of_another_shape() -> None:
    """The slices of a constant-offset load are fixed for the declared tensor shape; a tensor of
    another shape at run time goes through the general bounds check (and its error)."""
    dst = tile("t", (4, 8), FP32, Vec, 0).type
    fn = _load_site(_site([NOT_CONST, (2, 8), (4, 8)], [tensor_t((8, 16)), None, None], dst))
    assert fn is not None
    src, out = torch.arange(128.0).reshape(8, 16), torch.empty(4, 8)
    assert fn(out, src, (2, 8), (4, 8)) is None and torch.equal(out, src[2:6, 8:16])
    res = fn(out, torch.arange(160.0).reshape(10, 16), (2, 8), (4, 8))   # another shape: general path
    assert torch.equal(res, torch.arange(160.0).reshape(10, 16)[2:6, 8:16])
    with pytest.raises(IndexError, match=r"load region \[2:6, 8:16\] is out of bounds of the tensor of "
                                         r"shape \[8, 12\]"):
        fn(out, torch.zeros(8, 12), (2, 8), (4, 8))
    # a box outside the declared shape: checked per run (the general error)
    outside = _load_site(_site([NOT_CONST, (6, 8), (4, 8)], [tensor_t((8, 16)), None, None], dst))
    with pytest.raises(IndexError, match=r"load region \[6:10, 8:16\] is out of bounds"):
        outside(out, src, (6, 8), (4, 8))
    # a tile of another shape than the box: no specialisation
    assert _load_site(_site([NOT_CONST, (0, 0), (4, 8)], [tensor_t((8, 16), FP16), None, None],
                            tile("t", (4, 4), FP16, Vec, 0).type)) is None


def test_specialised_load_at_run_time_offsets_checks_each_run() -> None:
    dst = tile("t", (4, 8), FP32, Vec, 0).type
    fn = _load_site(_site([NOT_CONST, NOT_CONST, (4, 8)], [tensor_t((8, 16)), None, None], dst))
    src, out = torch.arange(128.0).reshape(8, 16), torch.empty(4, 8)
    assert fn(out, src, (4, 8), (4, 8)) is None and torch.equal(out, src[4:8, 8:16])
    with pytest.raises(IndexError, match=r"dimension 0: 5:9 not within 0:8"):
        fn(out, src, (5, 0), (4, 8))
    with pytest.raises(IndexError, match=r"dimension 1: -1:7 not within 0:16"):
        fn(out, src, (0, -1), (4, 8))


def test_specialised_store_at_run_time_offsets_checks_each_run() -> None:
    fn = _store_site(_site([NOT_CONST, NOT_CONST, NOT_CONST], [tile("t", (4, 8), FP32, Vec, 0).type, None,
                                                               tensor_t((8, 16))], None, {"valid": (None,)}))
    t, out = torch.arange(32.0).reshape(4, 8), torch.zeros(8, 16)
    assert fn(t, (4, 8), out) is out and torch.equal(out[4:, 8:], t) and not out[:4].any()
    with pytest.raises(IndexError, match=r"store region \[2:6, 9:17\] is out of bounds of the tensor of "
                                         r"shape \[8, 16\] \(dimension 1: 9:17 not within 0:16\)"):
        fn(t, (2, 9), out)


def test_specialised_store_of_a_partly_valid_tile() -> None:
    """A store's valid shape, when constant, fixes both boxes; only the valid part is written."""
    fn = _store_site(_site([NOT_CONST, (1, 2), NOT_CONST], [tile("t", (4, 8), FP32, Vec, 0).type, None,
                                                            tensor_t((8, 16))], None, {"valid": ((3, 5),)}))
    t, out = torch.arange(32.0).reshape(4, 8), torch.zeros(8, 16)
    assert fn(t, (1, 2), out) is out
    want = torch.zeros(8, 16)
    want[1:4, 2:7] = t[:3, :5]
    assert torch.equal(out, want)


def _unary_kernel(op: str, dtype: dt.DataType, extra: list, in_place: bool):
    nbytes = R * C * dtype.get_byte()
    a, c, c1 = Var("a", tensor_t((R, C), dtype)), Var("c", tensor_t((R, C), dtype)), Var("c1", tensor_t((R, C), dtype))
    ta, tc = tile("ta", (R, C), dtype, Vec, 0), tile("tc", (R, C), dtype, Vec, 0 if in_place else 2 * nbytes)
    return function("k", [(a, In), (c, Out)], [
        load(ta, a, (0, 0)), binop(op, tc, ta, *extra), store(c1, tc, (0, 0), c), ret(c1)])


_FLOATS = [dt.FP32, dt.FP16, dt.BF16]


@pytest.mark.parametrize("op,dtypes", [("tile.exp", _FLOATS), ("tile.sqrt", _FLOATS), ("tile.recip", _FLOATS),
                                       ("tile.neg", _FLOATS + [dt.INT32, dt.INT8]),
                                       ("tile.abs", _FLOATS + [dt.INT32, dt.INT16])])
@pytest.mark.parametrize("in_place", [False, True], ids=["apart", "in-place"])
def test_unary_writes_result_tile_bit_identical(op: str, dtypes: list, in_place: bool) -> None:
    for dtype in dtypes:
        k = _unary_kernel(op, dtype, [], in_place)
        g = torch.Generator().manual_seed(11)
        x = _randn((R, C), dtype, g)
        if op == "tile.sqrt":
            x = x.abs()
        runs = _both(k, lambda x=x, dtype=dtype: [x.clone(), torch.zeros(R, C, dtype=dtype.value_torch())])
        _assert_same(runs)
        assert op in runs[1][0].specialized_ops


@pytest.mark.parametrize("op", ["tile.adds", "tile.subs", "tile.muls"])
@pytest.mark.parametrize("dtype", _DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("scalar", [3, 2.75], ids=["int", "float"])
def test_scalar_forms_bit_identical(op: str, dtype: dt.DataType, scalar) -> None:
    """A tile op with a scalar: written in place unless a float scalar meets an integer tile (the
    general path computes in float and converts back: no direct form gives that)."""
    s = ir.ConstInt(scalar, dt.INT32) if isinstance(scalar, int) else ir.ConstFloat(scalar, dt.FP32)
    k = _unary_kernel(op, dtype, [s], False)
    x = _randn((R, C), dtype, torch.Generator().manual_seed(5))
    runs = _both(k, lambda: [x.clone(), torch.zeros(R, C, dtype=dtype.value_torch())])
    _assert_same(runs)
    assert (op in runs[1][0].specialized_ops) == (dtype.is_float() or isinstance(scalar, int))


def test_high_precision_keeps_the_general_path() -> None:
    dtype = dt.FP16
    a, c, c1 = Var("a", tensor_t((R, C), dtype)), Var("c", tensor_t((R, C), dtype)), Var("c1", tensor_t((R, C), dtype))
    ta, tc = tile("ta", (R, C), dtype, Vec, 0), tile("tc", (R, C), dtype, Vec, 4096)
    k = function("k", [(a, In), (c, Out)], [
        load(ta, a, (0, 0)), assign(tc, call("tile.recip", [ta], tc.type, high_precision=True)),
        store(c1, tc, (0, 0), c), ret(c1)])
    x = _randn((R, C), dtype, torch.Generator().manual_seed(2))
    runs = _both(k, lambda: [x.clone(), torch.zeros(R, C, dtype=torch.float16)])
    _assert_same(runs)
    assert "tile.recip" not in runs[1][0].specialized_ops


@pytest.mark.parametrize("src,dst", [(dt.FP32, dt.FP16), (dt.FP32, dt.BF16), (dt.FP16, dt.FP32),
                                     (dt.BF16, dt.FP16), (dt.INT32, dt.INT8), (dt.INT16, dt.FP16),
                                     (dt.INT8, dt.INT32), (dt.FP32, dt.INT32), (dt.FP16, dt.INT8)],
                         ids=lambda d: d.name)
def test_cast_bit_identical(src: dt.DataType, dst: dt.DataType) -> None:
    """A cast converting like `.to` (not float -> integer, which rounds and saturates) copies
    straight into the result tile; every pair gives the general path's numbers."""
    a, c, c1 = Var("a", tensor_t((R, C), src)), Var("c", tensor_t((R, C), dst)), Var("c1", tensor_t((R, C), dst))
    ta, tc = tile("ta", (R, C), src, Vec, 0), tile("tc", (R, C), dst, Vec, 8192)
    k = function("k", [(a, In), (c, Out)], [
        load(ta, a, (0, 0)), assign(tc, call("tile.cast", [ta], tc.type, target_type=dst, mode="round")),
        store(c1, tc, (0, 0), c), ret(c1)])
    x = _randn((R, C), src, torch.Generator().manual_seed(9)) * (1000 if src.is_float() else 1)
    runs = _both(k, lambda: [x.clone(), torch.zeros(R, C, dtype=dst.value_torch())])
    _assert_same(runs)
    assert ("tile.cast" in runs[1][0].specialized_ops) == (not (src.is_float() and not dst.is_float()))
