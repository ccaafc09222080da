"""Structural equality / hashing of IR nodes (SPEC §4)."""

from __future__ import annotations

import dataclasses
import math

import pytest

import pypto.language as pl
from pypto import ir
from pypto.core.dtype import BF16, BOOL, FP16, FP32, INDEX, INT32
from pypto.core.enums import ForKind, FunctionType, MemorySpace, ParamDirection, ScopeKind
from pypto.core.span import Span
from pypto.ir import (
    AssignStmt,
    BinaryExpr,
    Call,
    ConstFloat,
    ConstInt,
    EvalStmt,
    ForStmt,
    Function,
    GlobalVar,
    IfStmt,
    IterArg,
    MakeTuple,
    MemRef,
    Program,
    ReturnStmt,
    ScalarType,
    ScopeStmt,
    SeqStmts,
    TensorType,
    TileType,
    TileView,
    Var,
    WhileStmt,
    YieldStmt,
)
from pypto.ir.structural import assert_structural_equal, structural_equal, structural_hash

IDX = ScalarType(INDEX)


def c(v: int) -> ConstInt:
    return ConstInt(v)


def build(tag: str = "", line: int = 0, *, const: float = 1.0, dtype=FP32, op: str = "tile.add",
          mode: str = "round", addr: int = 0, kind: ForKind = ForKind.Sequential,
          callee: str = "kernel", prog: str = "P", init_from_t1: bool = True) -> Program:
    """A two-function program; every call makes fresh Vars named with `tag` and spans at `line`."""
    sp = Span(f"f{tag}.py", line, 1, line, 9)
    M = Var("M", IDX)  # dynamic dim: a fresh object per build, with the same name
    tensor = TensorType((M, c(64)), FP32)
    a = Var("a" + tag, tensor, span=sp)
    out = Var("out" + tag, tensor, span=sp)
    mem = MemRef(MemorySpace.Vec, 0, 16384, addr)
    tile = TileType((c(32), c(64)), dtype, MemorySpace.Vec, mem, TileView((c(32), c(64))))
    offs = MakeTuple((c(0), c(0)), span=sp)
    t0 = Var("t0" + tag, tile, span=sp)
    t1 = Var("t1" + tag, tile, span=sp)
    load = Call("tile.load", (a, offs, MakeTuple((c(32), c(64)))),
                (("target_memory", MemorySpace.Vec),), tile, span=sp)
    add = Call(op, (t0, t0), (("mode", mode), ("scale", 0.5)), tile, span=sp)
    i = Var("i" + tag, IDX)
    acc = IterArg("acc" + tag, tile, init=t1 if init_from_t1 else t0)
    s = Var("s" + tag, tile)
    body = SeqStmts((
        AssignStmt(s, Call("tile.adds", (acc, ConstFloat(const)), (), tile), span=sp),
        YieldStmt((s,)),
    ))
    r = Var("r" + tag, tile)
    loop = ForStmt(i, c(0), c(4), c(1), (acc,), body, (r,), kind, span=sp)
    z = Var("z" + tag, tile)
    cond = BinaryExpr("lt", M, c(128), BOOL)
    branch = IfStmt(cond, SeqStmts((YieldStmt((r,)),)), SeqStmts((YieldStmt((t1,)),)), (z,))
    stored = Var("stored" + tag, tensor)
    store = Call("tile.store", (z, offs, out), (), tensor)
    kernel = Function("kernel", FunctionType.InCore, (a, out), (ParamDirection.In, ParamDirection.Out),
                      (tensor,), SeqStmts((
                          AssignStmt(t0, load, span=sp),
                          AssignStmt(t1, add),
                          loop,
                          branch,
                          AssignStmt(stored, store),
                          ReturnStmt((stored,)),
                      )), span=sp)
    x = Var("x" + tag, tensor)
    y = Var("y" + tag, tensor)
    res = Var("res" + tag, tensor)
    main = Function("main", FunctionType.Orchestration, (x, y), (ParamDirection.In, ParamDirection.Out),
                    (tensor,), SeqStmts((
                        ScopeStmt(ScopeKind.Runtime, SeqStmts((
                            AssignStmt(res, Call(GlobalVar(callee), (x, y), (), tensor)),
                        ))),
                        ReturnStmt((res,)),
                    )))
    return Program(prog, (kernel, main), span=sp)


