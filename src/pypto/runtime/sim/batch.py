"""Independent tasks of one kernel run together: one torch call per op for all of them.

Issue 14 item 5 asks the simulator to "run tasks of one kernel together where their tile ops can be
batched into one torch call — with numbers bit-identical to one-at-a-time execution". A replayed
run (`replay.py`) knows its whole task order in advance; a *batch* is a stretch of consecutive tasks
of one kernel that

- depend on none of each other (no dependency between them: with derived dependencies that means
  no two of them touch overlapping DDR bytes with one writing), were not submitted in a MANUAL
  scope or SPMD launch, and do not read their block index;
- run on distinct cores of one type whose indices form an arithmetic progression (`range`);
- get the same scalar arguments and tensors of the same shapes (so every scalar the kernel
  computes, its loop counts and branches are the same for all of them).

Each task of a batch is a *lane*. The memories of all cores of a type live in one `ChipMemory`
(`arena.py`), so a tile at its planned address on the batch's cores is one strided view
[lanes, *tile shape]: running an op for all lanes writes exactly the bytes one-at-a-time runs
write, where they write them — nothing is gathered or copied back.

`BatchKernel` compiles a kernel body a second time (`_BatchCompiler`) into closures over a *batch
environment* whose tile slots hold those lane views, whose tensor slots hold `Lanes` (the tensor of
each lane) and whose scalar slots are shared:

- a tile op with an `OpSpec.batch` form at its site (elementwise ops, casts, moves, matmuls) runs
  once on the lane views;
- any other op touching tiles or tensors (loads, stores, ops without a batch form) runs *lane by
  lane*: the statement's ordinary closure (the specialised one-task closure) on each lane's own
  environment — the environment `KernelExecutor.bind` gives that task — after copying into it the
  scalars the statement reads;
- scalar statements, control flow and carried-tile copies run once (copies move all lanes).

An op's batch form must give in each lane the bits its one-task form gives: the elementwise forms
compute each element alone; the matmul form checks its first batch of each lane count against the
one-task products and falls back to lane-by-lane products if a BLAS ever rounds a batched product
differently. `tests/runtime/test_rt_batch.py` compares batched and one-at-a-time runs bit for bit
(outputs and every core's memories). `PYPTO_SIM_BATCH=0` turns batching off.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import torch

from ...backend.soc import SoCModel
from ...core.errors import RuntimeSimError
from ...ir.expr import Call, Expr, GlobalVar, Var
from ...ir.function import Function
from ...ir.stmt import AssignStmt, EvalStmt, Stmt
from ...ir.types import ScalarType, TensorType, TileType
from ...ir.visitor import IRVisitor
from .access import StaticBoxes
from .arena import ChipMemory
from .exprs import Env, ExprFn
from .interp import StmtFn
from .kernel import KernelExecutor, _KernelCompiler
from .run_memo import RunMemo, ViewMemo

__all__ = ["BatchKernel", "Lanes", "NotBatchable", "batch_kernel", "batching_enabled", "lane_scalars", "lane_tainted",
           "ENV_VAR"]

ENV_VAR = "PYPTO_SIM_BATCH"
BYTES_VAR = "PYPTO_SIM_BATCH_BYTES"
DEFAULT_BUDGET = 1 << 20
_OFF = frozenset({"0", "false", "off", "no"})


def batching_enabled() -> bool:
    """Whether replayed runs may run independent tasks of one kernel together (`PYPTO_SIM_BATCH`
    not 0)."""
    return os.environ.get(ENV_VAR, "1").strip().lower() not in _OFF


def lane_budget() -> int:
    """Bytes of on-chip memory a batch may span (`PYPTO_SIM_BATCH_BYTES`, default 1 MiB): a batch
    of more lanes than fit is split, so that the tiles one op touches for all lanes stay in the
    host CPU's cache (a K-loop re-reads its accumulator tiles every step)."""
    try:
        return max(1, int(os.environ.get(BYTES_VAR, DEFAULT_BUDGET)))
    except ValueError:
        return DEFAULT_BUDGET


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The byte ranges `spans` merged where they overlap or touch, in address order."""
    out: list[list[int]] = []
    for lo, hi in sorted(spans):
        if out and lo <= out[-1][1]:
            out[-1][1] = max(out[-1][1], hi)
        else:
            out.append([lo, hi])
    return [(lo, hi) for lo, hi in out]


class Lanes(tuple):
    """The value of one tensor Var in a batch environment: lane k's tensor at index k.

    `pieces` (computed on first use) splits the lanes into runs that stack — views of one buffer
    with one shape, dtype and strides whose storage offsets are a constant step >= 0 apart
    (`ops.site.pieces`, what batch forms read): lanes of tasks (i, 6), (i, 7), (i + 1, 0), ...
    stack in two runs. `stacked` is the one view [lanes, *shape] when all lanes form one run,
    else None."""

    @property
    def stacked(self) -> Any:
        p = self.pieces
        return p[0][2] if p is not None and len(p) == 1 else None

    @property
    def pieces(self) -> Any:
        """The lanes as runs that stack (`ops.site.pieces`): [(first lane, end lane, stacked
        view)] covering every lane in order, each run as long as possible; None when a lane is
        not a plain tensor."""
        try:
            return self.__dict__["_pieces"]
        except KeyError:
            v = self.__dict__["_pieces"] = _pieces(self)
            return v


def _pieces(ts: Sequence[Any]) -> list[tuple[int, int, Any]] | None:
    if any(type(t) is not torch.Tensor for t in ts):
        return None
    out: list[tuple[int, int, Any]] = []
    k, n = 0, len(ts)
    while k < n:
        t0 = ts[k]
        shape, stride, dtype, size = t0.shape, t0.stride(), t0.dtype, t0.element_size()
        first = t0.storage_offset()
        base = t0.data_ptr() - first * size     # the storage's address (cheaper than untyped_storage())
        end, step = k + 1, None
        while end < n:
            t = ts[end]
            if t.dtype != dtype or t.shape != shape or t.stride() != stride:
                break
            off = t.storage_offset()
            if t.data_ptr() - off * size != base:
                break
            d = off - first
            if step is None:
                if d < 0:
                    break
                step = d
            elif d != step * (end - k):
                break
            end += 1
        out.append((k, end, torch.as_strided(t0, (end - k, *shape), (step or 0, *stride), first)))
        k = end
    return out


class NotBatchable(Exception):
    """The kernel cannot run as a batch (the message says why)."""


def _memory_call(e: Expr) -> bool:
    """A call of an op that touches tiles or tensors (its result or an argument is one)."""
    if not isinstance(e, Call) or isinstance(e.op, GlobalVar):
        return False
    if isinstance(e.result_type, (TileType, TensorType)):
        return True
    return any(isinstance(a.type, (TileType, TensorType)) for a in e.args)


class _ScalarVars(IRVisitor):
    def __init__(self) -> None:
        self.found: list[Var] = []

    def visit_Var(self, e: Var) -> None:
        if isinstance(e.type, ScalarType):
            self.found.append(e)


class _Refs(IRVisitor):
    """Every Var an expression reads, with the Vars in the shapes and valid shapes of the tiles and
    tensors it reads (an op reads those too: `valid=`, dynamic dimensions)."""

    def __init__(self) -> None:
        self.found: set[Var] = set()

    def visit_Var(self, e: Var) -> None:
        if e not in self.found:
            self.found.add(e)
            if isinstance(e.type, (TileType, TensorType)):
                self.visit_type(e.type)

    visit_IterArg = visit_Var


def _refs(*exprs: Expr | None) -> set[Var]:
    v = _Refs()
    for e in exprs:
        if e is not None:
            v.visit_expr(e)
    return v.found


class _Taint(IRVisitor):
    """The scalars computed from lane scalars (`lane_tainted`); NotBatchable when one steers
    control flow, is carried by it, or is returned. With `path_only`, only what can change the ops
    executed counts (`lane_tainted(..., path_only=True)`, `deferred._off_path`): a loop's bounds and
    carried scalars, a branch's condition — not the valid shapes of carried tiles, nor a returned
    value."""

    def __init__(self, tainted: set[Var], path_only: bool = False) -> None:
        self.tainted = tainted
        self.changed = False
        self.path_only = path_only

    def _hit(self, *exprs: Expr | None) -> bool:
        return bool(_refs(*exprs) & self.tainted)

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        if isinstance(s.var.type, ScalarType) and s.var not in self.tainted and self._hit(s.value):
            self.tainted.add(s.var)
            self.changed = True

    def _carried(self, s: Any) -> list[Expr]:
        return [ia.init for ia in s.iter_args
                if not self.path_only or isinstance(ia.init.type, ScalarType)]

    def visit_ForStmt(self, s: Any) -> None:
        if self._hit(s.start, s.stop, s.step, *self._carried(s)):
            raise NotBatchable("a lane scalar sets a loop's bounds or carried values")
        self.visit_stmt(s.body)

    def visit_WhileStmt(self, s: Any) -> None:
        if self._hit(s.cond, *self._carried(s)):
            raise NotBatchable("a lane scalar steers a while loop")
        self.visit_stmt(s.body)

    def visit_IfStmt(self, s: Any) -> None:
        if self._hit(s.cond):
            raise NotBatchable("a lane scalar steers an if")
        self.visit_stmt(s.then_body)
        if s.else_body is not None:
            self.visit_stmt(s.else_body)

    def visit_YieldStmt(self, s: Any) -> None:
        if any(isinstance(v.type, ScalarType) and self._hit(v) for v in s.values):
            raise NotBatchable("a lane scalar is carried by control flow")

    def visit_ReturnStmt(self, s: Any) -> None:
        if not self.path_only and self._hit(*s.values):
            raise NotBatchable("a lane scalar is returned")


def lane_tainted(func: Function, lane_params: frozenset[int], path_only: bool = False) -> set[Var]:
    """The scalar parameters `lane_params` (indices) and every scalar computed from them: values
    that may differ between the lanes of a batch, so only lane-by-lane statements may read them.

    Raises:
        NotBatchable: one of them steers control flow, is carried by it or returned (with
            `path_only`: sets a loop's bounds or carried scalars, or a branch's condition — what
            can change which ops the kernel executes)."""
    tainted = {func.params[i] for i in lane_params}
    if not tainted:
        return tainted
    t = _Taint(tainted, path_only)
    t.changed = True
    while t.changed:
        t.changed = False
        t.visit_stmt(func.body)
    return tainted


class _BatchCompiler(_KernelCompiler):
    """`_KernelCompiler` building the batch closures (module docstring). `lanes[0]` holds the lane
    environments of the batch running now."""

    lane_params: frozenset[int] = frozenset()   # set by BatchKernel before compiling

    def __init__(self, func: Function, soc: SoCModel, sanitizer: list | None, count: bool = False,
                 clock: bool = False, specialize: bool = True) -> None:
        self.lanes: list[Any] = [()]
        self.may_fail = False   # a statement may raise at run time (module docstring: errors)
        self.may_fail_on_data = False   # ... for a reason other than a box out of bounds
        self._boxes: StaticBoxes | None = None   # built for the first load / store at run-time offsets
        self._in_lane = 0
        self.batched_ops: list[str] = []
        self.lane_ops: list[str] = []
        self.tainted = lane_tainted(func, self.lane_params)
        super().__init__(func, soc, None, False, False, specialize)

    def _lane_only(self, *exprs: Expr | None) -> bool:
        """Whether a statement over `exprs` reads a lane scalar (it then runs lane by lane)."""
        return bool(self.tainted) and bool(_refs(*exprs) & self.tainted)

    def compile_stmt(self, s: Stmt) -> StmtFn:
        if not self._in_lane and isinstance(s, EvalStmt) and (_memory_call(s.expr) or self._lane_only(s.expr)):
            return self._lane(lambda: _KernelCompiler.compile_stmt(self, s), s.expr, None)
        return super().compile_stmt(s)

    def compile_assign(self, s: AssignStmt) -> StmtFn:
        v = s.value
        if not self._in_lane and self._lane_only(v, s.var):
            return self._lane(lambda: _KernelCompiler.compile_assign(self, s), v, s.var)
        if self._in_lane or not _memory_call(v):
            if not self._in_lane and isinstance(s.var.type, TensorType):   # `d = c`: in every lane too
                return self._lane(lambda: _KernelCompiler.compile_assign(self, s), v, s.var)
            return super().compile_assign(s)
        if isinstance(s.var.type, TileType):
            run = self._batched(s.var, v)
            if run is not None:
                return run
        elif isinstance(s.var.type, TensorType):
            run = self._batched_tensor(s.var, v)
            if run is not None:
                return run
        return self._lane(lambda: _KernelCompiler.compile_assign(self, s), v, s.var)

    def compile_parallel_assign(self, dsts: Sequence[Var], srcs: Sequence[Expr], span: Any) -> Callable[[Env], None]:
        """A carried assignment (loop entry / yield / exit, if results) runs once on the batch
        environment — tile copies move all lanes, tensor Vars rebind to their `Lanes` — and the
        tensor Vars it rebinds are rebound in every lane's environment too, from the lane's own
        values (what a lane op reads)."""
        run = super().compile_parallel_assign(dsts, srcs, span)
        if self._in_lane:
            return run
        pairs = [(self.slots[d], self.compile_expr(x)) for d, x in zip(dsts, srcs)
                 if isinstance(d.type, TensorType)]
        if not pairs:
            return run
        holder = self.lanes

        def both(env: Env) -> None:
            for lane in holder[0]:
                vals = [f(lane) for _, f in pairs]
                for (slot, _), v in zip(pairs, vals):
                    lane[slot] = v
            run(env)
        return both

    def compile_call(self, call: Call) -> ExprFn:
        if not self._in_lane and _memory_call(call):
            raise NotBatchable(f"{call.op} is called inside an expression")
        return super().compile_call(call)

    def _batched(self, var: Var, call: Call) -> StmtFn | None:
        """The statement `var = call` as one call for all lanes, or None (no batch form here)."""
        spec = self.lookup_op(call)
        if spec.batch is None or var.type.dtype.is_packed():  # type: ignore[union-attr]
            return None
        slot = self.define(var)
        fn = self.specialized(call, spec, var, slot, form=spec.batch)
        if fn is None:
            return None
        self.batched_ops.append(spec.name)
        self._note_box(spec, call)

        def run(env: Env) -> None:
            fn(env)
        return run

    def _batched_tensor(self, var: Var, call: Call) -> StmtFn | None:
        """The statement `var = call` with a tensor result (`tile.store`) as one call for all lanes
        returning the result's `Lanes`, or None (no batch form here)."""
        spec = self.lookup_op(call)
        if spec.batch is None:
            return None
        fn = self.specialized(call, spec, None, None, form=spec.batch)
        if fn is None:
            return None
        self.batched_ops.append(spec.name)
        self._note_box(spec, call)
        slot = self.define(var)
        holder = self.lanes

        def run(env: Env) -> None:
            res = env[slot] = fn(env)
            for lane, t in zip(holder[0], res):   # each lane's own tensor too (what lane ops read)
                lane[slot] = t
        return run

    def _note_box(self, spec: Any, call: Call) -> None:
        """A batched op that moves a box of a DDR tensor (`OpSpec.ddr_region`: load, store) may
        raise (the box out of bounds) unless its tensor has a static shape and its offsets are
        constants, or intervals proven inside that shape for every task (`access.StaticBoxes`: a
        K-loop's `[0, k]`); no other batch form raises."""
        if spec.ddr_region is None:
            return
        tensor, offsets, _ = spec.ddr_region
        shape = getattr(call.args[tensor].type, "shape", ())
        if not all(isinstance(getattr(d, "value", None), int) for d in shape):
            self.may_fail = True
        elif _refs(call.args[offsets]):
            if self._boxes is None:
                self._boxes = StaticBoxes(self.func)
            if not self._boxes.inside(call):
                self.may_fail = True

    def _lane(self, make: Callable[[], StmtFn], expr: Expr, var: Var | None) -> StmtFn:
        """The statement built by `make` (an ordinary one-task closure) run on each lane's
        environment, after copying in the scalars `expr` reads; a tensor or scalar it defines is
        then gathered into the batch environment (`Lanes` / the first lane's scalar)."""
        self._in_lane += 1
        try:
            single = make()
        finally:
            self._in_lane -= 1
        self.may_fail = self.may_fail_on_data = True    # any op of a one-task closure may raise
        if isinstance(expr, Call) and not isinstance(expr.op, GlobalVar):
            spec = self.lookup_op(expr)
            if var is not None and isinstance(var.type, ScalarType) and spec.lowering != "shape" \
                    and _memory_call(expr):
                raise NotBatchable(f"scalar '{var.name}' is computed from tile or tensor data ({spec.name})")
            self.lane_ops.append(spec.name)
        v = _ScalarVars()
        v.visit_expr(expr)
        reads = tuple(sorted({self.slots[x] for x in v.found if x in self.slots and x not in self.tainted}))
        holder = self.lanes
        out = self.slots[var] if var is not None and not isinstance(var.type, TileType) \
            and var not in self.tainted else None   # a lane scalar stays in the lanes
        gather = out is not None and not isinstance(var.type, ScalarType)  # type: ignore[union-attr]

        def run(env: Env) -> None:
            lanes = holder[0]
            for k, lane in enumerate(lanes):
                for s in reads:
                    lane[s] = env[s]
                try:
                    single(lane)
                except RuntimeSimError as err:
                    err.lane = k  # type: ignore[attr-defined]   # which task failed (replay.py)
                    raise
            if out is not None:
                env[out] = Lanes([lane[out] for lane in lanes]) if gather else lanes[0][out]
        return run


