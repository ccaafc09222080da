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
  size); for a ring on chip, the slot size of the consumer's ring tile.
- `route`: per live direction, "direct" (on chip) or "gm" (through a DDR slot buffer), from the
  memories of the pushed tiles (`SoCModel.pipe_route`; ExpandMixedKernel rejects tiles without a
  route).
- `ring`: per direction whose consumer holds its slots on chip (memory planning reserved a ring
  tile, `pypto.passes.pipe_rings`), where they are: a `RingPlace` (memory of the consuming core,
  address, bytes, slots) read from the ring tile the consumer's pops name. The orchestration notes
  it next to `submit_mixed_task` and `kernel_config.py` lists it; the consumer's `.pto` allocates it
  at that address.

Directions and tiles are found from the pipe ops of the kernels the group calls, through
`pypto.ops.system.PIPE_ROLES` (no op names here). The ring depth rule (`ring_depths`,
`SLOTS_ONE_WAY`, `SLOTS_BOTH_WAYS`) lives with the pipe ops in `pypto.ops.system`, which memory
planning shares.
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
from ..ops.system import SLOTS_BOTH_WAYS, SLOTS_ONE_WAY, TO_AIC, TO_AIV, pipe_ring, pipe_role, ring_depths

__all__ = ["ClusterConfig", "RingPlace", "cluster_config", "ring_depths", "mixed_config_cpp", "SLOTS_ONE_WAY",
           "SLOTS_BOTH_WAYS"]


@dataclass(frozen=True)
class RingPlace:
    """Where the consumer of a pipe keeps its slots on chip: in memory `space` of the consuming core,
    bytes `[addr, addr + nbytes)` (`addr` -1 before AllocateMemoryAddr), `slots` slots of
    `slot_bytes` (all the rings that core hosts), read from the ring tile named `name`."""

    name: str
    space: MemorySpace
    addr: int
    nbytes: int
    slots: int
    slot_bytes: int

    def as_dict(self) -> dict[str, object]:
        """Plain data for kernel_config.py."""
        return {"space": self.space.name, "addr": self.addr, "bytes": self.nbytes, "slots": self.slots}


@dataclass(frozen=True)
class ClusterConfig:
    """See the module docstring. `members` are the names of the kernels the group calls, in order."""

    members: tuple[str, ...]
    split: SplitMode = SplitMode.NONE
    depth: dict[str, int] = field(default_factory=dict)
    slot_bytes: dict[str, int] = field(default_factory=dict)
    route: dict[str, str] = field(default_factory=dict)
    ring: dict[str, RingPlace] = field(default_factory=dict)

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
            where = "in DDR" if cfg.route.get(d) == "gm" else "on chip"
            ring = cfg.ring.get(d)
            if ring is not None:
                core = "each vector core's" if d == TO_AIV else "the cube core's"
                where += f", {core} {ring.space.name} [{ring.addr}, {ring.addr + ring.nbytes})"
            notes.append(f"{d}: {rings} x {slots} slots of {size} B {where}")
    fields.append(str(gm))
    return f", MixedConfig{{{', '.join(fields)}}}", "; ".join(notes)


class _Pipes(IRVisitor):
    def __init__(self, soc: SoCModel, where: str) -> None:
        self.soc, self.where = soc, where
        self.splits: set[SplitMode] = set()
        self.slot_bytes: dict[str, int] = {}
        self.route: dict[str, str] = {}
        self.rings: dict[str, set] = {}   # direction -> ring tiles its pops name

    def visit_Call(self, e: Call) -> None:
        super().visit_Call(e)
        role = pipe_role(e.op) if isinstance(e.op, str) else None
        if role is None or role.kind == "free":
            return
        ring = pipe_ring(e)
        if ring is not None:
            self.rings.setdefault(role.direction, set()).add(ring)
        split = e.attr("split", SplitMode.NONE)
        if split is not SplitMode.NONE:
            self.splits.add(split)
        self.slot_bytes.setdefault(role.direction, 0)
        if role.kind != "push" or not isinstance(e.args[0].type, TileType):
            return
        t = e.args[0].type
        n = t.dtype.storage_bytes(math.prod(getattr(d, "value", 0) for d in t.shape))
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
        CompileError: the group's kernels use different split modes, push a tile no path carries,
            or name a ring that does not fit the pipe (more than one ring tile per direction, a
            ring for a pipe through DDR, or a slot count that is not a whole number of rings of
            the pipe's depth).
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
    depth = ring_depths(directions, slot_num)
    route = {d: pipes.route.get(d, "direct") for d in sorted(directions)}
    slot_bytes = {d: pipes.slot_bytes[d] for d in sorted(directions)}
    rings = {d: _ring_place(group, d, tiles, depth[d], route[d]) for d, tiles in sorted(pipes.rings.items())}
    slot_bytes.update({d: r.slot_bytes for d, r in rings.items()})
    return ClusterConfig(tuple(members), split, depth, slot_bytes, route, rings)


def _ring_place(group: Function, direction: str, tiles: set, depth: int, route: str) -> RingPlace:
    """The RingPlace of the ring tile the pops of `direction` name (see `cluster_config`)."""
    where = f"group '{group.name}', pipe {direction}"
    if len(tiles) > 1:
        raise CompileError(f"{where}: the pops name {len(tiles)} different ring tiles; one ring tile holds "
                           f"a direction's slots", group.span)
    (tile,) = tiles
    t = tile.type
    if route != "direct":
        raise CompileError(f"{where}: the pipe goes through a DDR slot buffer, so its pops cannot name an "
                           f"on-chip ring ('{getattr(tile, 'name', tile)}')", group.span)
    slots, slot_bytes = (getattr(d, "value", 0) for d in t.shape)
    if slots % depth:
        raise CompileError(f"{where}: ring tile '{getattr(tile, 'name', tile)}' has {slots} slots, which is "
                           f"not a whole number of rings of the pipe's {depth} slots (pl.cross_core_slot)",
                           group.span)
    m = t.memref
    space = m.memory_space if m is not None else (t.memory_space or MemorySpace.Vec)
    return RingPlace(getattr(tile, "name", "ring"), space, m.addr if m is not None else -1, slots * slot_bytes,
                     slots, slot_bytes)