def test_equal_with_different_names_spans_and_program_names():
    a, b = build(), build("_other", 42, prog="Renamed")
    assert a is not b
    assert structural_equal(a, b)
    assert structural_equal(b, a)
    assert_structural_equal(a, b)
    assert structural_hash(a) == structural_hash(b)


def test_hash_is_an_int_and_deterministic():
    h = structural_hash(build())
    assert isinstance(h, int)
    assert h == structural_hash(build("q"))


@pytest.mark.parametrize("change, path", [
    (dict(const=2.0), "Program.functions[0].body.stmts[2].body.stmts[0].value.args[1].value"),
    (dict(dtype=BF16), "Program.functions[0].body.stmts[0].value.result_type.dtype"),
    (dict(op="tile.sub"), "Program.functions[0].body.stmts[1].value.op"),
    (dict(mode="floor"), "Program.functions[0].body.stmts[1].value.kwargs[0][1]"),
    (dict(addr=4096), "Program.functions[0].body.stmts[0].value.result_type.memref.addr"),
    (dict(kind=ForKind.Parallel), "Program.functions[0].body.stmts[2].kind"),
    (dict(callee="other"), "Program.functions[1].body.stmts[0].body.stmts[0].value.op"),
    (dict(init_from_t1=False), "Program.functions[0].body.stmts[2].iter_args[0].init"),
])
def test_single_change_is_detected_with_path(change, path):
    a, b = build(), build("_b", **change)
    assert not structural_equal(a, b)
    assert structural_hash(a) != structural_hash(b)
    with pytest.raises(AssertionError) as ei:
        assert_structural_equal(a, b)
    msg = str(ei.value)
    assert f"{path}:" in msg, msg


def test_message_shows_both_values():
    with pytest.raises(AssertionError, match=r"\.op: 'tile\.add' vs 'tile\.sub'"):
        assert_structural_equal(build(), build(op="tile.sub"))
    with pytest.raises(AssertionError, match=r"\.value: 1\.0 vs 2\.0"):
        assert_structural_equal(build(), build(const=2.0))


def test_function_names_are_ignored():
    """SPEC §13 (upstream's convention): a function's name is not part of its structure."""
    p = build()
    f = p.functions[0]
    g = Function("kernel2", f.func_type, f.params, f.param_directions, f.return_types, f.body)
    assert structural_equal(f, g) and structural_hash(f) == structural_hash(g)


def _fn(body_of, nparams=2, same_param=False, name="f"):
    ps = [Var(f"p{k}", IDX) for k in range(nparams)]
    if same_param:
        ps = [ps[0]] * nparams
    return Function(name, FunctionType.Opaque, tuple(ps), (ParamDirection.In,) * nparams, (IDX,),
                    SeqStmts(tuple(body_of(*ps))))


def _ret(e):
    return [ReturnStmt((e,))]


def test_inconsistent_var_use_is_unequal():
    xx = _fn(lambda x, y: _ret(BinaryExpr("add", x, x, INDEX)))
    xy = _fn(lambda x, y: _ret(BinaryExpr("add", x, y, INDEX)))
    yx = _fn(lambda x, y: _ret(BinaryExpr("add", y, x, INDEX)))
    assert structural_equal(xx, _fn(lambda x, y: _ret(BinaryExpr("add", x, x, INDEX))))
    assert not structural_equal(xx, xy)
    assert not structural_equal(xy, xx)
    assert not structural_equal(xy, yx)
    with pytest.raises(AssertionError, match=r"Function\.body\.stmts\[0\]\.values\[0\]\.rhs: Var\(p0\) vs Var\(p1\)"):
        assert_structural_equal(xx, xy)


def test_binding_must_be_a_bijection():
    distinct = _fn(lambda x, y: _ret(x))
    same = _fn(lambda x, y: _ret(x), same_param=True)
    assert not structural_equal(distinct, same)
    assert not structural_equal(same, distinct)
    assert structural_equal(same, _fn(lambda x, y: _ret(x), same_param=True))


