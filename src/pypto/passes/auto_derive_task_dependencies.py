"""AutoDeriveTaskDependencies: the task dependency edges of each orchestration (SPEC §1, §5).

Source order in an Orchestration function does not order its tasks: two tasks are ordered only
when they touch overlapping tensor regions and one of them writes. This pass works that graph out
at compile time, over the *call sites* of every function that calls other program functions (each
site submits one task per execution), using the parameter directions DeriveCallDirections settled
and the regions `tensor_access` traces through slices, in-place writes and loops:

- RAW: a later site reads (In/InOut) what an earlier site writes (Out/InOut);
- WAR: a later site writes what an earlier site reads;
- WAW: both write;
- explicit: a later site names, in its `deps=[...]`, a tensor an earlier site writes (Out/InOut)
  any region of (`self.k(x, y, deps=[t])`, SPEC §1), or the TaskId of the earlier site (`o, t =
  pl.submit(...)`, `with pl.at(...) as t`, SPEC §13: the task lists it under `"task_deps"`). Added
  to the edge's kinds when the sites also conflict on regions.

A site in a MANUAL runtime scope (`"manual": true`) gets no region edges, and arguments named in
`no_dep_args` take part in none (SPEC §13).

Two regions of one root tensor overlap unless both are boxes with constant offsets and shapes
that are disjoint; anything else (a loop-variant offset, a whole-tensor access) may overlap, and
the edge says `"exact": false`. Sites inside a common loop also conflict across iterations: such
an edge from a later site (or a site) to an earlier one (or itself) is marked `"loop_carried": true`.

The IR is not changed. The result goes to `ctx.records["task_dependencies"][function]` as JSON-ready
data, for codegen, the report and the runtime (which, like the device runtime, also derives the
dependencies of the concrete task instances at run time from their actual tensor regions):

```
{"tasks": [{"id": 0, "callee": "k", "line": 12,
            "args": [{"param": "c", "direction": "Out", "tensor": "c",
                      "offsets": [0, 0] | null, "shape": [16, 64] | null}, ...],
            "deps": [{"tensor": "c", "offsets": ..., "shape": ...}, ...]}, ...],
 "edges": [{"from": 0, "to": 1, "kinds": ["RAW", "explicit"], "tensors": ["c"],
            "exact": true, "loop_carried": false}, ...]}
```
Offsets and shape entries are ints, or the printed expression when not constant. An edge lists the
root tensors behind any of its kinds; it is exact when every overlap behind it is certain.
"""

from __future__ import annotations

from typing import Any

from ..core.enums import ParamDirection as D
from ..ir.expr import ConstInt, Expr
from ..ir.function import Program
from ..ir.printer import python_print
from .base import Pass, PassContext
from .tensor_access import CallSite, Region, TensorAccess

__all__ = ["AutoDeriveTaskDependencies", "regions_overlap"]


def _consts(es: tuple[Expr, ...] | None) -> list[int] | None:
    if es is None or not all(isinstance(e, ConstInt) for e in es):
        return None
    return [e.value for e in es]  # type: ignore[attr-defined]


def regions_overlap(a: Region, b: Region) -> tuple[bool, bool]:
    """(may overlap, the answer is exact) for two regions; different roots never overlap."""
    if a.root is not b.root:
        return False, True
    if a.offsets is None or b.offsets is None:
        return True, True  # a whole tensor overlaps every region of it
    ao, as_, bo, bs = _consts(a.offsets), _consts(a.shape), _consts(b.offsets), _consts(b.shape)
    if None in (ao, as_, bo, bs):
        return True, False
    disjoint = any(x + n <= y or y + m <= x for x, n, y, m in zip(ao, as_, bo, bs))  # type: ignore[arg-type]
    return not disjoint, True


def _kinds(earlier: D, later: D) -> list[str]:
    reads = (D.In, D.InOut)
    writes = (D.Out, D.InOut)
    kinds = []
    if earlier in writes and later in reads:
        kinds.append("RAW")
    if earlier in reads and later in writes:
        kinds.append("WAR")
    if earlier in writes and later in writes:
        kinds.append("WAW")
    return kinds


