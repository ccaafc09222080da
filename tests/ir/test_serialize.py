"""MessagePack serialization of IR nodes (SPEC §4): round trip, sharing, spans."""

from __future__ import annotations

import dataclasses
import math

import msgpack
import pytest

import pypto.ir as ir
from pypto.core.dtype import BOOL, FP16, FP32, INDEX, INT32
from pypto.core.enums import (
    ForKind,
    FunctionType,
    Level,
    MemorySpace,
    PadValue,
    ParamDirection,
    Role,
    ScopeKind,
    SplitMode,
    TensorLayout,
)
from pypto.core.span import Span
from pypto.ir import (
    AssignStmt,
    BinaryExpr,
    BreakStmt,
    Call,
    ConstBool,
    ConstFloat,
    ConstInt,
    ContinueStmt,
    EvalStmt,
    ExternalKernel,
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
    TensorView,
    TileType,
    TileView,
    TupleGetItem,
    TupleType,
    UnaryExpr,
    Var,
    WhileStmt,
    YieldStmt,
)
from pypto.ir.serialize import deserialize, serialize
from pypto.ir.structural import assert_structural_equal, structural_equal
from pypto.ir.types import ArrayType, CommCtxType, DistributedTensorType

IDX = ScalarType(INDEX)


def sp(line: int) -> Span:
    return Span("kern.py", line, 2, line, 30)


def c(v: int) -> ConstInt:
    return ConstInt(v, span=sp(99))


def build() -> Program:
    """A program using every IR node kind, with shared Vars and a shared MemRef."""
    M = Var("M", IDX, span=sp(1))
    tview = TensorView((c(64), c(1)), TensorLayout.DN, (M, c(64)), PadValue.zero)
    tensor = TensorType((M, c(64)), FP32, tview)
    a = Var("a", tensor, span=sp(2))
    out = Var("out", TensorType((M, c(64)), FP32), span=sp(3))
    mem = MemRef(MemorySpace.Vec, 3, 8192, 256)
    tile = TileType((c(32), c(64)), FP32, MemorySpace.Vec, mem, TileView((c(16), c(64)), TensorLayout.NZ,
                                                                         PadValue.max))
    t = Var("t", tile, span=sp(4))
    u = Var("u", TileType((c(32), c(64)), FP16, MemorySpace.Vec, mem), span=sp(5))
    i = Var("i", IDX, span=sp(6))
    acc = IterArg("acc", tile, init=t, span=sp(7))
    r = Var("r", tile)
    k = IterArg("k", IDX, init=c(0))
    k_out = Var("k_out", IDX)
    pair = Var("pair", TupleType((IDX, ScalarType(BOOL))))
    flag = Var("flag", ScalarType(BOOL))
    kw = (("target_memory", MemorySpace.Vec), ("dtype", FP16), ("mode", "round"), ("scale", 0.25),
          ("nan", math.nan), ("flag", True), ("none", None), ("dims", (1, (2, 3))), ("big", 1 << 70),
          ("neg", -(1 << 40)), ("split", SplitMode.UP_DOWN))
    loop_body = SeqStmts((
        IfStmt(BinaryExpr("ge", i, c(2), BOOL), SeqStmts((BreakStmt(span=sp(20)),)), None),
        IfStmt(UnaryExpr("not", flag, BOOL), SeqStmts((ContinueStmt(),)), SeqStmts(())),
        YieldStmt((acc,), span=sp(21)),
    ))
    arr_t = ArrayType(4, INT32)
    arr = Var("arr", arr_t, span=sp(12))
    win = Var("win", DistributedTensorType((c(4), c(1)), INT32), span=sp(13))   # pld (SPEC §8)
    ctx = Var("ctx", CommCtxType())
    kernel_body = SeqStmts((
        AssignStmt(t, Call("tile.load", (a, MakeTuple((c(0), c(0))), MakeTuple((c(32), c(64)))), kw,
                           tile, span=sp(10)), span=sp(10)),
        AssignStmt(u, Call("tile.cast", (t,), (("dtype", FP16),), u.var_type)),
        AssignStmt(pair, MakeTuple((c(1), ConstBool(False)))),
        AssignStmt(flag, TupleGetItem(pair, 1)),
        ForStmt(i, c(0), M, c(1), (acc,), loop_body, (r,), ForKind.Pipeline, span=sp(11)),
        WhileStmt(BinaryExpr("lt", k, c(4), BOOL), (k,),
                  SeqStmts((YieldStmt((BinaryExpr("add", k, ConstInt(1), INDEX),)),)), (k_out,)),
        ScopeStmt(ScopeKind.InCore, SeqStmts((EvalStmt(Call("system.bar_all", (), (), TupleType(()))),)),
                  Level.CORE_GROUP, (("split", (("mode", SplitMode.LEFT_RIGHT),)),)),
        EvalStmt(Call("tile.store", (r, MakeTuple((c(0), c(0))), out), (), out.var_type)),
        AssignStmt(arr, Call("array.create", (), (("extent", 4), ("dtype", INT32)), arr_t)),
        AssignStmt(ctx, Call("pld.get_comm_ctx", (win,), (), ctx.var_type)),
        ReturnStmt((out,)),
    ))
    kernel = Function("kernel", FunctionType.InCore, (a, out, win),
                      (ParamDirection.In, ParamDirection.InOut, ParamDirection.In),
                      (out.var_type,), kernel_body, Level.AIV, Role.SubWorker, True, False, span=sp(9))
    x = Var("x", tensor)
    y = Var("y", TensorType((M, c(64)), FP32))
    f = ConstFloat(-2.5, FP16)
    main = Function("main", FunctionType.Orchestration, (x, y), (ParamDirection.In, ParamDirection.Out),
                    (), SeqStmts((EvalStmt(Call(GlobalVar("kernel"), (x, y), (("alpha", f.value),),
                                                TupleType(()))),
                                  EvalStmt(f), _window_buffer(), ReturnStmt(()))), attrs=(("ids", (1, 2)), ("owner", "me")))
    ext = Function("ext", FunctionType.AIV, (Var("e", tensor),), (ParamDirection.InOut,), (tensor,), SeqStmts(()),
                   external=ExternalKernel("/src/k.cpp", ("/inc",), "e.numel() // 4", 2), span=sp(30))
    return Program("prog", (kernel, main, ext), span=sp(8))


