"""System ops `pl.system.*`: pipe synchronisation and the cross-core pipes of mixed kernels
(SPEC §3 "System", §6 "Cross-core pipe ring depth").

Synchronisation (results: nothing; written as statements):
- `sync_src(set_pipe, wait_pipe, event_id)`: the `set_pipe` records event `event_id` for `wait_pipe`;
  `sync_dst(set_pipe, wait_pipe, event_id)`: `wait_pipe` waits for it. Pipes: MTE1, MTE2, MTE3, V,
  M, S, FIX; event ids 0..7.
- `bar_v()`, `bar_m()`, `bar_all()`: barriers on the vector pipe, the cube pipe, all pipes.
The simulator executes a kernel's ops one after another, so these order nothing there; they are
kept for codegen and for the cycle model.

Cross-core pipes (a cube core and the two vector cores of its cluster):
- `tpush_to_aiv(tile, split)` (on AIC) / `tpush_to_aic(tile, split)` (on AIV): send a tile;
- `tpop_from_aic(shape, ring=None, dtype, split)` (on AIV, result in Vec) / `tpop_from_aiv(shape,
  ring=None, dtype, split)` (on AIC, result in Mat): receive the next tile, in send order (into the
  popped tile's own buffer; `ring` below);
- `tfree_to_aic(tile)` / `tfree_to_aiv(tile)`: give the popped tile's slot back to the producer.
`split` (a `pl.SplitMode`) says how a tile is shared between the two vector cores: NONE (each
running vector core receives the whole tile; a vector core sends whole tiles), UP_DOWN (vector core
k gets / sends the k-th half of the rows), LEFT_RIGHT (halves of the columns).

Ring depth (SPEC §6, Language Guide "InCore Scopes"): `ring_depths` gives the slots per ring of each
live direction: `pl.cross_core_slot(slot_num=N)` pins N; by default 8 when one direction is live and
4 per direction when both are (`SLOTS_ONE_WAY`, `SLOTS_BOTH_WAYS`).

The ring in the consumer's memory: a pop may name its `ring`, a UINT8 tile of shape
`[slots, slot_bytes]` in the receiving memory (Vec on a vector core, Mat on the cube core): the
bytes the consumer reserves for the pipe's slots, one row per slot. It holds `depth` slots per ring;
on the cube core, which receives halves from both vector cores under a split, two rings one after
the other (rows `[0, depth)` for vector core 0, `[depth, 2 * depth)` for vector core 1). Memory
planning adds the ring where the pipe runs on chip (`pypto.passes.pipe_rings`); a pipe through DDR
(Ascend910B) has no ring on chip. `pipe_ring(call)` returns the ring a pop names. A pop lists its
ring among the arguments it writes: it takes the next slot, whose bytes the producer has just
written.

In the simulator the pipes are the rings of the `PipeChannel` current in the running context: the
runtime installs a fresh one (`pipe_context`) for every Group call it runs on a cluster, so two
groups never share a pipe; outside one, a pipe op raises. Each (direction, vector subblock) is a
FIFO ring of `depth` slots: a push takes a slot, the consumer's tfree gives it back, and a push
into a full ring — like a pop from an empty one — waits while the cluster's other kernels run
(`PipeRunner`). When a pop names its ring, the ring's slots are those bytes of the consumer core's
arena (`PipeChannel.attach`, on the consumer's first pop): every push copies its tile into the
next slot there and the pop reads it back from there, so a tile that memory planning placed over
the ring corrupts the pipe's data (and the ring, written at each pop, the tile), as on the chip.
Tiles pushed before the consumer reached its first pop wait in the channel and are copied into
their slots when it attaches the ring. Without a ring (pipes through DDR, channels used outside
memory-planned code) the tiles in flight are kept in the channel.
`PIPE_ROLES` tells other modules (runtime, codegen, cost model) what each pipe op does, so they need
no op names.
"""

from __future__ import annotations

import contextvars
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from ..core.dtype import UINT8
from ..core.enums import MemorySpace, SplitMode
from ..ir.expr import Expr
from ..ir.types import TileType, TupleType, Type
from .block import current_block
from .cost import Cost, scalar
from .registry import OpSpec, OpTypeError, register
from .typing_rules import ANY, attr_choice, attr_dtype, attr_int, expect_tile, no_data, static_ints, unit_rule

