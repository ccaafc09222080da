"""CompiledProgram: argument checks, host/device copies, orchestration and task records."""

from __future__ import annotations

import os

import pytest
import torch
from rt_ir import (
    FP32,
    INDEX,
    In,
    InOut,
    Out,
    Vec,
    add_program,
    assign,
    binop,
    call,
    function,
    kernel_call,
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

from pypto.core.dtype import FP16
from pypto.core.enums import FunctionType
from pypto.core.errors import RuntimeSimError
from pypto.ir import ConstInt, ForStmt, ScalarType, TupleGetItem, TupleType, Var
from pypto.runtime import CompiledProgram

ORCH = FunctionType.Orchestration


def _args(shape=(16, 32)):
    return torch.randn(*shape), torch.randn(*shape), torch.zeros(*shape)


def test_add_out_in_place_inputs_untouched() -> None:
    cp = CompiledProgram(add_program(), "build/x", None)
    a, b, c = _args()
    a0, b0, cptr = a.clone(), b.clone(), c.data_ptr()
    r = cp(a, b, c)
    assert r is c and c.data_ptr() == cptr
    assert torch.equal(c, a + b)
    assert torch.equal(a, a0) and torch.equal(b, b0)
    assert [t.kernel for t in cp.tasks] == ["k"] and cp.tasks[0].core == "AIV0"


def test_attributes() -> None:
    cp = CompiledProgram(add_program(), "build/x", None)
    assert str(cp) == "build/x" and os.fspath(cp) == "build/x" and cp.output_dir == "build/x"
    assert cp.entry == "main" and cp.output_indices == [2]
    assert cp.platform == "a2a3sim" and cp.backend_type.name == "Ascend910B"


def test_argument_errors_name_the_parameter() -> None:
    cp = CompiledProgram(add_program(), "out", None)
    a, b, c = _args()
    with pytest.raises(TypeError, match="3 arguments"):
        cp(a, b)
    with pytest.raises(ValueError, match="'a'.*\\[16, 16\\].*expected \\[16, 32\\]"):
        cp(torch.zeros(16, 16), b, c)
    with pytest.raises(ValueError, match="'a'"):
        cp(torch.zeros(16, 32, 1), b, c)
    with pytest.raises(TypeError, match="'b'.*float16"):
        cp(a, b.half(), c)
    with pytest.raises(TypeError, match="'c'.*torch.Tensor"):
        cp(a, b, 3.0)
    assert torch.equal(c, torch.zeros(16, 32))


def _orch_loop_program(m_dim):
    """main(a, b, c: Out) over [M, 32]: for i in range(0, M, 16): k(slice(a), slice(b), slice(c))."""
    full = tensor_t((m_dim, 32))
    blk = tensor_t((16, 32))
    ka, kb, kc = (Var(n, blk) for n in "abc")
    ta, tb = tile("ta", (16, 32), FP32, Vec, 0), tile("tb", (16, 32), FP32, Vec, 2048)
    tc, kc1 = tile("tc", (16, 32), FP32, Vec, 4096), Var("c1", blk)
    k = function("k", [(ka, In), (kb, In), (kc, Out)], [
        load(ta, ka, (0, 0)), load(tb, kb, (0, 0)), binop("tile.mul", tc, ta, tb),
        store(kc1, tc, (0, 0), kc), ret(kc1)])
    a, b, c = (Var(n, full) for n in "abc")
    i = Var("i", ScalarType(INDEX))
    sa, sb, sc, r = (Var(n, blk) for n in ("sa", "sb", "sc", "r"))

    def sl(v, x):
        return assign(v, call("tensor.slice", [x, tup(16, 32), tup(i, 0)], blk))
    stop = m_dim if isinstance(m_dim, Var) else ConstInt(m_dim, INDEX)
    loop = ForStmt(i, ConstInt(0, INDEX), stop, ConstInt(16, INDEX), (),
                   seq(sl(sa, a), sl(sb, b), sl(sc, c), assign(r, kernel_call("k", [sa, sb, sc], blk))), ())
    main = function("main", [(a, In), (b, In), (c, Out)], [loop, ret(c)], ORCH)
    return program(main, k)


def test_orchestration_loop_submits_round_robin_tasks() -> None:
    cp = CompiledProgram(_orch_loop_program(64), "out", None)
    a, b, c = _args((64, 32))
    assert cp(a, b, c) is c
    assert torch.equal(c, a * b)
    assert [t.core for t in cp.tasks] == ["AIV0", "AIV1", "AIV2", "AIV3"]
    assert [t.task_id for t in cp.tasks] == [0, 1, 2, 3]
    assert all(t.args[2].shape == (16, 32) for t in cp.tasks)


def test_dynamic_dimension() -> None:
    m = Var("M", ScalarType(INDEX))
    cp = CompiledProgram(_orch_loop_program(m), "out", None)
    for rows in (48, 96):
        a, b, c = _args((rows, 32))
        cp(a, b, c)
        assert torch.equal(c, a * b) and len(cp.tasks) == rows // 16
    with pytest.raises(ValueError, match="'M'.*'a'"):
        cp(torch.zeros(48, 32), torch.zeros(64, 32), torch.zeros(48, 32))


def test_tensor_create_and_chained_tasks() -> None:
    prog = add_program()
    k = prog.get_function("k")
    a, b, c = (Var(n, tensor_t((16, 32))) for n in "abc")
    tmp, r1, r2 = (Var(n, tensor_t((16, 32))) for n in ("tmp", "r1", "r2"))
    main = function("main", [(a, In), (b, In), (c, Out)], [
        assign(tmp, call("tensor.create", [tup(16, 32)], tmp.type, dtype=FP32)),
        assign(r1, kernel_call("k", [a, b, tmp], tmp.type)),
        assign(r2, kernel_call("k", [r1, a, c], c.type)), ret(r2, r1)], ORCH)
    cp = CompiledProgram(program(main, k), "out", None)
    x, y, z = _args()
    out, t = cp(x, y, z)
    assert out is z and torch.equal(z, x + y + x)
    assert torch.equal(t, x + y)   # an internally created tensor comes back as it is


def test_multiple_outputs_as_tuple() -> None:
    a, o1, o2 = (Var(n, tensor_t((16, 32))) for n in ("a", "o1", "o2"))
    x, y, z = (tile(n, (16, 32), FP32, Vec, addr) for n, addr in (("x", 0), ("y", 2048), ("z", 4096)))
    w, s1, s2 = tile("w", (16, 32), FP32, Vec, 6144), Var("s1", o1.type), Var("s2", o2.type)
    k = function("k2", [(a, In), (o1, Out), (o2, InOut)], [
        load(x, a, (0, 0)), load(w, o2, (0, 0)), binop("tile.exp", y, x), binop("tile.add", z, w, x),
        store(s1, y, (0, 0), o1), store(s2, z, (0, 0), o2), ret(s1, s2)])
    ma, m1, m2 = (Var(n, tensor_t((16, 32))) for n in ("a", "o1", "o2"))
    tt = Var("t", TupleType((m1.type, m2.type)))
    r1, r2 = Var("r1", m1.type), Var("r2", m2.type)
    main = function("main", [(ma, In), (m1, Out), (m2, InOut)], [
        assign(tt, kernel_call("k2", [ma, m1, m2], tt.type)),
        assign(r1, TupleGetItem(tt, 0)), assign(r2, TupleGetItem(tt, 1)), ret(r1, r2)], ORCH)
    cp = CompiledProgram(program(main, k), "out", None)
    assert cp.output_indices == [1, 2]
    xa, u, v = torch.randn(16, 32), torch.zeros(16, 32), torch.randn(16, 32)
    v0 = v.clone()
    ru, rv = cp(xa, u, v)
    assert ru is u and rv is v
    torch.testing.assert_close(u, torch.exp(xa))
    assert torch.equal(v, v0 + xa)


def test_failed_run_leaves_user_tensors_untouched() -> None:
    prog = add_program()
    k = prog.get_function("k")
    a, b, c = (Var(n, tensor_t((16, 32))) for n in "abc")
    bad_x, c1 = tile("x", (16, 32), FP32, Vec, 191 * 1024), Var("c1", c.type)
    bad = function("bad", [(a, In), (c, InOut)], [load(bad_x, a, (0, 0)), store(c1, bad_x, (0, 0), c),
                                                   ret(c1)])
    r1, r2 = Var("r1", c.type), Var("r2", c.type)
    main = function("main", [(a, In), (b, In), (c, InOut)], [
        assign(r1, kernel_call("k", [a, b, c], c.type)),
        assign(r2, kernel_call("bad", [a, r1], c.type)), ret(r2)], ORCH)
    cp = CompiledProgram(program(main, k, bad), "out", None)
    x, y, z = _args()
    z0 = z.clone()
    with pytest.raises(RuntimeSimError, match="task 1 \\(kernel 'bad' on AIV1\\).*exceeds"):
        cp(x, y, z)
    assert torch.equal(z, z0)
    assert len(cp.tasks) == 2


def test_orchestration_rejects_data_compute_ops() -> None:
    a, c = Var("a", tensor_t((16, 32))), Var("c", tensor_t((16, 32)))
    main = function("main", [(a, In), (c, Out)],
                    [assign(c, call("tensor.add", [a, a], c.type)), ret(c)], ORCH)
    cp = CompiledProgram(program(main), "out", None)
    with pytest.raises(RuntimeSimError, match="tensor.add.*InCore"):
        cp(torch.zeros(16, 32), torch.zeros(16, 32))


def test_entry_selection() -> None:
    prog = add_program()
    assert CompiledProgram(prog, "o", None).entry == "main"
    cp = CompiledProgram(prog, "o", None, entry="k")
    a, b, c = _args()
    assert cp(a, b, c) is c and torch.equal(c, a + b) and len(cp.tasks) == 1
    with pytest.raises(ValueError, match="no function 'nope'.*k, main"):
        CompiledProgram(prog, "o", None, entry="nope")
    opaque = function("outer", list(zip(prog.get_function("main").params, (In, In, Out))),
                      list(prog.get_function("main").body.stmts), FunctionType.Opaque)
    assert CompiledProgram(program(prog.get_function("k"), opaque), "o", None).entry == "outer"


def test_scalar_argument_checks() -> None:
    a, c = Var("a", tensor_t((16, 32))), Var("c", tensor_t((16, 32)))
    n = Var("n", ScalarType(INDEX))
    x, c1 = tile("x", (16, 32), FP32, Vec, 0), Var("c1", c.type)
    i = Var("i", ScalarType(INDEX))
    k = function("k", [(a, In), (n, In), (c, Out)], [
        load(x, a, (0, 0)),
        ForStmt(i, ConstInt(0, INDEX), n, ConstInt(1, INDEX), (), seq(store(c1, x, (mul(i, 0), 0), c)), ()),
        ret(c)])
    cp = CompiledProgram(program(k), "o", None)
    t, out = torch.randn(16, 32), torch.zeros(16, 32)
    cp(t, 2, out)
    assert torch.equal(out, t)
    with pytest.raises(TypeError, match="'n'.*integer"):
        cp(t, 2.5, out)
    with pytest.raises(TypeError, match="'n'.*number"):
        cp(t, "2", out)


def test_repeat_calls_reuse_prepared_kernels() -> None:
    cp = CompiledProgram(add_program(), "o", None)
    a, b, c = _args()
    cp(a, b, c)
    ex = cp.tasks[0].executor
    a2, b2, c2 = _args()
    cp(a2, b2, c2)
    assert cp.tasks[0].executor is ex and torch.equal(c2, a2 + b2)


def test_fp16_program() -> None:
    a, b, c = (Var(n, tensor_t((16, 32), FP16)) for n in "abc")
    ta, tb = tile("ta", (16, 32), FP16, Vec, 0), tile("tb", (16, 32), FP16, Vec, 1024)
    tc, c1 = tile("tc", (16, 32), FP16, Vec, 2048), Var("c1", c.type)
    k = function("k", [(a, In), (b, In), (c, Out)], [
        load(ta, a, (0, 0)), load(tb, b, (0, 0)), binop("tile.maximum", tc, ta, tb),
        store(c1, tc, (0, 0), c), ret(c1)])
    cp = CompiledProgram(program(k), "o", None)
    x, y, z = torch.randn(16, 32).half(), torch.randn(16, 32).half(), torch.zeros(16, 32).half()
    cp(x, y, z)
    assert torch.equal(z, torch.maximum(x, y))