def test_non_ssa_rebinding_must_map_to_the_same_partner():

    def rebind(reuse: bool):
        x = Var("x", IDX)
        x2 = x if reuse else Var("x2", IDX)
        return _fn(lambda p, q: [AssignStmt(x, c(1)),
                                 AssignStmt(x2, BinaryExpr("add", x, p, INDEX)),
                                 ReturnStmt((x2,))])

    assert structural_equal(rebind(True), rebind(True))
    assert structural_equal(rebind(False), rebind(False))
    assert not structural_equal(rebind(True), rebind(False))
    assert not structural_equal(rebind(False), rebind(True))
    with pytest.raises(AssertionError, match=r"stmts\[1\]\.var: "):
        assert_structural_equal(rebind(True), rebind(False))


def test_bound_var_vs_constant_message():
    a = _fn(lambda x, y: _ret(BinaryExpr("add", x, y, INDEX)))
    b = _fn(lambda x, y: _ret(BinaryExpr("add", x, c(1), INDEX)))
    with pytest.raises(AssertionError, match=r"values\[0\]\.rhs: Var\(p1\) vs ConstInt\(1\)"):
        assert_structural_equal(a, b)


def test_free_vars_compare_by_identity_unless_mapped():
    x, y = Var("x", IDX), Var("y", IDX)
    ex = BinaryExpr("add", x, c(1), INDEX)
    ey = BinaryExpr("add", y, c(1), INDEX)
    assert structural_equal(ex, BinaryExpr("add", x, c(1), INDEX))
    assert not structural_equal(ex, ey)
    assert structural_hash(ex) != structural_hash(ey)  # free vars hash by name
    assert structural_equal(ex, ey, map_free_vars=True)
    assert structural_hash(ex, map_free_vars=True) == structural_hash(ey, map_free_vars=True)
    # same-named but distinct free scalar vars outside types are still different variables
    assert not structural_equal(ex, BinaryExpr("add", Var("x", IDX), c(1), INDEX))
    # mapping must stay consistent even for free vars
    assert not structural_equal(BinaryExpr("add", x, x, INDEX), BinaryExpr("add", x, y, INDEX),
                                map_free_vars=True)
    # free var types must agree when mapped
    assert not structural_equal(x, Var("x", ScalarType(INT32)), map_free_vars=True)


def test_dynamic_dims_match_by_name():
    t1 = TensorType((Var("M", IDX), c(8)), FP16)
    t2 = TensorType((Var("M", IDX), c(8)), FP16)
    tn = TensorType((Var("N", IDX), c(8)), FP16)
    assert structural_equal(t1, t2)
    assert structural_hash(t1) == structural_hash(t2)
    assert not structural_equal(t1, tn)
    assert structural_equal(t1, tn, map_free_vars=True)
    # two dims: [M, M] is not [M, M'] even when names agree
    m = Var("M", IDX)
    assert not structural_equal(TensorType((m, m), FP16), TensorType((Var("M", IDX), Var("M", IDX)), FP16))


def test_types_compared_structurally():
    mem = MemRef(MemorySpace.Vec, 1, 256, 0)
    base = TileType((c(8), c(8)), FP32, MemorySpace.Vec, mem)
    assert structural_equal(base, TileType((c(8), c(8)), FP32, MemorySpace.Vec,
                                           MemRef(MemorySpace.Vec, 1, 256, 0)))
    for other in (TileType((c(8), c(16)), FP32, MemorySpace.Vec, mem),
                  TileType((c(8), c(8)), FP16, MemorySpace.Vec, mem),
                  TileType((c(8), c(8)), FP32, MemorySpace.Mat, mem),
                  TileType((c(8), c(8)), FP32, MemorySpace.Vec, None),
                  TileType((c(8), c(8)), FP32, MemorySpace.Vec, MemRef(MemorySpace.Vec, 2, 256, 0)),
                  TileType((c(8), c(8)), FP32, MemorySpace.Vec, MemRef(MemorySpace.Vec, 1, 512, 0)),
                  TileType((c(8), c(8)), FP32, MemorySpace.Vec, mem, TileView((c(4), c(8)))),
                  TensorType((c(8), c(8)), FP32)):
        assert not structural_equal(base, other), other
    assert not structural_equal(ScalarType(FP32), ScalarType(FP16))