__all__ = ["PIPE_NAMES", "PipeChannel", "PipeRunner", "PipeRole", "PIPE_ROLES", "pipe_role", "current_pipes",
           "pipe_context", "UNIT", "TO_AIV", "TO_AIC", "SLOTS_ONE_WAY", "SLOTS_BOTH_WAYS", "ring_depths",
           "pipe_ring", "RING_DTYPE"]

PIPE_NAMES = ("MTE1", "MTE2", "MTE3", "V", "M", "S", "FIX")
UNIT = TupleType(())
TO_AIV, TO_AIC = "AIC->AIV", "AIV->AIC"
SLOTS_ONE_WAY, SLOTS_BOTH_WAYS = 8, 4
RING_DTYPE = UINT8          # a ring tile is bytes: [slots, slot_bytes]
_RING_ARG = 1               # a pop's optional `ring` operand


@dataclass(frozen=True)
class PipeRole:
    """What a cross-core pipe op does: `kind` "push" / "pop" / "free", on the pipe `direction`
    ("AIC->AIV" or "AIV->AIC"), run by the core `side` ("AIC" or "AIV"). Tiles of the direction
    arrive in `receiver_space`; `sender_space` is where the sender usually holds them (Acc for a
    matmul result, Vec on a vector core), which a pop assumes for its cost."""

    kind: str
    direction: str
    side: str
    sender_space: MemorySpace
    receiver_space: MemorySpace


_C2V = (TO_AIV, MemorySpace.Acc, MemorySpace.Vec)
_V2C = (TO_AIC, MemorySpace.Vec, MemorySpace.Mat)
PIPE_ROLES: dict[str, PipeRole] = {
    "system.tpush_to_aiv": PipeRole("push", _C2V[0], "AIC", *_C2V[1:]),
    "system.tpush_to_aic": PipeRole("push", _V2C[0], "AIV", *_V2C[1:]),
    "system.tpop_from_aic": PipeRole("pop", _C2V[0], "AIV", *_C2V[1:]),
    "system.tpop_from_aiv": PipeRole("pop", _V2C[0], "AIC", *_V2C[1:]),
    "system.tfree_to_aic": PipeRole("free", _C2V[0], "AIV", *_C2V[1:]),
    "system.tfree_to_aiv": PipeRole("free", _V2C[0], "AIC", *_V2C[1:]),
}


def pipe_role(op_name: str) -> PipeRole | None:
    """The `PipeRole` of op `op_name`, None for an op that is not a cross-core pipe op."""
    return PIPE_ROLES.get(op_name)


def pipe_ring(call: Any) -> Expr | None:
    """The ring tile a pop `call` (an `ir.Call`) names as its `ring` argument; None when `call` is
    not a pop or names no ring."""
    role = PIPE_ROLES.get(call.op) if isinstance(call.op, str) else None
    if role is None or role.kind != "pop" or len(call.args) <= _RING_ARG:
        return None
    return call.args[_RING_ARG]


def ring_depths(directions: set[str] | frozenset[str], slot_num: int | None = None) -> dict[str, int]:
    """Slots per ring of each live pipe direction (SPEC §6): `slot_num` when the kernel pins it with
    `pl.cross_core_slot(slot_num=...)`, else `SLOTS_ONE_WAY` (8) with one live direction and
    `SLOTS_BOTH_WAYS` (4) with both."""
    if slot_num is None:
        slot_num = SLOTS_ONE_WAY if len(directions) <= 1 else SLOTS_BOTH_WAYS
    return {d: slot_num for d in sorted(directions)}


class PipeRunner(Protocol):
    """What a `PipeChannel` needs from the runtime that runs a cluster's kernels together.

    - `block(ready, what)`: return once `ready()` holds, letting the cluster's other kernels run
      meanwhile; raise RuntimeError (mentioning `what`) when no kernel of the cluster can make
      progress any more (a deadlock);
    - `now()`: the running kernel's clock (a non-decreasing count the runtime defines);
    - `sync_to(t)`: the running kernel waits until its clock reads at least `t`.
    """

    def block(self, ready: Callable[[], bool], what: str) -> None: ...

    def now(self) -> int: ...

    def sync_to(self, t: int) -> None: ...


