"""Kernel executor: runs one lowered InCore function (a task) on a simulated core.

A `KernelExecutor` is prepared once per kernel: each Call's OpSpec is resolved, every tile Var is
checked for a MemRef with a concrete address, and the body is compiled into closures
(`interp.FunctionCompiler`). Per core it builds, once, an environment template whose tile slots
hold typed views into that core's `CoreArena` at the planned addresses. Running a task copies the
template, binds the parameters and runs the closures.

Semantics of a tile assignment `t = op(args)`: `OpSpec.compute` runs on the argument values (tiles
are their arena views; a packed 4-bit tile's view holds its bytes, so ops get it unpacked and its
results are packed, see `pypto.core.packed`; DDR tensors of packed types are held unpacked, at
logical shape) and its result is copied into `t`'s view, converted to `t`'s dtype; a `None`
result, or an op without `compute` that has the "creation" trait (`tile.create`), writes nothing.
An op with `OpSpec.compute_into` gets `t`'s view first and writes it itself (returning None), or
returns a value that is copied as above.
A compute may return a view of its inputs (a DDR region, another tile): the copy reads it directly,
after first detaching it only when it views the destination's own memory.
Assigning a tile Var to another tile Var copies bytes unless both are at the same address. Ops with
tensor results (`tile.store`) bind the Var to the returned DDR tensor, which they wrote in place.

Cost: every op (and every carried-tile copy) is a *site* with a static `cost_model.OpCost` and the
buffers it reads and writes. A kernel without control flow runs each site once, in program order,
so its `TaskCost` is computed once; otherwise each site counts its executions (and records their
order) and the task's cost is formed after the run. The task's cycles are the critical path of the
executed ops over overlapping pipes (`pipes.PipeSchedule`), except for the kernels of a Group call,
which keep the serial sum their cross-core pipe clocks are paced by.

Sanitizing: built with a sanitizer holder, every op and copy also reports its tile reads and writes
to the current `Sanitizer` (see `sanitizer.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any, NamedTuple

import torch

from ...backend.soc import SoCModel
from ...core import packed
from ...core.dtype import DataType
from ...core.enums import KERNEL_TYPES, FunctionType, MemorySpace
from ...core.errors import InternalError, RuntimeSimError
from ...core.span import Span
from ...ir.expr import Call, Expr, GlobalVar, Var
from ...ir.function import Function
from ...ir.stmt import AssignStmt, ForStmt, IfStmt, ScopeStmt, SeqStmts, Stmt, WhileStmt
from ...ir.types import MemRef, ScalarType, TensorType, TileType, static_shape
from ...ops.effects import call_buffers
from ...ops.registry import OpSpec
from ...ops.site import NOT_CONST, KernelSite, static_dims
from .access import AccessSummary
from .arena import CoreArena, tile_nbytes
from .cost_model import OpCost, TaskCost, const, copy_cost, op_cost, task_cost
from .exprs import Env, ExprFn, Extent, call_closure
from .interp import FunctionCompiler, StmtFn
from .pipes import PipeOp, PipeSchedule

__all__ = ["KernelExecutor", "CUBE_SPACES", "KERNEL_TYPES"]

CUBE_SPACES = frozenset({MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc,
                         MemorySpace.Bias})
_BRANCHY = (ForStmt, WhileStmt, IfStmt)
_COST_CACHE_SIZE = 256   # distinct executed paths of one dynamic kernel whose cost is remembered


class _Buffer(NamedTuple):
    var: Var
    memref: MemRef
    dtype: DataType
    shape: tuple[int, ...]


def _shape_str(shape: Any) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _has_control_flow(s: Stmt) -> bool:
    if isinstance(s, _BRANCHY):
        return True
    if isinstance(s, SeqStmts):
        return any(_has_control_flow(x) for x in s.stmts)
    if isinstance(s, ScopeStmt):
        return _has_control_flow(s.body)
    return False


Touch = tuple[int, Extent, str]   # (env slot, bytes, variable name)


class _KernelCompiler(FunctionCompiler):
    kind = "kernel"

    def __init__(self, func: Function, soc: SoCModel, sanitizer: list | None, count: bool = False,
                 clock: bool = False, specialize: bool = True) -> None:
        self.buffers: dict[int, _Buffer] = {}
        self.specialize = specialize
        self.specialized_ops: list[str] = []
        self.extents: dict[Var, Extent] = {}
        self.soc = soc
        self.san_ref = sanitizer
        self.sites: list[OpCost] = []
        self.site_spans: list[Span | None] = []
        self.site_names: list[str] = []   # the op of each site (swimlane pipe tracks)
        self.counts: list[int] = []
        self.effects: list[tuple[tuple, tuple]] = []
        self.trace: list[int] = []
        self.overlap = not count   # a Group member keeps serial pipes (its clock paces the pipe rings)
        self.counting = count or clock or _has_control_flow(func.body)
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
        if t.dtype.value_torch() is None:   # HF4 / HF8 (SPEC §2.1): compiled for the chip, not simulated
            raise RuntimeSimError(f"{what} has type {t.dtype.name}, which the simulator cannot hold "
                                  f"(torch has no {t.dtype.name} dtype); the program compiles for the "
                                  f"hardware but cannot run on the simulator", var.span)
        try:
            shape = static_shape(t)
        except InternalError:
            raise RuntimeSimError(f"{what} has a non-static shape", var.span) from None
        self.buffers[slot] = _Buffer(var, mr, t.dtype, shape)
        self.extents[var] = Extent(mr.memory_space, mr.addr, tile_nbytes(t.dtype, shape))

    def buffer_of(self, var: Var) -> Extent | None:
        return self.extents.get(var)

    def compile_operand(self, e: Expr, spec: OpSpec) -> ExprFn:
        """A packed 4-bit tile (its view holds raw bytes) is passed to ops unpacked, except to the
        system ops (cross-core pipes), which move a tile's bytes as they are."""
        fn = self.compile_expr(e)
        t = e.type
        if isinstance(e, Var) and isinstance(t, TileType) and t.dtype.is_packed() \
                and not spec.has_trait("system"):
            dtype = t.dtype
            return lambda env: packed.decode(fn(env), dtype)
        return fn

    def check_copy(self, dst: Var, src: Expr, span: Span) -> Extent:
        ext = super().check_copy(dst, src, span)
        d, s = dst.type, src.type
        assert isinstance(d, TileType) and isinstance(s, TileType)
        if d.dtype is not s.dtype or static_shape(d) != static_shape(s):
            raise RuntimeSimError(f"tile '{src.name}' ({s.dtype.name} {_shape_str(static_shape(s))}) "
                                  f"cannot be carried into '{dst.name}' ({d.dtype.name} "
                                  f"{_shape_str(static_shape(d))})", span)
        return ext

    # ---- cost sites ----------------------------------------------------------------------------
    def site(self, cost: OpCost, span: Span | None = None, reads: tuple = (), writes: tuple = (),
             name: str = "tile copy") -> int:
        """A new cost site of op `name`; `reads` / `writes`: the buffers it reads and writes (`pipes.py`)."""
        self.sites.append(cost)
        self.site_spans.append(span)
        self.site_names.append(name)
        self.counts.append(0)
        self.effects.append((reads, writes))
        return len(self.sites) - 1

    def counted(self, run: Callable[[Env], Any], sites: list[int]) -> Callable[[Env], Any]:
        """`run`, counting one execution of each of `sites` (only in kernels with control flow),
        and recording the order of executions for the overlapped pipes (`pipes.PipeSchedule`)."""
        if not self.counting or not sites:
            return run
        counts = self.counts
        trace = self.trace if self.overlap else None
        if len(sites) == 1:
            k = sites[0]

            if trace is not None:
                append = trace.append

                def traced(env: Env) -> Any:
                    counts[k] += 1
                    append(k)
                    return run(env)
                return traced

            def one(env: Env) -> Any:
                counts[k] += 1
                return run(env)
            return one

        def many(env: Env) -> Any:
            for k in sites:
                counts[k] += 1
            if trace is not None:
                trace.extend(sites)
            return run(env)
        return many

    def buffers_of(self, spec: OpSpec, call: Call, dst: Var | None) -> tuple[tuple, tuple]:
        """(buffers read, buffers written) by `call` (`ops.effects.call_buffers`): on-chip extents of
        its tile operands and result, and its DDR tensor operands (one key per tensor Var)."""
        return call_buffers(spec, call, dst if dst is not None and dst in self.extents else None, self.buffer_key)

    def buffer_key(self, a: Var) -> Any:
        ext = self.extents.get(a)
        if ext is not None:
            return ext
        return ("ddr", a) if isinstance(a.type, TensorType) else None

    # ---- sanitizer hooks -------------------------------------------------------------------------
    def touch(self, e: Expr) -> Touch | None:
        ext = self.extents.get(e) if isinstance(e, Var) else None
        return None if ext is None else (self.slots[e], ext, e.name)  # type: ignore[union-attr]

    def sanitized(self, run: Callable[[Env], Any], op: str, span: Span, reads: list[Touch],
                  writes: list[Touch], aliases: list[tuple[int, int]], memory: bool) -> Callable[[Env], Any]:
        ref = self.san_ref
        if ref is None:
            return run

        def checked(env: Env) -> Any:
            san = ref[0]
            for slot, ext, name in reads:
                san.read(slot, ext, name, op, span)
            try:
                r = run(env)
            except RuntimeSimError as err:
                if memory and isinstance(err.__cause__, IndexError):
                    raise san.ddr_out_of_bounds(err, op, span) from None
                raise
            for dst, src in aliases:
                san.alias(dst, src)
            for slot, ext, name in writes:
                san.write(slot, ext, name, op, span)
            return r
        return checked

    def op_effects(self, spec: OpSpec, call: Call, dst: Var | None) -> tuple[list, list, list]:
        """(reads, writes, aliases) of on-chip tiles for the sanitizer."""
        n = len(call.args)
        reads = [t for i in spec.reads if i < n and (t := self.touch(call.args[i])) is not None]
        writes = [t for i in spec.writes if i < n and (t := self.touch(call.args[i])) is not None]
        aliases: list[tuple[int, int]] = []
        if dst is not None:
            d = self.touch(dst)
            src = next((t for a in call.args if (t := self.touch(a)) is not None), None)
            assert d is not None
            inside = src is not None and d[1].space is src[1].space and src[1].addr <= d[1].addr \
                and d[1].addr + d[1].nbytes <= src[1].addr + src[1].nbytes
            if spec.has_trait("view") and inside:
                aliases.append((d[0], src[0]))  # type: ignore[index]
            else:
                writes.append(d)
        return reads, writes, aliases

    def instrument_assign(self, run: Callable[[Env], None], copied: list[tuple[Var, Expr]],
                          aliased: list[tuple[Var, Expr]], span: Span) -> Callable[[Env], None]:
        sites = [self.site(copy_cost(self.extents[d].space, self.extents[d].nbytes), None,
                           (self.extents[s],) if isinstance(s, Var) and s in self.extents else (),
                           (self.extents[d],)) for d, s in copied]
        run = self.counted(run, sites)
        if self.san_ref is None or not (copied or aliased):
            return run
        reads = [t for _, s in copied if (t := self.touch(s)) is not None]
        writes = [t for d, _ in copied if (t := self.touch(d)) is not None]
        aliases = [(self.slots[d], self.slots[s]) for d, s in aliased if isinstance(s, Var)]
        return self.sanitized(run, "tile copy (carried value)", span, reads, writes, aliases, False)

    # ---- ops -------------------------------------------------------------------------------------
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
        k = self.site(op_cost(spec, call, self.soc), call.span, *self.buffers_of(spec, call, var), name=spec.name)
        dtype = var.type.dtype  # type: ignore[union-attr]
        pack = dtype.is_packed()   # the view holds bytes: encode the result (pypto.core.packed)
        compute = None if pack else self.specialized(call, spec, var, slot)
        if compute is None:
            into = spec.compute_into is not None and not pack
            compute = self.op_closure(call, spec, into_slot=slot if into else None)
        static = static_shape(var.type)
        raw_shape = dtype.host_shape(static) if pack else None
        name, span = spec.name, call.span
        may_alias = self._may_alias(var, call)

        def finish(env: Env, res: Any) -> None:
            """Write a computed value `res` into the result tile."""
            dst = env[slot]
            if pack and not (isinstance(res, torch.Tensor) and res.dtype is torch.uint8
                             and tuple(res.shape) == raw_shape):   # else bytes (a pipe's pop)
                res = torch.as_tensor(res)
                if res.dim() and tuple(res.shape) != static:
                    raise RuntimeSimError(f"{name} produced shape {_shape_str(res.shape)} for tile "
                                          f"'{var.name}' of shape {_shape_str(static)}", span)
                res = packed.encode(res.expand(static), dtype)
            elif not isinstance(res, torch.Tensor):
                dst.fill_(res)
                return
            if res.shape != dst.shape and res.dim() != 0:
                raise RuntimeSimError(f"{name} produced shape {_shape_str(res.shape)} for tile "
                                      f"'{var.name}' of shape {_shape_str(dst.shape)}", span)
            if may_alias and res.untyped_storage().data_ptr() == dst.untyped_storage().data_ptr():
                res = res.clone()  # a view of the same arena (e.g. transpose_view in place): copy first
            dst.copy_(res)

        # the counting of `counted` is done inline here: one call less per op of a dynamic kernel
        counts, trace = self.counts, (self.trace if self.overlap else None)
        run: Callable[[Env], None]
        if self.counting and trace is not None:
            append = trace.append

            def run(env: Env) -> None:
                counts[k] += 1
                append(k)
                res = compute(env)
                if res is not None:
                    finish(env, res)
        elif self.counting:
            def run(env: Env) -> None:
                counts[k] += 1
                res = compute(env)
                if res is not None:
                    finish(env, res)
        else:
            def run(env: Env) -> None:
                res = compute(env)
                if res is not None:
                    finish(env, res)
        if self.san_ref is None:
            return run
        reads, writes, aliases = self.op_effects(spec, call, var)
        return self.sanitized(run, name, span, reads, writes, aliases, spec.has_trait("memory"))

    def specialized(self, call: Call, spec: OpSpec, dst: Var | None, slot: int | None,
                    form: Callable[[KernelSite], Any] | None = None) -> ExprFn | None:
        """The closure of `call` through `spec.specialize` (`ops.site`) — or through `form` when
        given (an `OpSpec.batch`) — or None when the op has none, a valid shape it needs is only
        known at run time, or it declines the site."""
        if form is None:
            form = spec.specialize if self.specialize else None
        if form is None or isinstance(call.result_type, ScalarType):
            return None
        attrs = dict(call.kwargs)
        valid = self._valid_fns(call, spec)
        if valid is not None:
            if any(v is not None and not isinstance(v, tuple) for v in valid):
                return None
            attrs["valid"] = tuple(valid)
        mine = self.extents[dst] if dst is not None else None
        dst_type = dst.type if dst is not None else None
        consts, same, apart = [], [], []
        for a in call.args:
            ok, v = self.const_value(a)
            consts.append(v if ok else NOT_CONST)
            t = a.type
            if mine is None or not isinstance(t, TileType):
                same.append(False)
                apart.append(True)
                continue
            ext = self.extents.get(a) if isinstance(a, Var) else None
            same.append(ext is not None and ext.same_place(mine) and ext.nbytes == mine.nbytes
                        and t.dtype is dst_type.dtype and static_dims(t) == static_dims(dst_type))  # type: ignore[union-attr]
            apart.append(ext is not None and not ext.overlaps(mine))
        site = KernelSite(tuple(consts), tuple(a.type for a in call.args), attrs,
                          dst_type if isinstance(dst_type, TileType) else None, tuple(same), tuple(apart))
        fn = form(site)
        if fn is None:
            return None
        self.specialized_ops.append(spec.name)
        arg_fns = [self.compile_operand(a, spec) for a in call.args]
        if dst is not None:
            arg_fns.insert(0, itemgetter(slot))
        return call_closure(fn, arg_fns, f"{spec.name} failed in {self.kind} '{self.func.name}'", call.span)

    def _may_alias(self, dst: Var, call: Call) -> bool:
        """Whether the op's result may be a view of memory `dst` occupies: only when one of its
        tile operands overlaps `dst`'s buffer (a result viewing DDR or another buffer cannot)."""
        mine = self.extents[dst]
        for a in call.args:
            if isinstance(a.type, TileType):
                ext = self.extents.get(a) if isinstance(a, Var) else None
                if ext is None or ext.overlaps(mine):
                    return True
        return False

    def compile_call(self, call: Call) -> ExprFn:
        if isinstance(call.op, GlobalVar):
            raise RuntimeSimError(f"kernel '{self.func.name}' calls function '{call.op.name}'; kernels "
                                  f"cannot call functions (inline it first)", call.span)
        if isinstance(call.result_type, TileType):
            raise RuntimeSimError(f"the tile result of {call.op} must be assigned to a tile variable "
                                  f"with a MemRef", call.span)
        spec = self.lookup_op(call)
        k = self.site(op_cost(spec, call, self.soc), call.span, *self.buffers_of(spec, call, None), name=spec.name)
        run = self.counted(self.specialized(call, spec, None, None) or self.op_closure(call, spec), [k])
        if self.san_ref is None:
            return run
        reads, writes, aliases = self.op_effects(spec, call, None)
        return self.sanitized(run, spec.name, call.span, reads, writes, aliases, spec.has_trait("memory"))


