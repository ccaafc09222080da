"""Orchestration interpreter: runs the control plane of a lowered program (SPEC §1).

An Orchestration function allocates DDR tensors (`tensor.create`, zero-filled), takes views
(`tensor.slice`), computes scalars, runs control flow and submits tasks: every Call whose `op` is a
`GlobalVar` naming an InCore/AIC/AIV function becomes `SimDevice.submit(kernel, args)`. The call's
value is the Out/InOut argument (one) or the tuple of them (several), in parameter order, so later
statements can name a kernel's outputs; None when the kernel has none. A call of a Group function
becomes `SimDevice.submit_group` (its kernels run together on one cluster) and yields the group's
return value(s). A call of any other function (Orchestration, Opaque, ...) runs that function's
body as a nested orchestration and yields its return value(s).

Registered ops run on the host only when they do not compute on data: ops with the
"orchestration", "view" or "creation" trait, or a scalar result (shape queries). Anything else —
every `tile.*` op and tensor compute ops — is rejected, because in a correctly lowered program it
lives inside a kernel. A host op that reads or writes tensor *data* (not a view or an allocation,
e.g. reading one element) first waits for every submitted task (`SimDevice.sync`), so it sees
their results and is ordered after them.

Explicit dependencies: a call with `deps=[x, y]` (`Call.deps`) waits for every earlier task of the
run that wrote any part of the DDR region of `x` or `y` (found from the recorded accesses of the
submitted tasks, `writers`), on top of the dependencies the device derives from overlapping
regions. The ids go to `SimDevice.submit` / `submit_group` as `deps`; for a nested orchestration
function they apply to every task it submits (`Orchestrator.run(args, deps)`), together with the
caller's own inherited ones.

TaskIds (SPEC §13): a `pl.submit` call (attribute `submit`) yields its outputs followed by the
TaskId, at run time the tuple of the ids of the tasks it submitted; a TaskId in `deps=` names
exactly those tasks. An SPMD scope (`pl.spmd`) runs its body once with the device in SPMD mode:
every kernel submitted launches `core_num` blocks (`SimDevice.submit`); so does every kernel a
function submits when it is called by `pl.spmd_submit(f, ..., core_num=N)` (a Spmd function).

Tensors created by a "creation" op (`tensor.create`, ...) are reported to the device
(`SimDevice.created`: they take heap on the current scope's ring), and `pl.dump_tag(t)` (an op
with the "dump" trait) marks `t` for the argument dump (`SimDevice.dump_tag`).

Runtime scopes: the entry function's body is the outermost scope; a call of a nested orchestration
function and a `pl.scope()` block (`ScopeStmt` of kind Runtime) each open a scope inside it. Tasks
record the scopes they were submitted in (for the scope statistics of the DFX outputs).
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from ...core.enums import FunctionType, ParamDirection, ScopeKind
from ...core.errors import RuntimeSimError
from ...ir.expr import Call, GlobalVar
from ...ir.function import Function, Program
from ...ir.stmt import ScopeStmt
from ...ir.types import ScalarType, TensorType
from ...ops.registry import OpSpec
from .interp import Env, ExprFn, FunctionCompiler, StmtFn
from .kernel import KERNEL_TYPES
from .regions import region_of
from .task import BLOCK_INDEX, TaskOptions

if TYPE_CHECKING:
    from .device import SimDevice

__all__ = ["Orchestrator", "HOST_TRAITS", "writers", "touches_data"]

HOST_TRAITS = frozenset({"orchestration", "view", "creation"})
_OUT = (ParamDirection.Out, ParamDirection.InOut)


def _pick(values: Sequence[Any] | None) -> Any:
    if not values:
        return None
    return values[0] if len(values) == 1 else tuple(values)


def writers(device: SimDevice, value: Any, span: Any = None) -> list[int]:
    """Ids of the tasks of the current run that write (Out/InOut) any part of tensor `value`'s DDR
    region, in submission order; for a TaskId value (the tuple of task ids a submission made,
    SPEC §13), those tasks.

    Raises:
        RuntimeSimError: `value` is neither a DDR tensor nor a TaskId.
    """
    if isinstance(value, tuple) and all(isinstance(i, int) for i in value):
        return list(value)
    if not isinstance(value, torch.Tensor):
        raise RuntimeSimError(f"deps= names a {type(value).__name__}, not a DDR tensor", span)
    r = region_of(value)
    return [t.task_id for t in device.tasks if any(w and a.overlaps(r) for _, a, _, w in t.accesses)]


def touches_data(spec: OpSpec, call: Call) -> bool:
    """Whether host op `call` reads or writes tensor *data* (not only a view or an allocation): the
    orchestrator waits for every submitted task before running it (module docstring)."""
    return not spec.traits & {"view", "creation"} and any(
        i < len(call.args) and isinstance(call.args[i].type, TensorType) for i in (*spec.reads, *spec.writes))


class _OrchCompiler(FunctionCompiler):
    kind = "orchestration function"

    def __init__(self, func: Function, program: Program, device: SimDevice) -> None:
        self.program, self.device = program, device
        self.inherited: tuple[int, ...] = ()  # deps of the call running this function (nested)
        super().__init__(func)

    def compile_call(self, call: Call) -> ExprFn:
        if isinstance(call.op, GlobalVar):
            return self._call_function(call)
        spec = self.lookup_op(call)
        host_ok = spec.namespace != "tile" and (
            spec.traits & HOST_TRAITS or isinstance(call.result_type, ScalarType))
        if not host_ok:
            raise RuntimeSimError(f"op '{spec.name}' computes on data and cannot run in orchestration "
                                  f"function '{self.func.name}' (it belongs inside an InCore kernel)",
                                  call.span)
        run = self.op_closure(call, spec)
        if spec.namespace == "tensor" and "view" in spec.traits and "creation" not in spec.traits:
            run = self._memo_view(call, spec, run)
        device, span = self.device, call.span
        if "creation" in spec.traits and isinstance(call.result_type, TensorType):
            make = run

            def run(env: Env) -> Any:   # a new DDR tensor takes heap on the scope's ring
                t = make(env)
                device.created(t, span)
                return t
        if "dump" in spec.traits:
            arg = self.compile_expr(call.args[0])
            tag = run

            def run(env: Env) -> Any:   # pl.dump_tag: later tasks touching the tensor are dumped
                device.dump_tag(arg(env), span)
                return tag(env)
            return run
        if not touches_data(spec, call):
            return run
        sync = self.device.sync

        def synced(env: Env) -> Any:
            sync()
            return run(env)
        return synced

    def _memo_view(self, call: Call, spec: OpSpec, run: ExprFn) -> ExprFn:
        """The view op `call` (`run` computes it) returning the view it made in an earlier run for
        the same source tensor object, with the same data pointer, dtype, shape and strides, and
        the same other arguments (`run_memo.ViewMemo`): a loop over tiles makes the same views
        every run. The memo holds weak references: a view is found again while the last run's
        records (its tasks' arguments) keep it alive; a run returns new views of its own
        (`ViewMemo.handed_out`). Not for a call whose valid shapes are only known at run
        time; only views of the source are kept (a padded slice makes a new tensor)."""
        valid = self._valid_fns(call, spec)
        if valid is not None and any(callable(f) for f in valid):
            return run
        fns = [self.compile_operand(a, spec) for a in call.args]
        if not fns:
            return run
        f0, rest, device, site = fns[0], fns[1:], self.device, object()
        vm = device.view_memo
        memo, source = vm.views, vm.source

        def view(env: Env) -> Any:
            x = f0(env)
            if not isinstance(x, torch.Tensor):
                return run(env)
            serial = device.run_serial
            try:
                key = (site, source(x, serial), *[f(env) for f in rest])
                ref = memo.get(key, serial)
            except TypeError:     # an argument that is not hashable
                return run(env)
            if ref is not None:
                v = ref()
                if v is not None:
                    return v
            v = run(env)
            # (a new view: an op that returns its source, `set_validshape`, may be given the
            # caller's own view, whose layout the caller may change between runs)
            if isinstance(v, torch.Tensor) and v is not x and v._base is not None and \
                    v._base is (x._base if x._base is not None else x):
                ref = weakref.ref(v)
                memo.put(key, ref)
                memo.put(id(v), [ref, None])   # its region, found by the device's first `_accesses`
            return v
        return view

    def compile_scope(self, s: ScopeStmt) -> StmtFn:
        if s.kind is ScopeKind.Spmd:
            return self._spmd_scope(s)
        if s.kind is not ScopeKind.Runtime:
            return super().compile_scope(s)
        body, device = self.compile_block(s.body), self.device
        name = f"scope@{s.span.begin_line}" if s.span.is_known() else "scope"
        span, mode = s.span, s.mode

        def scoped(env: Env) -> Any:
            device.push_scope(name, span, mode)
            try:
                return body(env)
            finally:
                device.pop_scope()
        return scoped

    def _spmd_scope(self, s: ScopeStmt) -> StmtFn:
        """`pl.spmd(core_num=N)`: the body runs once; each kernel it submits launches N blocks,
        and the loop form's block index is passed to the kernels as each block's index."""
        slot = self.define(s.block_var) if s.block_var is not None else None
        body, device = self.compile_block(s.body), self.device
        n, sync, span = s.attr("core_num"), bool(s.attr("sync_start", False)), s.span

        def spmd(env: Env) -> Any:
            if slot is not None:
                env[slot] = BLOCK_INDEX
            device.push_spmd(n, sync, span)
            try:
                return body(env)
            finally:
                device.pop_spmd()
        return spmd

    def _call_function(self, call: Call) -> ExprFn:
        name = call.op.name  # type: ignore[union-attr]
        callee = self.program.get_function(name)
        if callee is None:
            raise RuntimeSimError(f"call of unknown function '{name}' (program '{self.program.name}' "
                                  f"has {', '.join(self.program.function_names)})", call.span)
        if len(call.args) != len(callee.params):
            raise RuntimeSimError(f"'{name}' takes {len(callee.params)} arguments, got {len(call.args)}",
                                  call.span)
        arg_fns = [self.compile_expr(a) for a in call.args]
        dep_fns = [self.compile_expr(d) for d in call.deps]
        device, program = self.device, self.program
        span = call.span

        def deps(env: Env) -> tuple[int, ...]:
            """Inherited deps plus the earlier writers of this call's `deps=` tensors."""
            if not dep_fns:
                return self.inherited
            ids = dict.fromkeys(self.inherited)
            for f in dep_fns:
                ids.update(dict.fromkeys(writers(device, f(env), span)))
            return tuple(ids)

        submitted = bool(call.attr("submit"))  # pl.submit: the outputs, then the TaskId (SPEC §13)
        opts = TaskOptions(tuple(call.attr("no_dep_args", ())), call.attr("name_hint"),
                           call.attr("allow_early_resolve"), call.attr("core_num", 1),
                           bool(call.attr("sync_start", False)))
        if callee.func_type in KERNEL_TYPES:
            outs = tuple(i for i, d in enumerate(callee.param_directions) if d in _OUT)
            one_out = outs[0] if len(outs) == 1 and not submitted else None   # the usual call: its value

            def submit(env: Env) -> Any:
                args = tuple([f(env) for f in arg_fns])
                t = device.submit(callee, args, deps(env) if dep_fns else self.inherited, span, opts)
                if one_out is not None:
                    return args[one_out]
                if submitted:
                    return (*[args[i] for i in outs], tuple(range(t.task_id, t.task_id + t.block_num)))
                return _pick([args[i] for i in outs])
            return submit
        if callee.func_type is FunctionType.Group:
            if opts.blocks > 1:
                raise RuntimeSimError(f"pl.spmd_submit of Group function '{name}': the simulator launches "
                                      f"SPMD blocks of single-core kernels only", span)

            def group(env: Env) -> Any:
                args = [f(env) for f in arg_fns]
                if device.spmd_active():
                    raise RuntimeSimError(f"Group function '{name}' called inside pl.spmd: the simulator "
                                          f"launches SPMD blocks of single-core kernels only", span)
                first = len(device.tasks)
                res = device.submit_group(program, callee, args, span, deps(env))
                if submitted:
                    return (*(res or ()), tuple(range(first, len(device.tasks))))
                return _pick(res)
            return group

        def nested(env: Env) -> Any:
            args = [f(env) for f in arg_fns]
            ids = deps(env)
            first = len(device.tasks)
            device.push_scope(name, span)
            if opts.blocks > 1:  # pl.spmd_submit of a Spmd function: its kernels launch N blocks
                device.push_spmd(opts.blocks, opts.sync_start, span)
            try:
                res = device.orchestrator(program, callee).run(args, ids)
            finally:
                if opts.blocks > 1:
                    device.pop_spmd()
                device.pop_scope()
            if submitted:
                return (*(res or ()), tuple(range(first, len(device.tasks))))
            return _pick(res)
        return nested


class Orchestrator:
    """A compiled orchestration function, bound to a program and a device.

    `run(args, deps)` binds the parameters (DDR tensors as torch tensors, scalars as numbers), runs
    the body (submitting tasks to the device; each waits for the tasks `deps` names too) and returns
    the ReturnStmt values as a tuple (None when the function has no return).
    """

    def __init__(self, func: Function, program: Program, device: SimDevice) -> None:
        self.func = func
        self._c = _OrchCompiler(func, program, device)

    def run(self, args: Sequence[Any], deps: Sequence[int] = ()) -> tuple | None:
        c = self._c
        if len(args) != len(c.param_slots):
            raise RuntimeSimError(f"'{self.func.name}' takes {len(c.param_slots)} arguments, got "
                                  f"{len(args)}")
        env: Env = [None] * c.num_slots
        for slot, a in zip(c.param_slots, args):
            env[slot] = a
        c.bind_dims(env, args)
        saved, c.inherited = c.inherited, tuple(deps)
        try:
            c.body(env)
        finally:
            c.inherited = saved
        return env[0]