class _Alone:
    """The runner of a channel used outside a cluster run: nothing else runs, so waiting fails."""

    def block(self, ready: Callable[[], bool], what: str) -> None:
        if not ready():
            raise RuntimeError(what)

    def now(self) -> int:
        return 0

    def sync_to(self, t: int) -> None:
        return None


class _Item:
    """A tile in flight: its slot (push order modulo the depth), the clock reading at its push, and
    its bytes — in `value` while the ring has no slots in an arena, else in slot `slot`."""

    __slots__ = ("value", "slot", "stamp", "dtype", "shape", "nbytes")

    def __init__(self, value: Any, slot: int, stamp: int) -> None:
        self.value, self.slot, self.stamp = value, slot, stamp
        self.dtype, self.shape = value.dtype, tuple(value.shape)
        self.nbytes = value.numel() * value.element_size()


class _Ring:
    """One FIFO ring: tiles in flight, the clock readings at which the free slots were released
    (None: unbounded), and — once attached — its slots (a uint8 `[depth, slot_bytes]` view of the
    consumer's arena)."""

    __slots__ = ("depth", "items", "free_at", "held", "max_held", "pushes", "slots")

    def __init__(self, depth: int | None) -> None:
        self.depth = depth
        self.items: deque[_Item] = deque()
        self.free_at: deque[int] | None = None if depth is None else deque([0] * depth)
        self.held = self.max_held = self.pushes = 0
        self.slots: Any = None

    def has_slot(self) -> bool:
        return self.free_at is None or bool(self.free_at)

    def store(self, item: _Item, where: str) -> None:
        """Copy `item`'s bytes into its slot."""
        row = self.slots[item.slot]
        if item.nbytes > row.numel():
            raise RuntimeError(f"{where}: a tile of {item.nbytes} bytes does not fit the {row.numel()}-byte "
                               f"slots of the consumer's ring")
        row[:item.nbytes].copy_(item.value.contiguous().reshape(-1).view(torch.uint8))
        item.value = None

    def load(self, item: _Item) -> Any:
        """The tile `item`, read back from its slot (or kept in the channel)."""
        if item.value is not None:
            return item.value
        return self.slots[item.slot][:item.nbytes].clone().view(item.dtype).view(item.shape)


