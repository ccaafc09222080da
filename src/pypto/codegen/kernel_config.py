"""The kernel table of a program and the `kernel_config.py` file of a build (SPEC §5).

`kernel_config.py` is plain Python data a runtime harness can import: `RUNTIME` (runtime name,
platform, chip, launch settings), `ORCHESTRATION` (the entry's host code and its C symbol),
`ORCHESTRATIONS` (every Orchestration function), `KERNELS` (func_id, name, core type and source
file of each kernel; the source is the `.cpp` ptoas made when it ran, else the `.pto`; a
hand-written C++ kernel has its own `.cpp`, `"external": True` and `"extra_include_dirs"`) and `GROUPS`
(each Group function — a mixed kernel's AIC + AIV halves run on one cluster —: its kernels, split
mode, vector cores used and, per live pipe direction, ring slots, slot bytes, route and — when the
consumer holds the slots on chip — `ring`: its memory space, address and bytes there, and the slots
of all the rings that core hosts, e.g. 2 x depth on the cube core under a split).
"""

from __future__ import annotations

import pprint
from dataclasses import asdict, dataclass

from ..backend import BackendType, get_soc
from ..core.enums import FunctionType
from ..ir.function import Program
from .cluster_config import cluster_config
from .common import is_kernel, kernel_core_type

__all__ = ["KernelEntry", "OrchestrationEntry", "RUNTIME_NAME", "ENTRY_SYMBOL", "AICPU_THREADS",
           "kernel_table", "orchestration_table", "runtime_settings", "render_kernel_config", "group_table"]

RUNTIME_NAME = "tensormap_and_ringbuffer"  # the PTO2 runtime: task graph from tensor overlaps + scopes
ENTRY_SYMBOL = "aicpu_orchestration_entry"
AICPU_THREADS = 4                          # 1 orchestrator + 3 scheduler threads on the AICPU


@dataclass(frozen=True)
class KernelEntry:
    """One kernel of a build: `func_id` (index in program order), name, core type ("aiv"/"aic"),
    `pto` (relative path of the PTO MLIR) and `source` (the `.cpp` when ptoas ran, else `pto`).

    A hand-written C++ kernel (SPEC §10) has `external=True`, no `.pto` (`pto` is None), its own
    `.cpp` (absolute path) as `source` and its include dirs as `extra_include_dirs`; `as_dict()`
    (the `kernel_config.py` entry) has those two keys only for such kernels. A kernel with
    `pl.func_attr` metadata (`Function.attrs`) has it as `attrs` (a dict; absent when empty)."""

    func_id: int
    name: str
    core_type: str
    pto: str | None
    source: str
    external: bool = False
    extra_include_dirs: tuple[str, ...] = ()
    attrs: dict[str, object] | None = None

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = {"func_id": self.func_id, "name": self.name, "core_type": self.core_type,
                                "pto": self.pto, "source": self.source}
        if self.external:
            d.update(external=True, extra_include_dirs=list(self.extra_include_dirs))
        if self.attrs:
            d["attrs"] = dict(self.attrs)
        return d


@dataclass(frozen=True)
class OrchestrationEntry:
    """Host code of one Orchestration function: its name, relative source path and C entry symbol."""

    name: str
    source: str
    function_name: str = ENTRY_SYMBOL


def kernel_table(program: Program) -> list[KernelEntry]:
    """The kernels of `program` (InCore/AIC/AIV functions) in definition order, as built."""
    out = []
    for f in program.functions:
        if is_kernel(f) and f.external is not None:
            out.append(KernelEntry(len(out), f.name, kernel_core_type(f), None, f.external.source, True,
                                   f.external.include_dirs, f.attrs_json() or None))
        elif is_kernel(f):
            core = kernel_core_type(f)
            path = f"kernels/{core}/{f.name}.pto"
            out.append(KernelEntry(len(out), f.name, core, path, path, attrs=f.attrs_json() or None))
    return out


def orchestration_table(program: Program, entry: str | None = None) -> list[OrchestrationEntry]:
    """Host code files: every Orchestration function, and the `entry` function when it is another
    host function (an Opaque function that calls kernels)."""
    return [OrchestrationEntry(f.name, f"orchestration/{f.name}.cpp") for f in program.functions
            if f.func_type is FunctionType.Orchestration or (f.name == entry and not is_kernel(f))]


def runtime_settings(backend: BackendType, platform: str) -> dict[str, object]:
    """Runtime name, platform, chip and launch settings (block_dim = AIC cores = clusters)."""
    soc = get_soc(backend)
    return {"name": RUNTIME_NAME, "platform": platform, "backend": backend.name,
            "block_dim": soc.num_aic, "aicpu_thread_num": AICPU_THREADS}


def render_kernel_config(program: Program, kernels: list[KernelEntry], backend: BackendType,
                         platform: str, entry: str) -> str:
    """The text of `kernel_config.py` (see the module docstring); `entry` names the entry function."""
    orchs = orchestration_table(program, entry)
    main = next((o for o in orchs if o.name == entry), None)

    def data(x: object) -> str:
        return pprint.pformat(x, indent=1, width=100, sort_dicts=False)

    return "\n".join([
        f'"""Kernel configuration of PyPTO build \'{program.name}\' (generated by ir.compile; SPEC §5)."""',
        "",
        f"RUNTIME = {data(runtime_settings(backend, platform))}",
        "",
        f"ORCHESTRATION = {data(asdict(main) if main is not None else None)}",
        "",
        f"ORCHESTRATIONS = {data([asdict(o) for o in orchs])}",
        "",
        f"ENTRY = {entry!r}",
        "",
        f"KERNELS = {data([k.as_dict() for k in kernels])}",
        "",
        f"GROUPS = {data(group_table(program, backend))}",
        "",
    ])


def group_table(program: Program, backend: BackendType) -> list[dict[str, object]]:
    """One entry per Group function of `program` (see the module docstring)."""
    soc = get_soc(backend)
    out: list[dict[str, object]] = []
    for f in program.functions:
        if f.func_type is FunctionType.Group:
            cfg = cluster_config(f, program, soc)
            out.append({"name": f.name, "kernels": list(cfg.members), "split": cfg.split.name,
                        "vector_cores": cfg.vector_cores,
                        "pipes": {d: {"slots": n, "slot_bytes": cfg.slot_bytes[d], "route": cfg.route[d],
                                      **({"ring": cfg.ring[d].as_dict()} if d in cfg.ring else {})}
                                  for d, n in cfg.depth.items()}})
    return out
