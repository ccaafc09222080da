"""Kernel executor: lowered InCore bodies against torch (tiles at planned addresses)."""

from __future__ import annotations

import pytest
import torch
from rt_ir import (
    FP16,
    FP32,
    INDEX,
    Acc,
    In,
    InOut,
    Left,
    Mat,
    Out,
    Right,
    Vec,
    assign,
    binop,
    call,
    dims,
    function,
    load,
    mul,
    program,
    ret,
    seq,
    store,
    tensor_t,
    tile,
    tup,
)

from pypto.core import dtype as dt
from pypto.core.errors import RuntimeSimError
from pypto.ir import (
    BinaryExpr,
    BreakStmt,
    ConstFloat,
    ConstInt,
    ContinueStmt,
    ForStmt,
    IfStmt,
    IterArg,
    ScalarType,
    TileType,
    Var,
    WhileStmt,
    YieldStmt,
)
from pypto.runtime import CompiledProgram

BOOL = dt.BOOL


def run_kernel(k, *args):
    """Run kernel `k` as the entry of a one-function program; returns (result, CompiledProgram)."""
    cp = CompiledProgram(program(k), "out", None)
    return cp(*args), cp


def const(v: int) -> ConstInt:
    return ConstInt(v, INDEX)


def binx(op: str, a, b, dtype=INDEX) -> BinaryExpr:
    return BinaryExpr(op, a, b if not isinstance(b, int) else const(b), dtype)


def test_row_block_loop_with_offsets_from_the_loop_var() -> None:
    a, b, c = (Var(n, tensor_t((64, 32))) for n in "abc")
    i = Var("i", ScalarType(INDEX))
    cacc = IterArg("cacc", tensor_t((64, 32)), init=c)
    c2, cfin = Var("c2", tensor_t((64, 32))), Var("cfin", tensor_t((64, 32)))
    ta, tb, tc = (tile(n, (16, 32), FP32, Vec, addr) for n, addr in (("ta", 0), ("tb", 2048),
                                                                       ("tc", 4096)))
    row = mul(i, 16)
    body = seq(load(ta, a, (row, 0)), load(tb, b, (row, 0)), binop("tile.sub", tc, ta, tb),
               store(c2, tc, (row, 0), cacc), YieldStmt((c2,)))
    k = function("k", [(a, In), (b, In), (c, Out)],
                 [ForStmt(i, const(0), const(4), const(1), (cacc,), body, (cfin,)), ret(cfin)])
    x, y, z = torch.randn(64, 32), torch.randn(64, 32), torch.zeros(64, 32)
    r, cp = run_kernel(k, x, y, z)
    assert r is z and torch.equal(z, x - y)
    assert len(cp.tasks) == 1 and cp.tasks[0].core_type == "AIV"


@pytest.mark.parametrize("ia_addr, s_addr, rv_addr", [
    (2048, 6144, 2048),   # copy init -> iter arg, copy at each yield, exit shares the iter arg
    (0, 0, 0),            # everything planned into one buffer: no copies at all
    (2048, 2048, 8192),   # add computed in place of the iter arg, copy on loop exit
    (8192, 6144, 10240),  # copies everywhere
])
def test_loop_carried_tile_accumulation(ia_addr: int, s_addr: int, rv_addr: int) -> None:
    a, c = Var("a", tensor_t((64, 32))), Var("c", tensor_t((16, 32)))
    i = Var("i", ScalarType(INDEX))
    t0 = tile("t0", (16, 32), FP32, Vec, 0)
    acc = IterArg("acc", tile("_", (16, 32), FP32, Vec, ia_addr).type, init=t0)
    x = tile("x", (16, 32), FP32, Vec, 4096)
    s = tile("s", (16, 32), FP32, Vec, s_addr)
    r = tile("r", (16, 32), FP32, Vec, rv_addr)
    c1 = Var("c1", tensor_t((16, 32)))
    body = seq(load(x, a, (mul(i, 16), 0)), binop("tile.add", s, acc, x), YieldStmt((s,)))
    k = function("k", [(a, In), (c, Out)], [
        load(t0, a, (0, 0)),
        ForStmt(i, const(1), const(4), const(1), (acc,), body, (r,)),
        store(c1, r, (0, 0), c), ret(c1)])
    xa, out = torch.randn(64, 32), torch.zeros(16, 32)
    run_kernel(k, xa, out)
    torch.testing.assert_close(out, xa.view(4, 16, 32).sum(0))


