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
- `tpop_from_aic(shape, dtype, split)` (on AIV, result in Vec) / `tpop_from_aiv(shape, dtype, split)`
  (on AIC, result in Mat): receive the next tile, in send order;
- `tfree_to_aic(tile)` / `tfree_to_aiv(tile)`: give the popped tile's slot back to the producer.
`split` (a `pl.SplitMode`) says how a tile is shared between the two vector cores: NONE (each
receives the whole tile), UP_DOWN (vector core k gets / sends the k-th half of the rows),
LEFT_RIGHT (halves of the columns). In the simulator the pipes are FIFOs of the `PipeChannel`
current in the running thread (the runtime installs one per cluster with `pipe_context`).
"""

from __future__ import annotations

import contextvars
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from ..core.enums import MemorySpace, SplitMode
from ..ir.expr import Expr
from ..ir.types import TileType, TupleType, Type
from .block import current_block
from .cost import Cost, scalar
from .registry import OpSpec, OpTypeError, register
from .typing_rules import ANY, attr_choice, attr_dtype, attr_int, expect_tile, static_ints

__all__ = ["PIPE_NAMES", "PipeChannel", "current_pipes", "pipe_context", "UNIT"]

PIPE_NAMES = ("MTE1", "MTE2", "MTE3", "V", "M", "S", "FIX")
UNIT = TupleType(())
_TO_AIV, _TO_AIC = "AIC->AIV", "AIV->AIC"


class PipeChannel:
    """The cross-core pipes of one cluster: a FIFO per (direction, vector subblock).

    Raises RuntimeError (which the simulator reports at the op's source line) when a pop finds its
    FIFO empty, a popped tile has an unexpected shape, or a free has no popped tile to release.
    """

    def __init__(self) -> None:
        self.fifos: dict[tuple[str, int], deque[Any]] = defaultdict(deque)
        self.popped: dict[str, int] = defaultdict(int)

    def push(self, direction: str, sub: int, value: Any) -> None:
        self.fifos[(direction, sub)].append(value.clone())

    def pop(self, direction: str, sub: int) -> Any:
        q = self.fifos[(direction, sub)]
        if not q:
            raise RuntimeError(f"pipe {direction} (vector core {sub}) is empty: no matching tpush ran "
                               f"before this tpop")
        self.popped[direction] += 1
        return q.popleft()

    def free(self, direction: str) -> None:
        if self.popped[direction] == 0:
            raise RuntimeError(f"tfree on pipe {direction} without a popped tile to release")
        self.popped[direction] -= 1


_CURRENT: contextvars.ContextVar[PipeChannel | None] = contextvars.ContextVar("pypto_pipes", default=None)
_DEFAULT = PipeChannel()


def current_pipes() -> PipeChannel:
    """The PipeChannel of the running cluster (a per-process default outside `pipe_context`)."""
    return _CURRENT.get() or _DEFAULT


@contextmanager
def pipe_context(channel: PipeChannel | None = None) -> Iterator[PipeChannel]:
    token = _CURRENT.set(channel or PipeChannel())
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
        if direction == _TO_AIV:
            for sub, part in enumerate(_halves(tile, split, blk.subblock_num if split is SplitMode.NONE else 2)):
                ch.push(direction, sub, part)
        else:
            ch.push(direction, blk.subblock_idx if split is not SplitMode.NONE else 0, tile)
        return None
    return compute


def _pop(direction: str):
    def compute(shape: tuple, dtype: Any = None, split: SplitMode = SplitMode.NONE) -> Any:
        ch, blk = current_pipes(), current_block()
        if direction == _TO_AIV:
            got = ch.pop(direction, blk.subblock_idx)
        elif split is SplitMode.NONE:
            got = ch.pop(direction, 0)
        else:
            got = torch.cat([ch.pop(direction, 0), ch.pop(direction, 1)], dim=0 if split is SplitMode.UP_DOWN else 1)
        if tuple(got.shape) != tuple(shape):
            raise RuntimeError(f"tpop expected a tile of shape {list(shape)}, the pipe delivered {list(got.shape)}")
        return got
    return compute


def _free(direction: str):
    def compute(tile: Any) -> None:
        current_pipes().free(direction)
        return None
    return compute


def _sync_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    attr_choice(attrs, "set_pipe", PIPE_NAMES)
    attr_choice(attrs, "wait_pipe", PIPE_NAMES)
    attr_int(attrs, "event_id", 0, 7)
    return UNIT


def _unit(args: list[Expr], attrs: dict[str, Any]) -> Type:
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
        return TileType(shape, attr_dtype(attrs, "dtype"), space)
    return rule


def _free_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    expect_tile(args, 0, "tile")
    return UNIT


def _noop(*_: Any, **__: Any) -> None:
    return None


_SYS = frozenset({"system"})
_SYNC = {"set_pipe": "V", "wait_pipe": "MTE3", "event_id": 0}
_SPLIT = {"split": SplitMode.NONE}
_AIC_SIDE, _AIV_SIDE = frozenset({"system", "cube"}), frozenset({"system", "vector"})
_MOVE = Cost("mte", "MTE1", "in_bytes")

_OPS = [  # name, params, rule, compute, attrs, reads, traits, pto, cost, doc
    ("sync_src", (), _sync_rule, _noop, _SYNC, (), _SYS, "pto.record_event", scalar(),
     "`set_pipe` records event `event_id` for `wait_pipe` (set_flag)."),
    ("sync_dst", (), _sync_rule, _noop, _SYNC, (), _SYS, "pto.wait_event", scalar(),
     "`wait_pipe` waits until `set_pipe` has recorded event `event_id` (wait_flag)."),
    ("bar_v", (), _unit, _noop, {}, (), _SYS, "pto.barrier", scalar(), "Barrier on the vector pipe."),
    ("bar_m", (), _unit, _noop, {}, (), _SYS, "pto.barrier", scalar(), "Barrier on the cube pipe."),
    ("bar_all", (), _unit, _noop, {}, (), _SYS, "pto.barrier", scalar(), "Barrier on all pipes."),
    ("tpush_to_aiv", ("tile",), _push_rule((MemorySpace.Acc, MemorySpace.Mat, MemorySpace.Vec)),
     _push(_TO_AIV), _SPLIT, (0,), _AIC_SIDE, "pto.tpush", _MOVE,
     "Send a tile from the cube core to the vector cores of its cluster (split by `split`)."),
    ("tpush_to_aic", ("tile",), _push_rule((MemorySpace.Vec,)), _push(_TO_AIC), _SPLIT, (0,), _AIV_SIDE,
     "pto.tpush", _MOVE, "Send a Vec tile from a vector core to the cube core of its cluster."),
    ("tpop_from_aic", ("shape",), _pop_rule(MemorySpace.Vec), _pop(_TO_AIV), {"dtype": None, **_SPLIT}, (),
     _AIV_SIDE, "pto.tpop", _MOVE, "Receive the next tile sent by the cube core, into Vec."),
    ("tpop_from_aiv", ("shape",), _pop_rule(MemorySpace.Mat), _pop(_TO_AIC), {"dtype": None, **_SPLIT}, (),
     _AIC_SIDE, "pto.tpop", _MOVE, "Receive the next tile sent by the vector core(s), into Mat."),
    ("tfree_to_aic", ("tile",), _free_rule, _free(_TO_AIV), {}, (0,), _AIV_SIDE, "pto.tfree", scalar(),
     "Release the pipe slot of a tile popped from the cube core (it counts as the tile's last read)."),
    ("tfree_to_aiv", ("tile",), _free_rule, _free(_TO_AIC), {}, (0,), _AIC_SIDE, "pto.tfree", scalar(),
     "Release the pipe slot of a tile popped from the vector cores (it counts as the tile's last read)."),
]

for _name, _params, _rule, _fn, _attrs, _reads, _traits, _pto, _cost, _doc in _OPS:
    register(OpSpec(f"system.{_name}", _params, _rule, _fn, attrs=dict(_attrs), reads=_reads, traits=_traits,
                    pto=_pto, cost=_cost, family="system", dtypes=ANY.text if _params else "", doc=_doc))
