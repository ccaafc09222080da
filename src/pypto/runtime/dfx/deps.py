"""`deps.json`: the run's tasks, the DDR tensors they use and the dependency edges with their
source (SPEC §12 runtime DFX, `enable_dep_gen`).

```
{"program", "entry",
 "tasks":   [{"id", "kernel", "core", "scope", "ring", "submit_cycle", "start_cycle", "end_cycle",
              "args": [{"index", "direction", "tensor"}]}],
 "tensors": [{"id", "buffer", "name", "origin", "offset_bytes", "nbytes", "shape", "dtype"}],
 "edges":   [{"src", "dst", "source", "kind", "tensor"}]}
```

A *tensor* is one distinct DDR view passed to a task (buffer, byte range, shape, dtype); `buffer`
numbers the underlying allocations, `origin` says where one came from: "argument" (an entry
parameter, `name` is the parameter), "created" (orchestration's `tensor.create` and other creation
ops, `name` is `created@<line>`) or "other". An edge `src -> dst` means task dst waited for task
src; `source` is why:

- "explicit": a `deps=` of the call (or of an enclosing call) named it; `kind` "explicit";
- "creator": a RAW edge from the task that created the data a task reads: its conflicting write
  went into a tensor the orchestration created (`tensor.create`, ...) where no earlier task had
  written any of those bytes (the runtime's "creator" of an intermediate);
- "tensormap": any other edge found from overlapping DDR regions (RAW, WAW or WAR in `kind`).

A dependency that is both explicit and region-derived gives two edges. `tensor` is the id of the
consumer's tensor through which the regions overlap (null for explicit edges).
"""

from __future__ import annotations

from typing import Any

import torch

from ..sim.record import RunRecord
from ..sim.regions import region_of

__all__ = ["deps_json"]


def deps_json(record: RunRecord) -> dict[str, Any]:
    """The `deps.json` document of `record` (module docstring)."""
    buffers: dict[int, int] = {}
    names: dict[int, tuple[str, str]] = {}
    for name, key in record.inputs:
        names.setdefault(key, (name, "argument"))
    for key, _, span in record.created:
        line = span.begin_line if span is not None and span.is_known() else "?"
        names.setdefault(key, (f"created@{line}", "created"))
    tensors: dict[tuple, dict[str, Any]] = {}
    task_args: dict[int, dict[int, int]] = {}
    tasks = []
    scopes = record.scopes
    for t in record.tasks:
        args, ids = [], {}
        for i, (a, d) in enumerate(zip(t.args, t.directions)):
            if not isinstance(a, torch.Tensor):
                continue
            r = region_of(a)
            b = buffers.setdefault(r.key, len(buffers))
            key = (r.key, r.lo, r.hi, tuple(a.shape), str(a.dtype))
            ten = tensors.get(key)
            if ten is None:
                name, origin = names.get(r.key, (f"buffer{b}", "other"))
                ten = tensors[key] = {"id": len(tensors), "buffer": b, "name": name, "origin": origin,
                                      "offset_bytes": r.lo, "nbytes": r.hi - r.lo, "shape": list(a.shape),
                                      "dtype": str(a.dtype).replace("torch.", "")}
            ids[i] = ten["id"]
            args.append({"index": i, "direction": d.name, "tensor": ten["id"]})
        task_args[t.task_id] = ids
        tasks.append({"id": t.task_id, "kernel": t.kernel, "core": t.core,
                      "scope": scopes[t.scope[-1]].path(scopes) if t.scope else "", "ring": t.ring,
                      "submit_cycle": t.submit_cycle, "start_cycle": t.start_cycle, "end_cycle": t.end_cycle,
                      "args": args})
    created = {key for key, _, _ in record.created}
    first = _first_writes(record, created)
    edges = []
    for t in record.tasks:
        for d, kind in sorted(t.deps.items()):
            parts = kind.split("+")
            region = [k for k in parts if k != "explicit"]
            if region:
                via = _via(record.tasks[d], t)
                src = "creator" if via is not None and region[0] == "RAW" and (d, via[1]) in first else "tensormap"
                edges.append({"src": d, "dst": t.task_id, "source": src, "kind": region[0],
                              "tensor": task_args[t.task_id].get(via[0]) if via is not None else None})
            if "explicit" in parts:
                edges.append({"src": d, "dst": t.task_id, "source": "explicit", "kind": "explicit",
                              "tensor": None})
    return {"program": record.program, "entry": record.entry, "tasks": tasks,
            "tensors": sorted(tensors.values(), key=lambda x: x["id"]), "edges": edges}


def _first_writes(record: RunRecord, created: set[int]) -> set[tuple[int, int]]:
    """(task id, argument index) of the writes that create data: a write into a tensor the
    orchestration created that no earlier task wrote any byte of. An earlier overlapping writer
    is always among a task's region dependencies (directly, or through the later write that
    covered it), so only those are checked."""
    out = set()
    tasks = record.tasks
    for t in tasks:
        for i, r, _, w in t.accesses:
            if not (w and r.key in created):
                continue
            earlier = any(w2 and q.overlaps(r) for d, k in t.deps.items() if k != "explicit"
                          for _, q, _, w2 in tasks[d].accesses)
            if not earlier:
                out.add((t.task_id, i))
    return out


def _via(src: Any, dst: Any) -> tuple[int, int] | None:
    """(argument index of `dst`, argument index of `src`) of the first pair of their accesses that
    conflict (overlapping, one of them writing)."""
    for i, r, _, w in dst.accesses:
        for j, q, _, w2 in src.accesses:
            if (w or w2) and r.overlaps(q):
                return i, j
    return None