def _window_buffer():
    """`wb = pld.alloc_window_buffer(64)`: a host-level value (SPEC §8)."""
    from pypto.ir.types import WindowBufferType

    return AssignStmt(Var("wb", WindowBufferType()), Call("pld.alloc_window_buffer", (ConstInt(64),), (),
                                                           WindowBufferType()))


def _walk(x, seen):
    """Every dataclass object reachable from x (by identity), in visiting order."""
    if isinstance(x, tuple):
        for y in x:
            _walk(y, seen)
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        if id(x) in seen:
            return
        seen[id(x)] = x
        for fld in dataclasses.fields(x):
            _walk(getattr(x, fld.name), seen)
    return seen


def test_fixture_uses_every_node_kind():
    kinds = {type(o).__name__ for o in _walk(build(), {}).values()}
    expected = {name for mod in (ir.expr, ir.stmt, ir.types, ir.function) for name, obj in vars(mod).items()
                if isinstance(obj, type) and dataclasses.is_dataclass(obj) and obj.__module__ == mod.__name__}
    expected -= {"Expr", "Stmt", "Type"}  # abstract bases
    assert expected - kinds == set()


def test_round_trip_is_structurally_equal_and_exact():
    p = build()
    data = serialize(p)
    assert isinstance(data, bytes)
    q = deserialize(data)
    assert q is not p
    assert type(q) is Program and q.name == "prog"
    assert_structural_equal(p, q)
    # field-for-field identical too, including spans and var names
    po, qo = list(_walk(p, {}).values()), list(_walk(q, {}).values())
    assert [type(o) for o in po] == [type(o) for o in qo]
    for o1, o2 in zip(po, qo):
        if isinstance(o1, Var):
            assert o1.name == o2.name
        if hasattr(o1, "span"):
            assert o1.span == o2.span
    assert serialize(q) == data


