"""Kernel executor: runs one lowered InCore function (a task) on a simulated core.

A `KernelExecutor` is prepared once per kernel: each Call's OpSpec is resolved, every tile Var is
checked for a MemRef with a concrete address, and the body is compiled into closures
(`interp.FunctionCompiler`). Per core it builds, once, an environment template whose tile slots
hold typed views into that core's `CoreArena` at the planned addresses. Running a task copies the
template, binds the parameters and runs the closures.

Semantics of a tile assignment `t = op(args)`: `OpSpec.compute` runs on the argument values (tiles
are their arena views) and its result is copied into `t`'s view, converted to `t`'s dtype; a `None`
result, or an op without `compute` that has the "creation" trait (`tile.create`), writes nothing.
Assigning a tile Var to another tile Var copies bytes unless both are at the same address. Ops with
tensor results (`tile.store`) bind the Var to the returned DDR tensor, which they wrote in place.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch

from ...core.dtype import DataType
from ...core.enums import FunctionType, MemorySpace
from ...core.errors import InternalError, RuntimeSimError
from ...core.span import Span
from ...ir.expr import Call, Expr, GlobalVar, Var
from ...ir.function import Function
from ...ir.stmt import AssignStmt
from ...ir.types import MemRef, ScalarType, TensorType, TileType, static_shape
from .arena import CoreArena, tile_nbytes
from .exprs import Env, ExprFn, Extent
from .interp import FunctionCompiler, StmtFn

__all__ = ["KernelExecutor", "CUBE_SPACES", "KERNEL_TYPES"]

CUBE_SPACES = frozenset({MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc,
                         MemorySpace.Bias})
KERNEL_TYPES = frozenset({FunctionType.InCore, FunctionType.AIC, FunctionType.AIV})


class _Buffer(NamedTuple):
    var: Var
    memref: MemRef
    dtype: DataType
    shape: tuple[int, ...]


def _shape_str(shape: Any) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


class _KernelCompiler(FunctionCompiler):
    kind = "kernel"

    def __init__(self, func: Function) -> None:
        self.buffers: dict[int, _Buffer] = {}
        self.extents: dict[Var, Extent] = {}
        super().__init__(func)

    def on_define(self, var: Var, slot: int) -> None:
        t = var.type
        if not isinstance(t, TileType):
            return
        what = f"tile '{var.name}' of kernel '{self.func.name}'"
        mr = t.memref
        if mr is None:
            raise RuntimeSimError(f"{what} has no MemRef (memory planning did not run: InitMemRef "
                                  f"and AllocateMemoryAddr give tiles buffers)", var.span)
        if mr.memory_space is MemorySpace.DDR:
            raise RuntimeSimError(f"{what} has a MemRef in DDR; tiles live in on-chip memory", var.span)
        try:
            shape = static_shape(t)
        except InternalError:
            raise RuntimeSimError(f"{what} has a non-static shape", var.span) from None
        self.buffers[slot] = _Buffer(var, mr, t.dtype, shape)
        self.extents[var] = Extent(mr.memory_space, mr.addr, tile_nbytes(t.dtype, shape))

    def buffer_of(self, var: Var) -> Extent | None:
        return self.extents.get(var)

    def check_copy(self, dst: Var, src: Expr, span: Span) -> Extent:
        ext = super().check_copy(dst, src, span)
        d, s = dst.type, src.type
        assert isinstance(d, TileType) and isinstance(s, TileType)
        if d.dtype is not s.dtype or static_shape(d) != static_shape(s):
            raise RuntimeSimError(f"tile '{src.name}' ({s.dtype.name} {_shape_str(static_shape(s))}) "
                                  f"cannot be carried into '{dst.name}' ({d.dtype.name} "
                                  f"{_shape_str(static_shape(d))})", span)
        return ext

    def compile_assign(self, s: AssignStmt) -> StmtFn:
        if isinstance(s.var.type, TileType) and isinstance(s.value, Call) \
                and not isinstance(s.value.op, GlobalVar):
            return self._tile_op(s.var, s.value)
        return super().compile_assign(s)

    def _tile_op(self, var: Var, call: Call) -> StmtFn:
        spec = self.lookup_op(call)
        slot = self.define(var)
        if spec.compute is None and spec.has_trait("creation"):
            return lambda env: None
        compute = self.op_closure(call, spec)
        name, span = spec.name, call.span

        def run(env: Env) -> None:
            res = compute(env)
            if res is None:
                return
            dst = env[slot]
            if not isinstance(res, torch.Tensor):
                dst.fill_(res)
                return
            if res.shape != dst.shape and res.dim() != 0:
                raise RuntimeSimError(f"{name} produced shape {_shape_str(res.shape)} for tile "
                                      f"'{var.name}' of shape {_shape_str(dst.shape)}", span)
            if res._base is not None:   # a view, possibly of arena bytes: detach before copying
                res = res.clone()
            dst.copy_(res)
        return run

    def compile_call(self, call: Call) -> ExprFn:
        if isinstance(call.op, GlobalVar):
            raise RuntimeSimError(f"kernel '{self.func.name}' calls function '{call.op.name}'; kernels "
                                  f"cannot call functions (inline it first)", call.span)
        if isinstance(call.result_type, TileType):
            raise RuntimeSimError(f"the tile result of {call.op} must be assigned to a tile variable "
                                  f"with a MemRef", call.span)
        return self.op_closure(call, self.lookup_op(call))


class KernelExecutor:
    """One prepared InCore (or AIC/AIV) function.

    Attributes:
        func: the kernel's `ir.Function`.
        name: its name.
        core_type: "AIC" for `FunctionType.AIC` or a kernel with any tile in Mat/Left/Right/Acc/Bias,
            else "AIV".
        buffers: number of distinct tile Vars (each one arena view per core).

    Raises:
        RuntimeSimError: when the function is not runnable lowered IR (a tile without a MemRef, a
            tile parameter, an unknown op, ...).
    """

    def __init__(self, func: Function) -> None:
        c = _KernelCompiler(func)
        self.func, self.name = func, func.name
        self._c = c
        self._body = c.body
        self._buffers = tuple(c.buffers.items())
        self.buffers = len(self._buffers)
        self._templates: dict[CoreArena, list] = {}
        self._params = []
        for p, slot in zip(func.params, c.param_slots):
            t = p.type
            if isinstance(t, TensorType):
                static = tuple(getattr(d, "value", None) for d in t.shape)  # None: dynamic dim
                self._params.append((p.name, slot, True, static, t.dtype.to_torch(strict=False)))
            elif isinstance(t, ScalarType):
                self._params.append((p.name, slot, False, None, None))
            else:
                raise RuntimeSimError(f"parameter '{p.name}' of kernel '{func.name}' is a "
                                      f"{type(t).__name__}; kernel parameters are tensors or scalars",
                                      p.span)
        if func.func_type is FunctionType.AIC:
            self.core_type = "AIC"
        elif func.func_type is FunctionType.AIV:
            self.core_type = "AIV"
        else:
            cube = any(b.memref.memory_space in CUBE_SPACES for _, b in self._buffers)
            self.core_type = "AIC" if cube else "AIV"

    def __repr__(self) -> str:
        return f"KernelExecutor({self.name}, {self.core_type})"

    def template(self, arena: CoreArena) -> list:
        """The environment template for `arena`: tile slots hold their views (built once)."""
        tmpl = self._templates.get(arena)
        if tmpl is None:
            tmpl = [None] * self._c.num_slots
            for slot, b in self._buffers:
                tmpl[slot] = arena.view(b.memref, b.dtype, b.shape,
                                        f"tile '{b.var.name}' of kernel '{self.name}'", b.var.span)
            self._templates[arena] = tmpl
        return tmpl

    def run(self, args: tuple | list, arena: CoreArena) -> tuple | None:
        """Execute the kernel once on `arena` with `args` (tensors → torch tensors, scalars → numbers).

        Returns the values of the kernel's ReturnStmt (a tuple), or None if it has none.

        Raises:
            RuntimeSimError: for a wrong argument count, shape or dtype, or any failure inside.
        """
        if len(args) != len(self._params):
            raise RuntimeSimError(f"kernel '{self.name}' takes {len(self._params)} arguments, "
                                  f"got {len(args)}")
        env = self.template(arena).copy()
        for a, (pname, slot, is_tensor, static, tdt) in zip(args, self._params):
            if is_tensor:
                if not isinstance(a, torch.Tensor):
                    raise RuntimeSimError(f"kernel '{self.name}': argument '{pname}' must be a tensor, "
                                          f"got {type(a).__name__}")
                if a.dtype != tdt or len(a.shape) != len(static) or any(
                        s is not None and s != n for s, n in zip(static, a.shape)):
                    raise RuntimeSimError(
                        f"kernel '{self.name}': argument '{pname}' is {a.dtype} {_shape_str(a.shape)}, "
                        f"expected {tdt} {_shape_str('?' if s is None else s for s in static)}")
            env[slot] = a
        if self._c.dim_binders:
            self._c.bind_dims(env, args)
        self._body(env)
        return env[0]