def test_matmul_fp16_through_mat_left_right_acc() -> None:
    a, b = Var("a", tensor_t((32, 32), FP16)), Var("b", tensor_t((32, 32), FP16))
    c, c1 = Var("c", tensor_t((32, 32), FP32)), Var("c1", tensor_t((32, 32), FP32))
    la, lb = tile("la", (32, 32), FP16, Mat, 0), tile("lb", (32, 32), FP16, Mat, 2048)
    l0a, l0b = tile("l0a", (32, 32), FP16, Left, 0), tile("l0b", (32, 32), FP16, Right, 0)
    acc = tile("acc", (32, 32), FP32, Acc, 0)
    k = function("mm", [(a, In), (b, In), (c, Out)], [
        load(la, a, (0, 0), Mat), load(lb, b, (0, 0), Mat),
        assign(l0a, call("tile.move", [la], l0a.type, target_memory=Left)),
        assign(l0b, call("tile.move", [lb], l0b.type, target_memory=Right)),
        binop("tile.matmul", acc, l0a, l0b), store(c1, acc, (0, 0), c), ret(c1)])
    x, y = torch.randn(32, 32).half(), torch.randn(32, 32).half()
    out = torch.zeros(32, 32)
    _, cp = run_kernel(k, x, y, out)
    torch.testing.assert_close(out, x.float() @ y.float(), rtol=1e-5, atol=1e-5)
    assert cp.tasks[0].core_type == "AIC"


def test_tiles_sharing_an_address_alias() -> None:
    a, c = Var("a", tensor_t((16, 32))), Var("c", tensor_t((16, 32)))
    ta = tile("ta", (16, 32), FP32, Vec, 0, mem_id=7)
    tb = tile("tb", (16, 32), FP32, Vec, 0, mem_id=7)   # same buffer, never written
    tc, c1 = tile("tc", (16, 32), FP32, Vec, 4096), Var("c1", tensor_t((16, 32)))
    k = function("k", [(a, In), (c, Out)], [
        load(ta, a, (0, 0)),
        assign(tb, call("tile.create", [tup(16, 32)], tb.type, dtype=FP32, target_memory=Vec)),
        binop("tile.adds", tc, tb, ConstFloat(1.0)), store(c1, tc, (0, 0), c), ret(c1)])
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    run_kernel(k, x, out)
    assert torch.equal(out, x + 1.0)   # tile.create wrote nothing; tb sees ta's bytes


def test_tile_to_tile_assignment_copies_bytes() -> None:
    a, b, c = (Var(n, tensor_t((16, 32))) for n in "abc")
    t1, t2 = tile("t1", (16, 32), FP32, Vec, 0), tile("t2", (16, 32), FP32, Vec, 2048)
    t1b = tile("t1b", (16, 32), FP32, Vec, 0)   # reuses t1's buffer after the copy
    t3, c1 = tile("t3", (16, 32), FP32, Vec, 4096), Var("c1", tensor_t((16, 32)))
    k = function("k", [(a, In), (b, In), (c, Out)], [
        load(t1, a, (0, 0)), assign(t2, t1), load(t1b, b, (0, 0)), binop("tile.sub", t3, t2, t1b),
        store(c1, t3, (0, 0), c), ret(c1)])
    x, y, out = torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32)
    run_kernel(k, x, y, out)
    assert torch.equal(out, x - y)


def test_wrong_reuse_gives_the_wrong_numbers_hardware_would() -> None:
    a, b, c = (Var(n, tensor_t((16, 32))) for n in "abc")
    ta, tb = tile("ta", (16, 32), FP32, Vec, 0), tile("tb", (16, 32), FP32, Vec, 0)  # overlap!
    tc, c1 = tile("tc", (16, 32), FP32, Vec, 4096), Var("c1", tensor_t((16, 32)))
    k = function("k", [(a, In), (b, In), (c, Out)], [
        load(ta, a, (0, 0)), load(tb, b, (0, 0)), binop("tile.add", tc, ta, tb),
        store(c1, tc, (0, 0), c), ret(c1)])
    x, y, out = torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32)
    run_kernel(k, x, y, out)
    assert torch.equal(out, y + y)