def test_sharing_is_preserved():
    p = build()
    q = deserialize(serialize(p))
    kernel = q.get_function("kernel")
    a, out, win = kernel.params
    load = kernel.body.stmts[0].value
    assert load.args[0] is a
    assert kernel.body.stmts[-1].values[0] is out
    assert kernel.body.stmts[-2].value.args[0] is win
    t = kernel.body.stmts[0].var
    assert kernel.body.stmts[1].value.args[0] is t
    loop = kernel.body.stmts[4]
    assert loop.iter_args[0].init is t
    assert loop.body.stmts[-1].values[0] is loop.iter_args[0]
    # the dynamic dim M and the MemRef are shared across types and functions
    M = a.var_type.shape[0]
    assert out.var_type.shape[0] is M and loop.stop is M
    assert q.get_function("main").params[0].var_type.shape[0] is M
    assert t.var_type.memref is kernel.body.stmts[1].var.var_type.memref
    # x's type object is shared with a's in the source, so it is in the result too
    assert q.get_function("main").params[0].var_type is a.var_type
    # count of distinct objects is unchanged
    assert len(_walk(p, {})) == len(_walk(q, {}))


def test_values_round_trip():
    q = deserialize(serialize(build()))
    call = q.get_function("kernel").body.stmts[0].value
    kw = call.attrs
    assert kw["target_memory"] is MemorySpace.Vec
    assert kw["dtype"] is FP16
    assert kw["scale"] == 0.25 and isinstance(kw["scale"], float)
    assert math.isnan(kw["nan"])
    assert kw["flag"] is True
    assert kw["none"] is None
    assert kw["dims"] == (1, (2, 3)) and isinstance(kw["dims"][1], tuple)
    assert kw["big"] == 1 << 70 and kw["neg"] == -(1 << 40)
    assert kw["split"] is SplitMode.UP_DOWN
    assert isinstance(call.kwargs, tuple) and isinstance(call.kwargs[0], tuple)
    assert type(q.get_function("kernel").body.stmts[4].iter_args[0]) is IterArg
    f = q.get_function("kernel")
    assert (f.level, f.role, f.strict_ssa, f.auto_scope) == (Level.AIV, Role.SubWorker, True, False)
    assert f.body.stmts[4].kind is ForKind.Pipeline


def test_spans_kept_and_unknown_span_singleton():
    q = deserialize(serialize(build()))
    assert q.span == sp(8)
    assert q.get_function("kernel").body.stmts[4].span == sp(11)
    assert q.get_function("kernel").body.stmts[4].body.stmts[0].then_body.stmts[0].span == sp(20)
    no_span = q.get_function("kernel").body.stmts[4].body.stmts[1].then_body.stmts[0]
    assert no_span.span is Span.unknown()


def test_plain_values_and_small_nodes():
    for v in (None, 3, -7, 2.5, "s", True, (1, "a", None), FP32, PadValue.zero, [1, (2,)]):
        assert deserialize(serialize(v)) == v
    ty = TensorType((c(4),), FP32)
    assert structural_equal(deserialize(serialize(ty)), ty)
    v = Var("v", IDX)
    e = BinaryExpr("mul", v, v, INDEX)
    e2 = deserialize(serialize(e))
    assert e2.lhs is e2.rhs and e2.lhs.name == "v"


def test_deserialized_differs_when_source_differs():
    p = build()
    q = deserialize(serialize(p))
    m = deserialize(serialize(MemRef(MemorySpace.Vec, 3, 8192, 512)))
    assert m.addr == 512
    assert not structural_equal(q.get_function("kernel").body.stmts[0].var.var_type.memref, m)


def test_errors():
    with pytest.raises(TypeError):
        serialize({"a": 1})
    with pytest.raises(TypeError):
        serialize(object())
    with pytest.raises(ValueError):
        deserialize(b"\xc1not msgpack")
    with pytest.raises(ValueError):
        deserialize(msgpack.packb({"format": "other"}))
    with pytest.raises(ValueError):
        deserialize(msgpack.packb({"format": "pypto-ir", "version": 999, "classes": [], "root": None}))
    with pytest.raises(ValueError):
        deserialize(msgpack.packb({"format": "pypto-ir", "version": 1,
                                   "classes": [["os", "system", []]], "root": [0, 0]}))