def _edge(src: CallSite, dst: CallSite, loop_carried: bool) -> dict[str, Any] | None:
    kinds: list[str] = []
    tensors: list[str] = []
    exact = True
    if dst.manual:  # a MANUAL scope derives no order (SPEC §13)
        return None
    for n1, d1, r1 in src.args:
        for n2, d2, r2 in dst.args:
            if r1 is None or r2 is None or n1 in src.untracked or n2 in dst.untracked:
                continue
            k = _kinds(d1, d2)
            if not k:
                continue
            hit, sure = regions_overlap(r1, r2)
            if not hit:
                continue
            exact &= sure and not loop_carried
            kinds += [x for x in k if x not in kinds]
            if r1.root.name not in tensors:
                tensors.append(r1.root.name)
    if not kinds:
        return None
    return {"from": src.index, "to": dst.index, "kinds": kinds, "tensors": tensors, "exact": exact,
            "loop_carried": loop_carried}


def _explicit(src: CallSite, dst: CallSite, loop_carried: bool) -> tuple[list[str], bool] | None:
    """(tensors, exact) when `dst` names in its deps a region `src` writes (or the TaskId of
    `src`: no tensors, exact), else None."""
    tensors: list[str] = []
    exact = True
    if src.index in dst.task_deps and not loop_carried:
        return [], True
    for r in dst.deps:
        for _, d, w in src.args:
            if w is None or d is D.In:
                continue
            hit, sure = regions_overlap(w, r)
            if hit:
                exact &= sure and not loop_carried
                if r.root.name not in tensors:
                    tensors.append(r.root.name)
    return (tensors, exact) if tensors else None


def _link(src: CallSite, dst: CallSite, loop_carried: bool) -> dict[str, Any] | None:
    """The edge src -> dst: region conflicts and explicit deps together."""
    e = _edge(src, dst, loop_carried)
    x = _explicit(src, dst, loop_carried)
    if x is None:
        return e
    tensors, exact = x
    if e is None:
        return {"from": src.index, "to": dst.index, "kinds": ["explicit"], "tensors": tensors,
                "exact": exact, "loop_carried": loop_carried}
    e["kinds"].append("explicit")
    e["tensors"] += [t for t in tensors if t not in e["tensors"]]
    e["exact"] &= exact
    return e


def _region_json(r: Region) -> dict[str, Any]:
    return {"tensor": r.root.name, "offsets": _dims(r.offsets), "shape": _dims(r.shape)}


def _dims(es: tuple[Expr, ...] | None) -> list[int | str] | None:
    if es is None:
        return None
    return [e.value if isinstance(e, ConstInt) else python_print(e) for e in es]


def task_graph(calls: list[CallSite]) -> dict[str, Any]:
    """The JSON-ready task table and dependency edges of one function's call sites."""
    tasks = [{"id": c.index, "callee": c.callee, "line": c.stmt.span.begin_line,
              "args": [{"param": n, "direction": d.name, "tensor": r.root.name if r else None,
                        "offsets": _dims(r.offsets) if r else None, "shape": _dims(r.shape) if r else None}
                       for n, d, r in c.args],
              "deps": [_region_json(r) for r in c.deps],
              **({"task_deps": list(c.task_deps)} if c.task_deps else {}),
              **({"manual": True} if c.manual else {})} for c in calls]
    edges = []
    for j, later in enumerate(calls):
        for earlier in calls[:j]:
            e = _link(earlier, later, False)
            if e is not None:
                edges.append(e)
    for i, a in enumerate(calls):   # the next iteration of a shared loop runs `a` after `b` again
        for b in calls[i:]:
            if set(a.loops) & set(b.loops):
                e = _link(b, a, True)
                if e is not None:
                    edges.append(e)
    return {"tasks": tasks, "edges": edges}


class AutoDeriveTaskDependencies(Pass):
    """Record, per orchestrating function, its tasks and their RAW/WAR/WAW/explicit dependency edges."""

    name = "AutoDeriveTaskDependencies"

    def run(self, program: Program, ctx: PassContext) -> Program:
        dirs = {f.name: f.param_directions for f in program.functions}
        params = {f.name: tuple(p.name for p in f.params) for f in program.functions}
        out: dict[str, Any] = {}
        for f in program.functions:
            acc = TensorAccess(dirs.get, lambda n: params.get(n, ()))
            acc.visit_function(f)
            if acc.calls:
                out[f.name] = task_graph(acc.calls)
        ctx.records["task_dependencies"] = out
        return program