def test_partial_overlap_in_place_result() -> None:
    """A result tile overlapping its input by half still gets the full, correct value."""
    a, c = Var("a", tensor_t((16, 32))), Var("c", tensor_t((16, 32)))
    ta, tb = tile("ta", (16, 32), FP32, Vec, 0), tile("tb", (16, 32), FP32, Vec, 1024)
    c1 = Var("c1", tensor_t((16, 32)))
    k = function("k", [(a, In), (c, Out)], [
        load(ta, a, (0, 0)), binop("tile.exp", tb, ta), store(c1, tb, (0, 0), c), ret(c1)])
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    run_kernel(k, x, out)
    torch.testing.assert_close(out, torch.exp(x))


def test_view_result_partially_overlapping_its_destination() -> None:
    """A move (whose result is a view of its operand) into a buffer overlapping that operand by
    half copies from a snapshot, not from bytes it is overwriting."""
    a, c = Var("a", tensor_t((16, 32))), Var("c", tensor_t((16, 32)))
    ta, tb = tile("ta", (16, 32), FP32, Vec, 0), tile("tb", (16, 32), FP32, Vec, 1024)
    c1 = Var("c1", tensor_t((16, 32)))
    k = function("k", [(a, In), (c, Out)], [
        load(ta, a, (0, 0)), assign(tb, call("tile.move", [ta], tb.type, target_memory=Vec)),
        store(c1, tb, (0, 0), c), ret(c1)])
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    run_kernel(k, x, out)
    assert torch.equal(out, x)


def _scalar_kernel(make_body, n_dtype=dt.INT32):
    """k(a, n, c): loads a into x (Vec 0), runs make_body(x, n) -> (stmts, result tile), stores it."""
    a, c = Var("a", tensor_t((16, 32))), Var("c", tensor_t((16, 32)))
    n = Var("n", ScalarType(n_dtype))
    x, c1 = tile("x", (16, 32), FP32, Vec, 0), Var("c1", tensor_t((16, 32)))
    stmts, res = make_body(x, n)
    return function("k", [(a, In), (n, In), (c, Out)],
                    [load(x, a, (0, 0)), *stmts, store(c1, res, (0, 0), c), ret(c1)])


def test_if_with_tile_return_var() -> None:
    def body(x, n):
        t1, t2 = tile("t1", (16, 32), FP32, Vec, 2048), tile("t2", (16, 32), FP32, Vec, 4096)
        r = tile("r", (16, 32), FP32, Vec, 6144)
        cond = BinaryExpr("gt", n, ConstInt(0, dt.INT32), BOOL)
        s = IfStmt(cond, seq(binop("tile.adds", t1, x, ConstFloat(1.0)), YieldStmt((t1,))),
                   seq(binop("tile.muls", t2, x, ConstFloat(2.0)), YieldStmt((t2,))), (r,))
        return [s], r
    k = _scalar_kernel(body)
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    run_kernel(k, x, 5, out)
    assert torch.equal(out, x + 1.0)
    run_kernel(k, x, -5, out)
    assert torch.equal(out, x * 2.0)


@pytest.mark.parametrize("acc2_addr", [0, 2048])   # 0: the add runs in place, nothing to copy
def test_while_loop_with_scalar_and_tile_iter_args(acc2_addr: int) -> None:
    def body(x, n):
        kk = IterArg("kk", ScalarType(dt.INT32), init=ConstInt(0, dt.INT32))
        acc = IterArg("acc", x.type, init=x)   # shares x's buffer: no entry copy
        acc2 = tile("acc2", (16, 32), FP32, Vec, acc2_addr)
        k2, kf = Var("k2", ScalarType(dt.INT32)), Var("kf", ScalarType(dt.INT32))
        r = tile("r", (16, 32), FP32, Vec, 4096)
        w = WhileStmt(BinaryExpr("lt", kk, n, BOOL), (acc, kk), seq(
            binop("tile.adds", acc2, acc, ConstFloat(1.0)),
            assign(k2, BinaryExpr("add", kk, ConstInt(1, dt.INT32), dt.INT32)),
            YieldStmt((acc2, k2))), (r, kf))
        return [w], r
    k = _scalar_kernel(body)
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    run_kernel(k, x, 3, out)
    torch.testing.assert_close(out, x + 3.0)
    run_kernel(k, x, 0, out)
    assert torch.equal(out, x)