class KernelExecutor:
    """One prepared InCore (or AIC/AIV) function.

    Args:
        func: the kernel.
        soc: the chip model (costs use its DDR access granularity).
        sanitizer: None, or a one-element list holding the current `Sanitizer` (read at run time).
        count: count executed ops even without control flow, so `cycles_so_far()` can be read
            while the kernel runs (the kernels of a Group call, whose pipes need their clocks).
        clock: count executed ops (so `cycles_so_far()` is exact) but keep the overlapping-pipe
            cost: a rank of a distributed run reads the clock when a kernel talks to a peer.
        specialize: let ops specialise their semantics per call site (`OpSpec.specialize`); False
            runs every op through its general `compute` (same numbers, slower: for tests).

    Attributes:
        func: the kernel's `ir.Function`. name: its name.
        core_type: "AIC" for `FunctionType.AIC` or a kernel with any tile in Mat/Left/Right/Acc/Bias,
            else "AIV".
        buffers: number of distinct tile Vars (each one arena view per core).
        sites: static cost of every op / copy site; site_spans: the source location of each (None
            for carried-value copies). dynamic: True when the kernel has control flow.
        specialized_ops: the op names of the call sites that run a specialised form, in program order.
        access: the `AccessSummary` of its tensor parameters (which boxes it loads and stores).

    Raises:
        RuntimeSimError: when the function is not runnable lowered IR (a tile without a MemRef, a
            tile parameter, an unknown op, ...).
    """

    compiler_class: type = _KernelCompiler   # turns the body into closures (a subclass may change how)

    def __init__(self, func: Function, soc: SoCModel, sanitizer: list | None = None, count: bool = False,
                 clock: bool = False, specialize: bool = True) -> None:
        c = self.compiler_class(func, soc, sanitizer, count, clock, specialize)
        self.soc = soc
        self.specialized_ops = tuple(c.specialized_ops)
        self.func, self.name = func, func.name
        self._c = c
        self._body = c.body
        self._buffers = tuple(c.buffers.items())
        self.buffers = len(self._buffers)
        self.sites = tuple(c.sites)
        self.site_spans = tuple(c.site_spans)
        self.site_names = tuple(c.site_names)
        self.dynamic = c.counting
        self._counts, self._zeros = c.counts, [0] * len(c.counts)
        self._trace = c.trace
        self._pipes = PipeSchedule(self.sites, c.effects) if c.overlap else None
        self._static_cost: TaskCost | None = None if self.dynamic else self._cost(None, range(len(self.sites)))
        self._templates: dict[CoreArena, list] = {}
        self._cost_cache: dict[tuple[int, ...], TaskCost] = {}
        self.access = AccessSummary(func)
        self._params = []
        for p, slot in zip(func.params, c.param_slots):
            t = p.type
            if isinstance(t, TensorType):
                static = tuple(getattr(d, "value", None) for d in t.shape)  # None: dynamic dim
                self._params.append((p.name, slot, True, static, t.dtype.value_torch(),
                                     None if None in static else torch.Size(static)))
            elif isinstance(t, ScalarType):
                self._params.append((p.name, slot, False, None, None, None))
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

    @property
    def static_cost(self) -> TaskCost | None:
        """The cost of every run of a kernel without control flow (None: it has control flow, so
        the cost follows the executed ops)."""
        return self._static_cost

    def cycles_so_far(self) -> int:
        """Cycles of the run in progress up to now: launch plus the ops executed so far (exact only
        for an executor built with `count=True` or with control flow)."""
        total = int(const("task_launch"))
        for c, n in zip(self.sites, self._counts):
            if n:
                total += n * c.cycles
        return total

    def current_site(self) -> int | None:
        """The index (into `sites` / `site_spans`) of the op executing now; None unless the executor
        records the order of its ops (built with `clock=True` or with control flow, not a Group
        member). `cycles_so_far()` already counts that op."""
        return self._trace[-1] if self._trace else None

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

    def run(self, args: tuple | list, arena: CoreArena, cost: bool = True) -> TaskCost | None:
        """Execute the kernel once on `arena` with `args` (tensors → torch tensors, scalars → numbers).

        Returns the task's cost (cycles including launch, per pipe, bytes per memory path); with
        `cost=False` a kernel with control flow skips forming it and may return None (a replayed
        run, `replay.py`, knows its costs).

        Raises:
            RuntimeSimError: for a wrong argument count, shape or dtype, or any failure inside.
        """
        return self._exec(self.bind(args, arena), cost)

    def bind(self, args: tuple | list, arena: CoreArena) -> list:
        """The environment of a run on `arena` with `args`: the arena's template (`template`) with
        the parameters bound. `run_bound` runs the kernel on (a copy of) it, so a caller that runs
        the kernel again with the same argument objects on the same arena (a replayed run,
        `replay.py`) binds once.

        Raises:
            RuntimeSimError: for a wrong argument count, shape or dtype.
        """
        if len(args) != len(self._params):
            raise RuntimeSimError(f"kernel '{self.name}' takes {len(self._params)} arguments, "
                                  f"got {len(args)}")
        env = self.template(arena).copy()
        for a, (pname, slot, is_tensor, static, tdt, size) in zip(args, self._params):
            if is_tensor:
                if size is not None and a.__class__ is torch.Tensor and a.dtype == tdt and a.shape == size:
                    env[slot] = a    # the common case: a tensor of the declared static type
                    continue
                if not isinstance(a, torch.Tensor):
                    raise RuntimeSimError(f"kernel '{self.name}': argument '{pname}' must be a tensor, "
                                          f"got {type(a).__name__}")
                shape = a.shape
                if a.dtype != tdt or len(shape) != len(static) or any(
                        s is not None and s != n for s, n in zip(static, shape)):
                    raise RuntimeSimError(
                        f"kernel '{self.name}': argument '{pname}' is {a.dtype} {_shape_str(shape)}, "
                        f"expected {tdt} {_shape_str('?' if s is None else s for s in static)}")
            env[slot] = a
        if self._c.dim_binders:
            self._c.bind_dims(env, args)
        return env

    def run_bound(self, bound: list, cost: bool = True) -> TaskCost | None:
        """`run` on an environment from `bind` (which the run leaves unchanged: it works on a copy).

        Raises:
            RuntimeSimError: for any failure inside the kernel.
        """
        return self._exec(bound.copy(), cost)

    def _exec(self, env: list, cost: bool) -> TaskCost | None:
        if self._static_cost is not None:
            self._body(env)
            return self._static_cost
        self._counts[:] = self._zeros
        self._trace.clear()
        self._body(env)
        # the cost is a function of the executed sites alone: of the trace when it is recorded (it
        # determines the counts), else of the counts; most kernels repeat one path, so it is cached
        if not cost:
            return None
        key = tuple(self._trace) if self._pipes is not None else tuple(self._counts)
        tc = self._cost_cache.get(key)
        if tc is None:
            if len(self._cost_cache) >= _COST_CACHE_SIZE:
                self._cost_cache.clear()
            tc = self._cost_cache[key] = self._cost(self._counts, self._trace)
        return tc

    def pipe_timeline(self) -> list[PipeOp] | None:
        """The ops of the last run placed on the core's pipes (`PipeSchedule.timeline`: site, pipe,
        start and end cycles after the launch); None for a Group member, whose pipes run serially."""
        if self._pipes is None:
            return None
        return self._pipes.timeline(range(len(self.sites)) if self._static_cost is not None else self._trace)

    def _cost(self, counts: list[int] | None, order: Any) -> TaskCost:
        """The task's cost: per-pipe and per-path totals of the executed sites; its cycles are the
        launch plus the critical path of the ops in `order` on overlapping pipes (`pipes.py`), or
        the serial sum for a Group member."""
        tc = task_cost(self.sites, counts)
        if self._pipes is None:
            return tc
        return tc._replace(cycles=int(const("task_launch")) + self._pipes.critical_path(order))
