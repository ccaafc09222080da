"""Builtin chip programs of the host-level collectives (SPEC §8 "Collectives").

A collective called in a HOST orchestrator (`pld.allreduce(buf)` next to the rank loop) runs as one
small chip program per rank: the host compiler asks `builtin_program(name, arg_types, attrs)` for
it, compiles it into `next_levels/<program.name>/` like a user chip program, and emits
`rt.dispatch(<program.name>, r, args)` for every rank r followed by `rt.sync()` where it needs the
result. The program is an Orchestration entry `main` calling one InCore kernel `collective` whose
body is the kernel-level collective itself; the Default pipeline's `LowerCollectives` pass turns
it into signal and remote-memory primitives (chunked to fit Vec).

Parameters of `main` (and of the kernel), in order: the collective's operands as the host passed
them (`arg_types`), so `args` of the dispatch are the host call's arguments for rank r (window
tensors, host tensor views `x[r]`). Operands the collective writes are InOut, the others In. A
dimension the host computes (`pld.window(buf, [pld.world_size(), 1])`) is a dynamic dimension of
the program (`signal_dim0`), so the build does not depend on the world size.

**Host allreduce without a signal.** `pld.allreduce(src)` on the host may omit `signal`; the builtin
program then still takes one, as its last parameter: the host driver allocates it once per host
call, before the rank loop, as a zero-filled window of `signal_shape(name, attrs, world)` INT32
cells (`rt.alloc_window_buffer(4 * cells)` + `rt.window(buf, shape, "INT32")`) and passes it to
every rank's dispatch. Its dimensions are dynamic in the program (`NR`, and `RING_STEPS` = 2(NR-1)
for the ring), so one build serves every world size. Signals are self-clearing, so the same window
serves every allreduce of that host call. `implicit_signal(name, arg_types)` tells the driver when
it must do this.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

from ...core.dtype import INDEX, INT32
from ...core.enums import FunctionType, ParamDirection, ReduceOp
from ...core.errors import CompileError
from ...ir.expr import Call, ConstInt, GlobalVar, TupleGetItem, Var
from ...ir.function import Function, Program
from ...ir.op import make_call
from ...ir.stmt import AssignStmt, EvalStmt, ReturnStmt, SeqStmts, Stmt
from ...ir.types import DistributedTensorType, ScalarType, TensorType, TupleType, Type
from ...ops import get_op, has_op
from ...ops.distributed_collectives import COLLECTIVES, signal_rows

__all__ = ["builtin_program", "builtin_name", "signal_shape", "implicit_signal", "KERNEL", "ENTRY"]

KERNEL = "collective"
ENTRY = "main"
_NAMES = tuple(c[0] for c in COLLECTIVES)


def _op_name(name: str) -> str:
    short = name.removeprefix("pld.")
    if short not in _NAMES or not has_op(f"pld.{short}"):
        raise CompileError(f"no builtin collective named {name!r}; the collectives are "
                           f"{', '.join('pld.' + n for n in _NAMES)}")
    return f"pld.{short}"


def _attr_text(v: Any) -> str:
    if isinstance(v, ReduceOp):
        return v.name.lower()
    return str(v).lower()


def _type_text(t: Type) -> str:
    dims = ",".join(str(d.value) if isinstance(d, ConstInt) else getattr(d, "name", "?")
                    for d in getattr(t, "shape", ()))
    return f"{type(t).__name__}[{dims}]{getattr(getattr(t, 'dtype', None), 'name', '')}"


def builtin_name(name: str, attrs: dict[str, Any] | None = None, arg_types: list[Type] | None = None) -> str:
    """The chip program's name, a valid identifier: `pld_<collective>_<attribute values>`, then (with
    `arg_types`) 8 hex digits of a digest of the operand types, so calls on different shapes get
    different programs (`pld_allreduce_sum_ring_1_3f2a9c01`) and equal calls share one."""
    op = _op_name(name)
    spec = get_op(op)
    full = dict(spec.attrs)
    full.update(attrs or {})
    parts = [_attr_text(full[k]) for k in spec.attrs]
    if arg_types is not None:
        key = ";".join(_type_text(t) for t in arg_types)
        parts.append(hashlib.sha1(key.encode()).hexdigest()[:8])
    return "_".join([op.replace(".", "_"), *parts])


def implicit_signal(name: str, arg_types: list[Type]) -> bool:
    """True when a host call of `name` with these operands omitted its optional signal (only
    allreduce may), so the driver must allocate one (module docstring)."""
    spec = get_op(_op_name(name))
    return len(arg_types) < len(spec.params) and "signal" in spec.optional


def signal_shape(name: str, attrs: dict[str, Any] | None, world: int) -> list[int]:
    """Shape of the signal window a host call of `name` needs for `world` ranks: `[world, 1]`, or
    `[2(world-1), world]` for allreduce with mode="ring"."""
    mode = (attrs or {}).get("mode", "mesh") if _op_name(name) == "pld.allreduce" else "mesh"
    return signal_rows(mode, world)


def _implicit_signal_type(attrs: dict[str, Any]) -> DistributedTensorType:
    nr = Var("NR", ScalarType(INDEX))
    if attrs.get("mode", "mesh") == "ring":
        return DistributedTensorType((Var("RING_STEPS", ScalarType(INDEX)), nr), INT32)
    return DistributedTensorType((nr, ConstInt(1, INDEX)), INT32)


def _chip_type(t: Type, param: str) -> Type:
    """`t` as a chip program parameter type: a dimension the host computes (`pld.world_size()`, an
    expression) becomes a dynamic dimension `<param>_dim<axis>`, bound from the window at dispatch;
    constants and named dynamic dimensions stay."""
    if not isinstance(t, TensorType):
        return t
    dims = tuple(d if isinstance(d, (ConstInt, Var)) else Var(f"{param}_dim{i}", ScalarType(INDEX))
                 for i, d in enumerate(t.shape))
    return t if all(a is b for a, b in zip(dims, t.shape)) else replace(t, shape=dims)


def builtin_program(name: str, arg_types: list[Type], attrs: dict[str, Any] | None = None) -> Program:
    """The chip program that runs collective `name` ("allreduce" or "pld.allreduce", ...) on one rank.

    Args:
        name: the collective.
        arg_types: IR types of the host call's operands, in the collective's parameter order
            (window tensors are `DistributedTensorType`; allreduce may leave out the signal).
        attrs: the call's attributes (`op`, `mode`, `root`, ...); missing ones take the defaults.

    Returns:
        A Program named `builtin_name(name, attrs, arg_types)` with the Orchestration entry `main` (see the
        module docstring for its parameters) and the InCore kernel `collective`.

    Raises:
        CompileError: an unknown collective, a wrong operand count, or operands the collective's
            type rule rejects (the message names the collective and the argument).
    """
    op = _op_name(name)
    spec = get_op(op)
    attrs = dict(attrs or {})
    types = [_chip_type(t, p) for t, p in zip(arg_types, spec.params)]
    if implicit_signal(name, types):
        types.append(_implicit_signal_type(attrs))
    if len(types) != len(spec.params):
        raise CompileError(f"{op} takes {len(spec.params)} operands ({', '.join(spec.params)}), got {len(types)}")
    for t in types:
        if not isinstance(t, TensorType):
            raise CompileError(f"{op}: the builtin host collective takes tensors only, got {type(t).__name__}")
    dirs = tuple(ParamDirection.InOut if i in spec.writes else ParamDirection.In for i in range(len(types)))
    outs = [i for i, d in enumerate(dirs) if d is ParamDirection.InOut]
    ret_types = tuple(types[i] for i in outs)

    def params() -> list[Var]:
        return [Var(p, t) for p, t in zip(spec.params, types)]

    kp = params()
    kbody: list[Stmt] = [EvalStmt(make_call(op, kp, attrs))]
    kbody.append(ReturnStmt(tuple(kp[i] for i in outs)))
    kernel = Function(KERNEL, FunctionType.InCore, tuple(kp), dirs, ret_types, SeqStmts(tuple(kbody)))

    mp = params()
    call = Call(GlobalVar(KERNEL), tuple(mp), (), TupleType(ret_types) if len(outs) != 1 else ret_types[0])
    mbody: list[Stmt] = []
    if len(outs) == 1:
        res = Var(f"{spec.params[outs[0]]}_out", ret_types[0])
        mbody.append(AssignStmt(res, call))
        rets: tuple[Var, ...] = (res,)
    else:
        tup = Var("results", call.result_type)
        mbody.append(AssignStmt(tup, call))
        rets = tuple(Var(f"{spec.params[i]}_out", types[i]) for i in outs)
        mbody += [AssignStmt(v, TupleGetItem(tup, k)) for k, v in enumerate(rets)]
    mbody.append(ReturnStmt(rets))
    entry = Function(ENTRY, FunctionType.Orchestration, tuple(mp), dirs, ret_types, SeqStmts(tuple(mbody)))
    return Program(builtin_name(name, attrs, types), (entry, kernel))