class PipeChannel:
    """The cross-core pipes of one cluster: a FIFO ring per (direction, vector subblock).

    Args:
        depth: slots per ring — an int for every direction, a {direction: slots} mapping, or None
            (unbounded). A slot is taken by a push and given back by the consumer's free (not by
            its pop), so a producer that runs `depth` tiles ahead waits (SPEC §6 ring depth).
        runner: the `PipeRunner` that lets a waiting kernel's cluster peers run; without one a
            wait that cannot be satisfied at once raises RuntimeError.

    Attributes:
        rings: {(direction, subblock): ring}; `max_occupancy()` / `transfers()` report the most
            slots each ring held at once and how many tiles went through it.

    Raises RuntimeError (which the simulator reports at the op's source line) when a pop finds its
    ring empty or a push finds it full and nothing else can run, a popped tile has an unexpected
    shape, a free has no popped tile to release, or a ring tile does not match the pipe (`attach`).
    """

    def __init__(self, depth: int | Mapping[str, int] | None = None, runner: PipeRunner | None = None) -> None:
        self.depth = depth
        self.runner: PipeRunner = runner or _Alone()
        self.rings: dict[tuple[str, int], _Ring] = {}
        self.unfreed: dict[tuple[str, int], deque[tuple[tuple[str, int], ...]]] = defaultdict(deque)

    def depth_of(self, direction: str) -> int | None:
        """Slots per ring of `direction` (None: unbounded)."""
        return self.depth.get(direction) if isinstance(self.depth, Mapping) else self.depth

    def ring(self, direction: str, sub: int) -> _Ring:
        r = self.rings.get((direction, sub))
        if r is None:
            r = self.rings[(direction, sub)] = _Ring(self.depth_of(direction))
        return r

    def _where(self, direction: str, subs: tuple[int, ...]) -> str:
        cores = " and ".join(str(s) for s in subs)
        return f"pipe {direction} (vector core{'s' if len(subs) > 1 else ''} {cores})"

    def attach(self, direction: str, first_sub: int, ring: Any) -> None:
        """Keep the slots of `direction` in `ring`, the consumer's ring tile (a uint8 `[slots,
        slot_bytes]` view of its arena): its k-th block of `depth` rows is the ring of vector
        subblock `first_sub + k`. Tiles already in flight are copied into their slots. Attaching
        the same tile again does nothing; an unbounded channel keeps its tiles and ignores rings.

        Raises:
            RuntimeError: the tile's slot count is not a multiple of the depth, or another tile
                already holds one of these rings.
        """
        depth = self.depth_of(direction)
        if depth is None:
            return
        rows = ring.shape[0]
        if rows == 0 or rows % depth:
            raise RuntimeError(f"the ring tile of pipe {direction} has {rows} slots, which is not a whole "
                               f"number of rings of the pipe's {depth} slots")
        for k in range(rows // depth):
            r, part = self.ring(direction, first_sub + k), ring[k * depth:(k + 1) * depth]
            if r.slots is not None:
                if r.slots.data_ptr() != part.data_ptr():
                    raise RuntimeError(f"{self._where(direction, (first_sub + k,))} already has its slots in "
                                       f"another ring tile")
                continue
            r.slots = part
            for item in r.items:
                if item.value is not None:
                    r.store(item, self._where(direction, (first_sub + k,)))

    def push(self, direction: str, subs: tuple[int, ...], values: list[Any]) -> None:
        """Send `values[k]` into the ring of subblock `subs[k]`, waiting for a free slot in each."""
        rings = [self.ring(direction, s) for s in subs]
        self.runner.block(lambda: all(r.has_slot() for r in rings),
                          f"{self._where(direction, subs)} is full: all {rings[0].depth} slots hold "
                          f"tiles the consumer has not freed")
        for r in rings:
            if r.free_at is not None:
                self.runner.sync_to(r.free_at.popleft())
        stamp = self.runner.now()
        for s, r, v in zip(subs, rings, values):
            item = _Item(v, r.pushes % r.depth if r.depth else r.pushes, stamp)
            if r.slots is not None:
                r.store(item, self._where(direction, (s,)))
            else:
                item.value = v.clone()
            r.items.append(item)
            r.held += 1
            r.pushes += 1
            r.max_held = max(r.max_held, r.held)

    def pop(self, direction: str, subs: tuple[int, ...], consumer: int) -> list[Any]:
        """Receive the next tile from the ring of each of `subs` (in send order); `consumer` names
        the popping core (its subblock, 0 for the cube core) for the matching `free`."""
        rings = [self.ring(direction, s) for s in subs]
        self.runner.block(lambda: all(r.items for r in rings),
                          f"{self._where(direction, subs)} is empty: no matching tpush has run")
        got = []
        for r in rings:
            item = r.items.popleft()
            self.runner.sync_to(item.stamp)
            got.append(r.load(item))
        self.unfreed[(direction, consumer)].append(tuple((direction, s) for s in subs))
        return got

    def free(self, direction: str, consumer: int) -> None:
        """Give back the slots of the oldest tile `consumer` popped from `direction`."""
        q = self.unfreed[(direction, consumer)]
        if not q:
            raise RuntimeError(f"tfree on pipe {direction} without a popped tile to release")
        now = self.runner.now()
        for key in q.popleft():
            r = self.rings[key]
            r.held -= 1
            if r.free_at is not None:
                r.free_at.append(now)

    def pending(self) -> dict[tuple[str, int], int]:
        """{(direction, subblock): tiles pushed but never popped}, for the non-empty rings."""
        return {k: len(r.items) for k, r in self.rings.items() if r.items}

    def max_occupancy(self) -> dict[tuple[str, int], int]:
        """{(direction, subblock): most slots the ring held at once}."""
        return {k: r.max_held for k, r in self.rings.items()}

    def transfers(self) -> dict[tuple[str, int], int]:
        """{(direction, subblock): tiles pushed into the ring}."""
        return {k: r.pushes for k, r in self.rings.items()}


_CURRENT: contextvars.ContextVar[PipeChannel | None] = contextvars.ContextVar("pypto_pipes", default=None)


def current_pipes() -> PipeChannel:
    """The PipeChannel of the running cluster.

    Raises RuntimeError outside `pipe_context`: cross-core pipes exist only while the runtime runs a
    Group function's kernels together, so two groups never share a pipe.
    """
    ch = _CURRENT.get()
    if ch is None:
        raise RuntimeError("cross-core pipe op outside a mixed-kernel group: call the AIC and AIV kernels "
                           "that use pipes through a Group function (ExpandMixedKernel makes one)")
    return ch


@contextmanager
def pipe_context(channel: PipeChannel | None = None) -> Iterator[PipeChannel]:
    """Run the enclosed kernel code with `channel` (a fresh unbounded one by default) as its pipes."""
    token = _CURRENT.set(channel if channel is not None else PipeChannel())
    try:
        yield current_pipes()
    finally:
        _CURRENT.reset(token)


def _halves(x: Any, split: SplitMode, n: int) -> list[Any]:
    if split is SplitMode.NONE:
        return [x] * n
    dim = 0 if split is SplitMode.UP_DOWN else 1
    if x.shape[dim] % 2:
        raise RuntimeError(f"cannot split a tile of shape {list(x.shape)} {split.name}: odd size")
    return list(torch.chunk(x, 2, dim=dim))


def _push(direction: str):
    def compute(tile: Any, split: SplitMode = SplitMode.NONE) -> None:
        ch, blk = current_pipes(), current_block()
        if direction == TO_AIV:   # the cube core sends to its vector core(s)
            n = blk.subblock_num if split is SplitMode.NONE else 2
            ch.push(direction, tuple(range(n)), _halves(tile, split, n))
        else:
            ch.push(direction, (blk.subblock_idx if split is not SplitMode.NONE else 0,), [tile])
        return None
    return compute


def _pop(direction: str):
    def compute(shape: tuple, ring: Any = None, dtype: Any = None, split: SplitMode = SplitMode.NONE) -> Any:
        ch, blk = current_pipes(), current_block()
        if ring is not None:   # the consumer's ring: vector core k holds its own, the cube core both
            ch.attach(direction, blk.subblock_idx if direction == TO_AIV else 0, ring)
        if direction == TO_AIV:   # a vector core receives
            got = ch.pop(direction, (blk.subblock_idx,), blk.subblock_idx)[0]
        elif split is SplitMode.NONE:
            got = ch.pop(direction, (0,), 0)[0]
        else:
            got = torch.cat(ch.pop(direction, (0, 1), 0), dim=0 if split is SplitMode.UP_DOWN else 1)
        want = tuple(shape)
        if dtype is not None and dtype.is_packed() and got.dtype is torch.uint8:
            want = dtype.host_shape(want)   # the simulator moves packed 4-bit tiles as their bytes
        if tuple(got.shape) != want:
            raise RuntimeError(f"tpop expected a tile of shape {list(shape)}, the pipe delivered {list(got.shape)}")
        return got
    return compute


def _free(direction: str):
    def compute(tile: Any) -> None:
        blk = current_block()
        current_pipes().free(direction, blk.subblock_idx if direction == TO_AIV else 0)
        return None
    return compute


def _sync_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    attr_choice(attrs, "set_pipe", PIPE_NAMES)
    attr_choice(attrs, "wait_pipe", PIPE_NAMES)
    attr_int(attrs, "event_id", 0, 7)
    return UNIT


def _push_rule(spaces: tuple[MemorySpace, ...]):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        expect_tile(args, 0, "tile", spaces)
        if not isinstance(attrs.get("split"), SplitMode):
            raise OpTypeError(f"attribute 'split' must be a pl.SplitMode, got {attrs.get('split')!r}")
        return UNIT
    return rule


def _pop_rule(space: MemorySpace):
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        shape = static_ints(args, 0, "shape")
        if not isinstance(attrs.get("split"), SplitMode):
            raise OpTypeError(f"attribute 'split' must be a pl.SplitMode, got {attrs.get('split')!r}")
        if len(args) > _RING_ARG:
            r = expect_tile(args, _RING_ARG, "ring", (space,))
            if r.dtype is not RING_DTYPE or len(r.shape) != 2 or \
                    not all(isinstance(getattr(d, "value", None), int) for d in r.shape):
                raise OpTypeError(f"argument 'ring' must be a static 2-D {RING_DTYPE.name} tile "
                                  f"[slots, slot_bytes] in {space.name}, got {r.dtype.name} of rank {len(r.shape)}")
        return TileType(shape, attr_dtype(attrs, "dtype"), space)
    return rule


def _free_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    expect_tile(args, 0, "tile")
    return UNIT


_SYS = frozenset({"system"})
_SYNC = {"set_pipe": "V", "wait_pipe": "MTE3", "event_id": 0}
_SPLIT = {"split": SplitMode.NONE}
_AIC_SIDE, _AIV_SIDE = frozenset({"system", "cube"}), frozenset({"system", "vector"})
_MOVE = Cost("mte", "MTE1", "in_bytes")

_OPS = [  # name, params, rule, compute, attrs, reads, traits, pto, cost, doc (pops: `ring` optional, written)
    ("sync_src", (), _sync_rule, no_data, _SYNC, (), _SYS, "pto.record_event", scalar(),
     "`set_pipe` records event `event_id` for `wait_pipe` (set_flag)."),
    ("sync_dst", (), _sync_rule, no_data, _SYNC, (), _SYS, "pto.wait_event", scalar(),
     "`wait_pipe` waits until `set_pipe` has recorded event `event_id` (wait_flag)."),
    ("bar_v", (), unit_rule, no_data, {}, (), _SYS, "pto.barrier", scalar(), "Barrier on the vector pipe."),
    ("bar_m", (), unit_rule, no_data, {}, (), _SYS, "pto.barrier", scalar(), "Barrier on the cube pipe."),
    ("bar_all", (), unit_rule, no_data, {}, (), _SYS, "pto.barrier", scalar(), "Barrier on all pipes."),
    ("tpush_to_aiv", ("tile",), _push_rule((MemorySpace.Acc, MemorySpace.Mat, MemorySpace.Vec)),
     _push(TO_AIV), _SPLIT, (0,), _AIC_SIDE, "pto.tpush", _MOVE,
     "Send a tile from the cube core to the vector cores of its cluster (split by `split`)."),
    ("tpush_to_aic", ("tile",), _push_rule((MemorySpace.Vec,)), _push(TO_AIC), _SPLIT, (0,), _AIV_SIDE,
     "pto.tpush", _MOVE, "Send a Vec tile from a vector core to the cube core of its cluster."),
    ("tpop_from_aic", ("shape", "ring"), _pop_rule(MemorySpace.Vec), _pop(TO_AIV), {"dtype": None, **_SPLIT},
     (), _AIV_SIDE, "pto.tpop", _MOVE, "Receive the next tile sent by the cube core, into Vec (through the "
     "consumer's `ring` of slots in Vec when given)."),
    ("tpop_from_aiv", ("shape", "ring"), _pop_rule(MemorySpace.Mat), _pop(TO_AIC), {"dtype": None, **_SPLIT},
     (), _AIC_SIDE, "pto.tpop", _MOVE, "Receive the next tile sent by the vector core(s), into Mat (through "
     "the consumer's `ring` of slots in Mat when given)."),
    ("tfree_to_aic", ("tile",), _free_rule, _free(TO_AIV), {}, (0,), _AIV_SIDE, "pto.tfree", scalar(),
     "Release the pipe slot of a tile popped from the cube core (it counts as the tile's last read)."),
    ("tfree_to_aiv", ("tile",), _free_rule, _free(TO_AIC), {}, (0,), _AIC_SIDE, "pto.tfree", scalar(),
     "Release the pipe slot of a tile popped from the vector cores (it counts as the tile's last read)."),
]

for _name, _params, _rule, _fn, _attrs, _reads, _traits, _pto, _cost, _doc in _OPS:
    _ring = ("ring",) if "ring" in _params else ()
    register(OpSpec(f"system.{_name}", _params, _rule, _fn, attrs=dict(_attrs), optional=_ring, reads=_reads,
                    writes=(_RING_ARG,) if _ring else (), traits=_traits, pto=_pto, cost=_cost, family="system",
                    dtypes=ANY.text if _params else "", doc=_doc))