@pytest.mark.parametrize("kind", ["break", "continue"])
def test_break_and_continue(kind: str) -> None:
    def body(x, n):
        i = Var("i", ScalarType(INDEX))
        acc = IterArg("acc", tile("_", (16, 32), FP32, Vec, 2048).type, init=x)
        acc2 = tile("acc2", (16, 32), FP32, Vec, 4096)
        r = tile("r", (16, 32), FP32, Vec, 2048)
        if kind == "break":   # for i in range(10): if i >= 3: break; acc += 1
            cond, jump = binx("ge", i, 3, BOOL), BreakStmt()
        else:                 # for i in range(10): if i % 2 == 1: continue; acc += 1
            cond, jump = binx("eq", binx("floormod", i, 2), 1, BOOL), ContinueStmt()
        loop = ForStmt(i, const(0), const(10), const(1), (acc,), seq(
            IfStmt(cond, seq(jump), None),
            binop("tile.adds", acc2, acc, ConstFloat(1.0)), YieldStmt((acc2,))), (r,))
        return [loop], r
    k = _scalar_kernel(body)
    x, out = torch.randn(16, 32), torch.zeros(16, 32)
    run_kernel(k, x, 0, out)
    torch.testing.assert_close(out, x + (3.0 if kind == "break" else 5.0))


def test_yield_swapping_two_tiles_is_a_parallel_assignment() -> None:
    a, b, c = (Var(n, tensor_t((16, 32))) for n in "abc")
    ta, tb = tile("ta", (16, 32), FP32, Vec, 0), tile("tb", (16, 32), FP32, Vec, 2048)
    i = Var("i", ScalarType(INDEX))
    p, q = IterArg("p", ta.type, init=ta), IterArg("q", tb.type, init=tb)
    rp, rq = tile("rp", (16, 32), FP32, Vec, 0), tile("rq", (16, 32), FP32, Vec, 2048)
    c1 = Var("c1", tensor_t((16, 32)))
    k = function("k", [(a, In), (b, In), (c, Out)], [
        load(ta, a, (0, 0)), load(tb, b, (0, 0)),
        ForStmt(i, const(0), const(3), const(1), (p, q), seq(YieldStmt((q, p))), (rp, rq)),
        store(c1, rp, (0, 0), c), ret(c1)])
    x, y, out = torch.randn(16, 32), torch.randn(16, 32), torch.zeros(16, 32)
    run_kernel(k, x, y, out)
    assert torch.equal(out, y)   # three swaps


def test_scalar_param_and_inout() -> None:
    a = Var("a", tensor_t((16, 32)))
    s = Var("alpha", ScalarType(FP32))
    x, y, a1 = tile("x", (16, 32), FP32, Vec, 0), tile("y", (16, 32), FP32, Vec, 2048), Var("a1", a.type)
    k = function("scale", [(a, InOut), (s, In)], [
        load(x, a, (0, 0)), binop("tile.muls", y, x, s), store(a1, y, (0, 0), a), ret(a1)])
    t = torch.randn(16, 32)
    ref = t * 0.5
    r, _ = run_kernel(k, t, 0.5)
    assert r is t and torch.equal(t, ref)


def test_tile_without_memref_is_reported() -> None:
    a, c = Var("a", tensor_t((16, 32))), Var("c", tensor_t((16, 32)))
    x = Var("x", TileType(dims((16, 32)), FP32, Vec))
    k = function("k", [(a, In), (c, Out)], [load(x, a, (0, 0))])
    with pytest.raises(RuntimeSimError, match="'x' of kernel 'k' has no MemRef"):
        run_kernel(k, torch.zeros(16, 32), torch.zeros(16, 32))


def test_tile_beyond_the_arena_is_reported() -> None:
    a, c = Var("a", tensor_t((16, 32))), Var("c", tensor_t((16, 32)))
    x = tile("x", (16, 32), FP32, Vec, 192 * 1024 - 1024)
    k = function("k", [(a, In), (c, Out)], [load(x, a, (0, 0))])
    with pytest.raises(RuntimeSimError, match="exceeds"):
        run_kernel(k, torch.zeros(16, 32), torch.zeros(16, 32))


def test_op_failure_names_op_and_kernel() -> None:
    a, c = Var("a", tensor_t((16, 32))), Var("c", tensor_t((16, 32)))
    x = tile("x", (16, 32), FP32, Vec, 0)
    # region [8, 24) of a 16-row tensor: torch slicing yields 8 rows, not 16
    k = function("k", [(a, In), (c, Out)], [load(x, a, (8, 0))])
    with pytest.raises(RuntimeSimError, match="tile.load.*'x'|shape"):
        run_kernel(k, torch.zeros(16, 32), torch.zeros(16, 32))
