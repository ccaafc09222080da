"""Helpers that build lowered IR by hand for the runtime tests."""

from __future__ import annotations

from typing import Any

from pypto.core import dtype as dt
from pypto.core.enums import FunctionType, MemorySpace, ParamDirection
from pypto.ir import (
    AssignStmt,
    BinaryExpr,
    Call,
    ConstInt,
    Expr,
    Function,
    GlobalVar,
    MakeTuple,
    MemRef,
    Program,
    ReturnStmt,
    SeqStmts,
    Stmt,
    TensorType,
    TileType,
    Var,
)

FP32, FP16, INDEX = dt.FP32, dt.FP16, dt.INDEX
Vec, Mat, Left, Right, Acc = (MemorySpace.Vec, MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right,
                              MemorySpace.Acc)
In, Out, InOut = ParamDirection.In, ParamDirection.Out, ParamDirection.InOut

_ids = iter(range(1, 1_000_000))


def dims(shape: tuple) -> tuple[Expr, ...]:
    return tuple(d if isinstance(d, Expr) else ConstInt(d, INDEX) for d in shape)


def tensor_t(shape: tuple, dtype: Any = FP32) -> TensorType:
    return TensorType(dims(shape), dtype)


def tile_t(shape: tuple, dtype: Any, space: MemorySpace, addr: int, mem_id: int | None = None,
           size: int | None = None) -> TileType:
    n = 1
    for d in shape:
        n *= d
    nbytes = n * dtype.get_byte()
    mr = MemRef(space, next(_ids) if mem_id is None else mem_id, size or nbytes, addr)
    return TileType(dims(shape), dtype, space, mr)


def tile(name: str, shape: tuple, dtype: Any, space: MemorySpace, addr: int, **kw: Any) -> Var:
    return Var(name, tile_t(shape, dtype, space, addr, **kw))


def tup(*vals: Any) -> MakeTuple:
    return MakeTuple(tuple(v if isinstance(v, Expr) else ConstInt(v, INDEX) for v in vals))


def call(op: Any, args: list, result_type: Any, **kwargs: Any) -> Call:
    return Call(op, tuple(args), tuple(kwargs.items()), result_type)


def assign(var: Var, value: Expr) -> AssignStmt:
    return AssignStmt(var, value)


def seq(*stmts: Stmt) -> SeqStmts:
    return SeqStmts(tuple(stmts))


def mul(a: Expr, b: int) -> BinaryExpr:
    return BinaryExpr("mul", a, ConstInt(b, INDEX), INDEX)


def load(var: Var, src: Var, offsets: tuple, space: MemorySpace = Vec) -> AssignStmt:
    shape = tuple(d.value for d in var.type.shape)
    return assign(var, call("tile.load", [src, tup(*offsets), tup(*shape)], var.type,
                            target_memory=space))


def store(result: Var, t: Var, offsets: tuple, out: Var) -> AssignStmt:
    return assign(result, call("tile.store", [t, tup(*offsets), out], out.type))


def binop(op: str, var: Var, *args: Any) -> AssignStmt:
    return assign(var, call(op, list(args), var.type))


def function(name: str, params: list[tuple[Var, ParamDirection]], stmts: list[Stmt],
             ftype: FunctionType = FunctionType.InCore, returns: tuple = ()) -> Function:
    return Function(name, ftype, tuple(p for p, _ in params), tuple(d for _, d in params),
                    tuple(returns), seq(*stmts))


def kernel_call(name: str, args: list, result_type: Any) -> Call:
    return Call(GlobalVar(name), tuple(args), (), result_type)


def program(*funcs: Function, name: str = "prog") -> Program:
    return Program(name, tuple(funcs))


def ret(*vals: Expr) -> ReturnStmt:
    return ReturnStmt(tuple(vals))


def add_program(shape: tuple = (16, 32)) -> Program:
    """main(a, b, c: Out) submitting kernel k: c = a + b through Vec tiles at 0 / 2048 / 4096."""
    a, b, c = (Var(n, tensor_t(shape)) for n in "abc")
    ta, tb = tile("ta", shape, FP32, Vec, 0), tile("tb", shape, FP32, Vec, 2048)
    tc, c1 = tile("tc", shape, FP32, Vec, 4096), Var("c1", tensor_t(shape))
    k = function("k", [(a, In), (b, In), (c, Out)], [
        load(ta, a, (0, 0)), load(tb, b, (0, 0)), binop("tile.add", tc, ta, tb),
        store(c1, tc, (0, 0), c), ret(c1)])
    oa, ob, oc = (Var(n, tensor_t(shape)) for n in "abc")
    r = Var("r", tensor_t(shape))
    main = function("main", [(oa, In), (ob, In), (oc, Out)],
                    [assign(r, kernel_call("k", [oa, ob, oc], r.type)), ret(r)],
                    FunctionType.Orchestration)
    return program(main, k)
