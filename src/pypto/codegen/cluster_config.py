"""How a Group function runs on a cluster: its split mode and cross-core pipes (SPEC §2.2
"SplitMode", §6 "Cluster", "Cross-core pipe ring depth"; Language Guide "InCore Scopes").

Read by the orchestration codegen (the configuration of `submit_mixed_task`), `kernel_config.py`
and the simulator (which runs the group's kernels with these rings):

- `split`: `pl.split(mode)` among the Group function's `optimizations` (ExpandMixedKernel copies
  them from the `pl.at` scope), else the split its kernels' pipe ops use, else NONE. Under UP_DOWN /
  LEFT_RIGHT the AIV kernel runs on both vector cores of the cluster (subblocks 0 and 1).
- `depth`: slots per ring of each live pipe direction: `pl.cross_core_slot(slot_num=N)` gives N;
  the default is 8 when one direction is live and 4 per direction when both are. With a split there
  is one ring per vector core and direction, each of that depth.
- `slot_bytes`: the largest tile one push of the direction sends to one vector core (a slot's
  size).
- `route`: per live direction, "direct" (on chip) or "gm" (through a DDR slot buffer), from the
  memories of the pushed tiles (`SoCModel.pipe_route`; ExpandMixedKernel rejects tiles without a
  route).

Directions and tiles are found from the pipe ops of the kernels the group calls, through
`pypto.ops.system.PIPE_ROLES` (no op names here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..backend import SoCModel
from ..core.enums import MemorySpace, SplitMode
from ..core.errors import CompileError
from ..ir.expr import Call, GlobalVar
from ..ir.function import Function, Program
from ..ir.types import TileType
from ..ir.visitor import IRVisitor
from ..ops.system import TO_AIC, TO_AIV, pipe_role

__all__ = ["ClusterConfig", "cluster_config", "ring_depths", "mixed_config_cpp", "SLOTS_ONE_WAY",
           "SLOTS_BOTH_WAYS"]

SLOTS_ONE_WAY, SLOTS_BOTH_WAYS = 8, 4


@dataclass(frozen=True)
class ClusterConfig:
    """See the module docstring. `members` are the names of the kernels the group calls, in order."""

    members: tuple[str, ...]
    split: SplitMode = SplitMode.NONE
    depth: dict[str, int] = field(default_factory=dict)
    slot_bytes: dict[str, int] = field(default_factory=dict)
    route: dict[str, str] = field(default_factory=dict)

    @property
    def vector_cores(self) -> int:
        """How many vector cores run the AIV kernel: 2 under a split, else 1."""
        return 1 if self.split is SplitMode.NONE else 2


def mixed_config_cpp(cfg: ClusterConfig) -> tuple[str, str]:
    """(argument, comment) describing `cfg` in orchestration C++: the `MixedConfig{split,
    vector_cores, c2v_slots, c2v_slot_bytes, v2c_slots, v2c_slot_bytes, gm_bytes}` argument of
    `submit_mixed_task` (`gm_bytes`: size of the DDR slot buffer the runtime provides for pipes
    routed through GM), or ("", "") for a group without pipes or split."""
    if not cfg.depth and cfg.split is SplitMode.NONE:
        return "", ""
    fields = [f"MixedSplit::{cfg.split.name}", str(cfg.vector_cores)]
    notes = []
    gm = 0
    for d in (TO_AIV, TO_AIC):
        slots, size = cfg.depth.get(d, 0), cfg.slot_bytes.get(d, 0)
        fields += [str(slots), str(size)]
        if slots:
            rings = cfg.vector_cores
            if cfg.route.get(d) == "gm":
                gm += slots * size * rings
            notes.append(f"{d}: {rings} x {slots} slots of {size} B {'in DDR' if cfg.route.get(d) == 'gm' else 'on chip'}")
    fields.append(str(gm))
    return f", MixedConfig{{{', '.join(fields)}}}", "; ".join(notes)


def ring_depths(directions: set[str] | frozenset[str], slot_num: int | None = None) -> dict[str, int]:
    """Slots per ring of each live direction (module docstring)."""
    if slot_num is None:
        slot_num = SLOTS_ONE_WAY if len(directions) <= 1 else SLOTS_BOTH_WAYS
    return {d: slot_num for d in sorted(directions)}


class _Pipes(IRVisitor):
    def __init__(self, soc: SoCModel, where: str) -> None:
        self.soc, self.where = soc, where
        self.splits: set[SplitMode] = set()
        self.slot_bytes: dict[str, int] = {}
        self.route: dict[str, str] = {}

    def visit_Call(self, e: Call) -> None:
        super().visit_Call(e)
        role = pipe_role(e.op) if isinstance(e.op, str) else None
        if role is None or role.kind == "free":
            return
        split = e.attr("split", SplitMode.NONE)
        if split is not SplitMode.NONE:
            self.splits.add(split)
        self.slot_bytes.setdefault(role.direction, 0)
        if role.kind != "push" or not isinstance(e.args[0].type, TileType):
            return
        t = e.args[0].type
        n = math.prod(getattr(d, "value", 0) for d in t.shape) * t.dtype.get_bit() // 8
        if role.direction == TO_AIV and split is not SplitMode.NONE:
            n //= 2   # each vector core's slot holds its half
        self.slot_bytes[role.direction] = max(self.slot_bytes[role.direction], n)
        src = t.memory_space or MemorySpace.Vec
        route = self.soc.pipe_route(src, role.receiver_space)
        if route is None:
            raise CompileError(f"{self.where}: {e.op} sends a tile from {src.name}, which "
                               f"{self.soc.backend.name} cannot move to {role.receiver_space.name} or DDR",
                               e.span)
        if self.route.get(role.direction, route) != route:
            route = "gm"
        self.route[role.direction] = route


def cluster_config(group: Function, program: Program, soc: SoCModel) -> ClusterConfig:
    """The ClusterConfig of Group function `group` of `program` on `soc` (module docstring).

    Raises:
        CompileError: the group's kernels use different split modes, or push a tile no path
            carries.
    """
    members: list[str] = []

    class _Calls(IRVisitor):
        def visit_Call(self, e: Call) -> None:
            super().visit_Call(e)
            if isinstance(e.op, GlobalVar) and e.op.name not in members:
                members.append(e.op.name)

    _Calls().visit_function(group)
    pipes = _Pipes(soc, f"group '{group.name}'")
    for name in members:
        f = program.get_function(name)
        if f is not None:
            pipes.visit_function(f)
    opts = dict(group.optimizations)
    split = dict(opts["split"])["mode"] if "split" in opts else None
    if split is None:
        if len(pipes.splits) > 1:
            raise CompileError(f"the kernels of group '{group.name}' split their pipes in different ways "
                               f"({', '.join(sorted(s.name for s in pipes.splits))})", group.span)
        split = next(iter(pipes.splits), SplitMode.NONE)
    slot_num = dict(opts["cross_core_slot"])["slot_num"] if "cross_core_slot" in opts else None
    directions = frozenset(pipes.slot_bytes)
    return ClusterConfig(tuple(members), split, ring_depths(directions, slot_num),
                         {d: pipes.slot_bytes[d] for d in sorted(directions)},
                         {d: pipes.route.get(d, "direct") for d in sorted(directions)})