class BatchKernel(KernelExecutor):
    """A kernel compiled to run a batch of tasks on the lanes of a `ChipMemory` (module docstring).

    Args:
        func, soc: as for `KernelExecutor`.

    Attributes:
        batched_ops / lane_ops: op names of the sites run once for all lanes / lane by lane.
        may_fail: whether a statement may raise at run time (a lane-by-lane statement, a load or
            store whose box is only known at run time): a batch then saves what it will write
            in DDR first (`replay.run_batch`), so that a failure can be undone.
        may_fail_on_data: whether a statement may raise for a reason other than a box out of
            bounds (a lane-by-lane statement): what a replay, whose scalars and shapes — so boxes —
            are those of the run it recorded, must still guard against.

    Raises:
        NotBatchable: a kernel whose calls the batch closures cannot express (an op touching tiles
            or tensors inside an expression, a packed 4-bit tile).
        RuntimeSimError: as `KernelExecutor`.
    """

    compiler_class = _BatchCompiler

    def __init__(self, func: Function, soc: SoCModel, lane_params: frozenset[int] = frozenset()) -> None:
        self.lane_params = lane_params
        self.compiler_class = type("_LaneCompiler", (_BatchCompiler,), {"lane_params": lane_params}) \
            if lane_params else _BatchCompiler
        super().__init__(func, soc)
        if any(b.dtype.is_packed() for _, b in self._buffers):
            raise NotBatchable("a packed 4-bit tile")
        self.batched_ops = tuple(self._c.batched_ops)
        self.lane_ops = tuple(self._c.lane_ops)
        self.may_fail, self.may_fail_on_data = self._c.may_fail, self._c.may_fail_on_data
        spans: dict[Any, list[tuple[int, int]]] = {}
        for ext in self._c.extents.values():
            spans.setdefault(ext.space, []).append((ext.addr, ext.addr + ext.nbytes))
        self._spans = {space: _merged(v) for space, v in spans.items()}
        self.lane_bytes = sum(hi - lo for v in self._spans.values() for lo, hi in v)   # on-chip bytes one lane touches
        self._lane_templates: dict[tuple[int, int, int, int], tuple[ChipMemory, list]] = {}
        self._stacks = RunMemo()     # the lane runs of tensor arguments (`batch_env`)

    def save_lanes(self, chip: ChipMemory, cores: range) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(view, copy) of the on-chip bytes this kernel's tiles occupy on each core of `cores`:
        a batch that may fail saves them first, and a failed batch puts them back before its tasks
        run again one at a time (`replay.run_batch`), so the cores of tasks a one-at-a-time run
        never reaches keep what they held."""
        out = []
        for space, spans in self._spans.items():
            rows = chip.rows(space)[cores.start:cores.stop:cores.step]
            for lo, hi in spans:
                v = rows[:, lo:hi]
                out.append((v, v.clone()))
        return out

    def lanes_for(self, threads: int, cores: int = 0) -> int:
        """The most lanes a batch of this kernel takes when its large ops run on `threads` host
        threads (`ops/threads.py`): `lane_budget()` bytes per thread, a multiple of `threads`
        (so that torch splits a batched op evenly over them), at least 2. With `cores` (the
        chip's cores of the kernel's type), the count that splits a wave of tasks over all of
        them into batches of equal size with no more batches: 24 cube cores and a budget of 10
        lanes give 8 (batches 8, 8, 8 rather than 10, 10, 4; docs/performance.md, "Host
        threads", has the measured effect on workload (b) of `benchmarks/sim_throughput.py`)."""
        n = max(2, lane_budget() * threads // max(1, self.lane_bytes))
        if 0 < cores and n < cores:
            n = -(-cores // -(-cores // n))     # ceil(cores / the number of batches a wave needs)
        return n - n % threads if n >= threads > 1 else n

    def lane_template(self, chip: ChipMemory, cores: range) -> list:
        """The batch environment template of `cores` (tile slots: `ChipMemory.lanes` views)."""
        key = (id(chip), cores.start, cores.stop, cores.step)
        hit = self._lane_templates.get(key)
        if hit is not None and hit[0] is chip:
            return hit[1]
        tmpl: list = [None] * self._c.num_slots
        for slot, b in self._buffers:
            tmpl[slot] = chip.lanes(b.memref, b.dtype, b.shape, cores)
        if len(self._lane_templates) >= 64:
            self._lane_templates.clear()
        self._lane_templates[key] = (chip, tmpl)
        return tmpl

    def batch_env(self, lanes: Sequence[list], chip: ChipMemory, cores: range,
                  sources: ViewMemo | None = None, serial: int = 0) -> list:
        """The batch environment of `lanes` (each from `bind` on core `cores[k]`'s arena): lane
        views, `Lanes` of the tensor arguments, the first lane's scalars. `sources`: None, or the
        device's `view_memo` and `serial` its `run_serial` (a full simulation); then a tensor
        argument whose lanes are the same tensor objects, each with the same data pointer, dtype,
        shape and strides (`ViewMemo.source`), as in a batch of this run or the one before gets
        the runs that stack (`Lanes.pieces`) found then, rebuilt from their layout (`run_memo.py`:
        the orchestrator makes the same views every run; the memo holds no tensor)."""
        env = self.lane_template(chip, cores).copy()
        first = lanes[0]
        memo = self._stacks
        for i, (_, slot, is_tensor, *_rest) in enumerate(self._params):
            if i in self.lane_params:
                continue        # read by lane-by-lane statements only, from each lane's own value
            if not is_tensor:
                env[slot] = first[slot]
                continue
            ts = Lanes([lane[slot] for lane in lanes])
            if sources is None:
                env[slot] = ts
                continue
            source = sources.source
            key = (slot, *[source(t, serial) for t in ts])
            hit = memo.get(key, serial)
            if hit is not None:
                ts.__dict__["_pieces"] = [(k0, k1, torch.as_strided(ts[k0], *how)) for k0, k1, how in hit]
            else:
                p = ts.pieces
                if p is not None:   # (each run's storage offset is its first lane's)
                    memo.put(key, [(k0, k1, (v.shape, v.stride())) for k0, k1, v in p])
            env[slot] = ts
        for _, _, slot in self._c.dim_binders:
            env[slot] = first[slot]
        return env

    def run_lanes(self, env: list, lanes: Sequence[list]) -> None:
        """Run the kernel once for every lane: `env` from `batch_env`, `lanes` the lanes' bound
        environments (left unchanged: the run works on copies).

        Raises:
            RuntimeSimError: for any failure inside; its `lane` attribute (when set) names the lane.
        """
        holder = self._c.lanes
        holder[0] = [lane.copy() for lane in lanes]
        try:
            self._body(env.copy())
        finally:
            holder[0] = ()


def batch_kernel(ex: KernelExecutor, lane_params: frozenset[int] = frozenset()) -> BatchKernel | None:
    """The `BatchKernel` of executor `ex` whose scalar parameters `lane_params` (indices) may differ
    between lanes (built once and kept on `ex`), or None when the kernel cannot run as such a batch."""
    cache = ex.__dict__.setdefault("_batch", {})
    bk = cache.get(lane_params)
    if bk is None:
        try:
            bk = BatchKernel(ex.func, ex.soc, lane_params)
        except (NotBatchable, RuntimeSimError):
            bk = False
        cache[lane_params] = bk
    return bk or None


def lane_scalars(ex: KernelExecutor) -> frozenset[int]:
    """The scalar parameters of kernel `ex` that may differ between the lanes of a batch: those
    read only by statements that can run lane by lane (not steering control flow; an offset of a
    load, say). Computed once per executor."""
    got = ex.__dict__.get("_lane_scalars")
    if got is None:
        scalars = [i for i, p in enumerate(ex.func.params) if isinstance(p.type, ScalarType)]
        got = frozenset(i for i in scalars if batch_kernel(ex, frozenset({i})) is not None)
        if got and batch_kernel(ex, got) is None:
            got = frozenset()
        ex._lane_scalars = got  # type: ignore[attr-defined]
    return got