def test_kwarg_values():
    def call(*kw):
        return Call("tile.cast", (c(1),), tuple(kw), IDX)
    nan = float("nan")
    assert structural_equal(call(("v", nan)), call(("v", math.nan)))
    assert structural_hash(call(("v", nan))) == structural_hash(call(("v", float("nan"))))
    assert structural_equal(call(("d", FP32), ("t", (1, 2))), call(("d", FP32), ("t", (1, 2))))
    assert not structural_equal(call(("d", FP32)), call(("d", FP16)))
    assert not structural_equal(call(("t", (1, 2))), call(("t", (1, 3))))
    assert not structural_equal(call(("t", (1, 2))), call(("t", (1, 2, 3))))
    assert not structural_equal(call(("b", True)), call(("b", 1)))
    assert not structural_equal(call(("n", None)), call(("n", 0)))
    assert not structural_equal(call(("a", 1)), call(("b", 1)))
    assert not structural_equal(call(("a", 1)), call(("a", 1), ("b", 2)))


def test_while_iter_args_bind_before_cond():

    def loop(tag, swap=False):
        k = IterArg("k" + tag, IDX, init=c(0))
        j = IterArg("j" + tag, IDX, init=c(0))
        k2, out_k, out_j = Var("k2" + tag, IDX), Var("ok" + tag, IDX), Var("oj" + tag, IDX)
        cond = BinaryExpr("lt", j if swap else k, c(10), BOOL)
        body = SeqStmts((AssignStmt(k2, BinaryExpr("add", k, c(1), INDEX)), YieldStmt((k2, j))))
        return WhileStmt(cond, (k, j), body, (out_k, out_j))

    assert structural_equal(loop("a"), loop("b"))
    assert structural_hash(loop("a")) == structural_hash(loop("b"))
    assert not structural_equal(loop("a"), loop("b", swap=True))
    with pytest.raises(AssertionError, match=r"WhileStmt\.cond\.lhs: IterArg\(ka\) vs IterArg\(jb\)"):
        assert_structural_equal(loop("a"), loop("b", swap=True))


def test_node_class_mismatch_and_eval():
    v = Var("v", IDX)
    assert not structural_equal(EvalStmt(v), AssignStmt(v, v))
    assert not structural_equal(Var("v", IDX), IterArg("v", IDX, init=None), map_free_vars=True)
    assert not structural_equal(c(1), ConstFloat(1.0))
    assert not structural_equal(c(1), ConstInt(1, INT32))
    assert structural_equal(c(1), ConstInt(1, span=Span("x.py", 3, 4)))


# ---- SPEC §13 conventions: programs keep functions sorted by name; equality ignores function names

def _two_kernel_program(kname: str, mname: str):
    return pl.parse(f'''import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def {kname}(self, a: pl.Tensor[[16, 16], pl.FP32], c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t: pl.Tile[[16, 16], pl.FP32] = pl.tile.load(a, [0, 0], [16, 16])
        c: pl.Tensor[[16, 16], pl.FP32] = pl.tile.store(t, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def {mname}(self, a: pl.Tensor[[16, 16], pl.FP32], c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        c: pl.Tensor[[16, 16], pl.FP32] = self.{kname}(a, c)
        return c
''')


def test_program_functions_sorted_by_name():
    p = _two_kernel_program("zeta", "main")
    assert p.function_names == ("main", "zeta")
    again = ir.Program("Q", tuple(reversed(p.functions)))
    assert again.function_names == ("main", "zeta")
    assert pl.parse(p.as_python()).function_names == ("main", "zeta")


def test_structural_equality_ignores_function_names():
    a = _two_kernel_program("kernel", "main")
    b = _two_kernel_program("add_kernel", "main")
    ir.assert_structural_equal(a, b)
    assert ir.structural_hash(a) == ir.structural_hash(b)
    ir.assert_structural_equal(a.functions[0], b.functions[0])  # functions compared on their own
    # a callee must name the paired function: swap the kernel's call for a call of main itself
    bad = _two_kernel_program("kernel", "main")
    call = bad.get_function("main").body.stmts[0].value
    wrong = dataclasses.replace(call, op=ir.GlobalVar("main"))
    main = bad.get_function("main")
    main2 = dataclasses.replace(main, body=dataclasses.replace(
        main.body, stmts=(dataclasses.replace(main.body.stmts[0], value=wrong),) + main.body.stmts[1:]))
    bad2 = ir.Program("P", (bad.get_function("kernel"), main2))
    with pytest.raises(AssertionError, match="function 'kernel' is paired with 'kernel', 'main' with 'main'"):
        ir.assert_structural_equal(a, bad2)
