"""DeriveCallDirections: each tensor parameter's direction follows what the function does to it
(SPEC §5; §9 "an output parameter treated as input (host reads zeros), or Out widened to InOut
(false deps)").

The runtime orders tasks, and copies results back to the host, by parameter direction: In is
read, Out is written, InOut is both. Functions are processed callees first; for each tensor
parameter `p` (see `tensor_access` for how reads and writes are traced, also through the calls a
function makes):

| what the body does to `p` | derived |
|---|---|
| never writes it | In |
| writes it, and never reads it before the first write | Out |
| reads it before (or without) writing it first, and writes it | InOut |

and the derived direction is merged with the declared one without ever losing a fact or adding a
false one: a declared In becomes what is derived (a written "input" must be copied back and ordered
after its readers); a declared Out stays Out unless its incoming contents are read (then InOut —
only then does the task need the data); a declared InOut stays InOut. An Out parameter that is
never written stays Out (compile reports it). Changes are recorded in
`ctx.records["call_directions"][function][param] = {"declared": .., "derived": ..}`.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.enums import FunctionType
from ..core.enums import ParamDirection as D
from ..core.errors import CompileError
from ..ir.expr import Call, GlobalVar, Var
from ..ir.function import Function, Program
from ..ir.stmt import ReturnStmt
from ..ir.types import TensorType, TileType
from ..ir.visitor import IRVisitor
from .base import Pass, PassContext
from .tensor_access import TensorAccess

__all__ = ["DeriveCallDirections", "callee_first", "derived_direction"]


class _Callees(IRVisitor):
    def __init__(self) -> None:
        self.names: list[str] = []

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar) and e.op.name not in self.names:
            self.names.append(e.op.name)
        super().visit_Call(e)


def callee_first(program: Program) -> list[Function]:
    """The program's functions, every callee before its callers (program order otherwise)."""
    done: dict[str, Function] = {}
    visiting: set[str] = set()

    def visit(f: Function) -> None:
        if f.name in done or f.name in visiting:
            return
        visiting.add(f.name)
        c = _Callees()
        c.visit_stmt(f.body)
        for name in c.names:
            callee = program.get_function(name)
            if callee is not None:
                visit(callee)
        visiting.discard(f.name)
        done[f.name] = f

    for f in program.functions:
        visit(f)
    return list(done.values())


def derived_direction(access: TensorAccess, param: Var) -> D:
    """In / Out / InOut of tensor `param` from what `access` (run over its function) saw."""
    w, r = access.first_write.get(param), access.first_read.get(param)
    if w is None:
        return D.In
    return D.InOut if r is not None and r <= w else D.Out


def _merge(declared: D, derived: D) -> D:
    if declared is D.In:
        return derived
    if declared is D.Out:
        return D.InOut if derived is D.InOut else D.Out
    return D.InOut


_KERNELS = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)


def _check_kernel_return(f: Function, dirs: tuple[D, ...], acc: TensorAccess) -> None:
    """A kernel call stands for the kernel's Out/InOut tensors in parameter order (that is how the
    runtime and the host code bind a task's results), so a kernel that returns values must return
    exactly those. Raises CompileError at the return statement otherwise."""
    if f.func_type not in _KERNELS or not f.body.stmts or not isinstance(f.body.stmts[-1], ReturnStmt):
        return
    ret = f.body.stmts[-1]
    if not ret.values:
        return
    for v in ret.values:
        if isinstance(v.type, TileType):
            raise CompileError(f"kernel '{f.name}' returns tile '{getattr(v, 'name', v)}': a kernel returns the "
                               f"tensors it writes — store the tile into an Out parameter with pl.store and "
                               f"return that", ret.span or f.span)
    outs = [p for p, d in zip(f.params, dirs) if isinstance(p.type, TensorType) and d is not D.In]
    roots = [r.root if (r := acc.region_of(v)) is not None else None for v in ret.values]
    ins = {p for p, d in zip(f.params, dirs) if d is D.In}
    bad = next((v for v in ret.values if v in ins), None)   # the parameter itself, not a traced alias
    if bad is not None:
        raise CompileError(f"kernel '{f.name}' returns its input '{bad.name}', which it never writes: a kernel "
                           f"call stands for its Out/InOut tensors in parameter order: return "
                           f"({', '.join(p.name for p in outs) or 'nothing'})", ret.span or f.span)
    if len(roots) == len(outs) and (roots == outs or not set(roots) <= set(outs)):
        return   # as required, or values the tracing cannot tie to parameters: not judged
    got = ", ".join(r.name if r is not None else "?" for r in roots)
    want = ", ".join(p.name for p in outs) or "nothing"
    raise CompileError(f"kernel '{f.name}' returns ({got}), but a kernel call stands for all its Out/InOut "
                       f"tensors in parameter order: return ({want}) and bind them all at the call — a "
                       f"tensor parameter the kernel writes is an output even when declared as an input",
                       ret.span or f.span)


class DeriveCallDirections(Pass):
    """Set every tensor parameter's direction from what its function reads and writes."""

    name = "DeriveCallDirections"

    def run(self, program: Program, ctx: PassContext) -> Program:
        dirs = {f.name: f.param_directions for f in program.functions}
        params = {f.name: tuple(p.name for p in f.params) for f in program.functions}
        record = ctx.records.setdefault("call_directions", {})
        for f in callee_first(program):
            acc = TensorAccess(dirs.get, lambda n: params.get(n, ()))
            acc.visit_function(f)
            new = []
            for p, declared in zip(f.params, f.param_directions):
                if not isinstance(p.type, TensorType):
                    new.append(declared)
                    continue
                d = _merge(declared, derived_direction(acc, p))
                if d is not declared:
                    record.setdefault(f.name, {})[p.name] = {"declared": declared.name, "derived": d.name}
                new.append(d)
            dirs[f.name] = tuple(new)
            _check_kernel_return(f, dirs[f.name], acc)
        funcs = [f if dirs[f.name] == f.param_directions else replace(f, param_directions=dirs[f.name])
                 for f in program.functions]
        if all(a is b for a, b in zip(funcs, program.functions)):
            return program
        return replace(program, functions=tuple(funcs))
