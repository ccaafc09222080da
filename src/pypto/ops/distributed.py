"""Distributed primitives `pld.*` (SPEC §8 "Primitives"): one rank's view of symmetric memory and
signals. `import pypto.language.distributed as pld`.

Model: every rank owns a *window* with the same layout; a `pld.DistributedTensor` (IR
`DistributedTensorType`) names the same slice of every rank's window. Peers read and write it
one-sidedly and synchronise through integer signal cells (INT32 / INT64 elements of a window-bound
tensor). Ranks are logical, in `[0, nranks)`.

| op | level | meaning |
|---|---|---|
| `pld.get_comm_ctx(dt)` | host, kernel | the communication context of window-bound `dt` (`pld.CommCtx`) |
| `pld.rank(ctx)`, `pld.nranks(ctx)` | kernel | this rank, the rank count (INT32) |
| `pld.system.notify(target, peer, offsets, value, op=AtomicAdd)` | kernel | add / set `value` in the cell at `offsets` of PEER's copy of `target` |
| `pld.system.wait(signal, offsets, expected, cmp=Eq)` | kernel | block until the OWN cell is == / >= `expected` |
| `pld.system.defer_wait(signal, offsets, expected)` | kernel | the same wait (>=) as a task of its own: consumers order after it with `deps=[tid]` |
| `pld.system.fence()` | kernel | make this rank's earlier remote writes visible before what follows |
| `pld.tile.remote_load(target, peer, offsets, shape, valid_shape=None)` | kernel (tile) | PEER's slice -> a new Vec tile |
| `pld.tile.remote_store(tile, target, peer, offsets, atomic=None_)` | kernel (tile) | a Vec tile -> PEER's slice (or += with `AtomicType.Add`) |
| `pld.tensor.remote_store(src, target, peer, offsets, atomic=None_)` | kernel (tensor) | the same, source in local DDR |
| `pld.tensor.put(dst, peer, src, ...)` / `pld.tensor.get(dst, peer, src, ...)` | kernel (tensor) | local DDR -> PEER's window / PEER's window -> local DDR |

Short forms: `pld.notify`, `pld.wait`, `pld.defer_wait`, `pld.fence`, `pld.remote_load`,
`pld.remote_store` (the tile or tensor form by its first argument), `pld.put`, `pld.get`.

Type rules (located errors at the call): a remote target (`target`, `signal`, put's `dst`, get's
`src`) must be window-bound — a plain `pl.Tensor` there is an error naming the argument; offsets and
shapes have one entry per dimension of their tensor; a signal is INT32 / INT64; `peer`, `value`,
`expected` are integer scalars; put/get with any of `dst_offsets` / `src_offsets` / `shape` need all
three; `pipeline=True` needs `chunk_rows > 0` and `chunk_cols > 0`. Level: every op here except
`get_comm_ctx` runs on the cores only — the parser refuses them in Orchestration code (trait
"orchestration" missing) and in HOST functions (trait "host" missing).

Effects (`OpSpec.reads` / `writes`) name only what the op does to THIS rank's memory: a remote
store, put or notify changes PEER's copy and nothing local, so its target is neither read nor
written here (a kernel may take it as `pl.In`); `wait` reads its own cell; `get` writes its local
`dst` (and returns it, like `tile.store`). What peers do to a window is the runtime's business (the
Comm orders and times it).

Semantics (simulator and torch reference): the compute functions receive this rank's window views
(torch tensors) and reach peers only through the running rank's `Comm`
(`pypto.ops.dist_comm.current_comm`); outside a distributed run they raise a RuntimeSimError
naming the op. A notify is preceded by a fence (the Comm's contract), so data written before it is
visible to the peer before the new signal value. `defer_wait` blocks like `wait` (`Ge`) in the
simulator: its task completes when the cell reaches the value, which is when its TaskId releases
its consumers. `pld.tensor.put/get/remote_store` on DDR tensors run as one transfer in the
simulator; when their local operand lives on chip (a value computed in the kernel, or a slice
region), ConvertTensorToTileOps lowers them to tile ops (`OpSpec.on_chip`): a put / remote_store
becomes `pld.tile.remote_store` of the tile (of its `tile.slice` for a region), a get becomes
`pld.tile.remote_load` written into the tile with `tile.assemble` (added with `tile.add` for
`AtomicType.Add`). On the chip the DDR forms are staged through Vec: the region is moved in `chunk_rows x chunk_cols` blocks (the whole
region when the chunk sizes are 0), each a `tload` into a Vec tile then a remote `tstore`
(put / remote_store) or a remote `tload` then a `tstore` (get); `pipeline=True` double-buffers the
blocks (two Vec tiles, the load of block k+1 overlapping the store of block k).

PTO text (instruction names of this implementation; upstream's are not public):
`pto.comm_ctx`, `pto.comm_rank`, `pto.comm_nranks`, `pto.signal_notify`, `pto.signal_wait`,
`pto.signal_defer_wait`, `pto.comm_fence`, `pto.remote_tload`, `pto.remote_tstore`,
`pto.remote_put`, `pto.remote_get`. Every tensor argument is the partition view of its own box
(`OpSpec.regions`: a signal's single cell, a transfer's region at its own offsets); a put / get is
one `pto.remote_put` / `pto.remote_get` carrying `chunk_rows`, `chunk_cols` and `pipeline`, which
stands for the staged Vec sequence above (the backend expands it; the simulator does not model the
staging buffers, so a transfer needs no Vec space here).

Cost: the data-moving ops are unit "link" (`pypto.ops.cost`): the cycle model charges
`link_latency` + bytes / `link_bytes_per_cycle` (estimates in `runtime/sim/cost_model.CONSTANTS`),
remote reads (remote_load, get) on MTE2 and remote writes (remote_store, put) on MTE3; a notify
costs one link latency on MTE3, so a kernel's pipe schedule starts it only after the remote writes
issued before it (the fence every notify implies); the other ops one scalar instruction. Waiting
itself (how long until a peer's notify arrives) is the multi-rank runtime's clock, not a cost.
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.dtype import INDEX, INT32, INT64
from ..core.enums import AtomicType, MemorySpace, NotifyOp, WaitCmp
from ..ir.expr import ConstInt, Expr
from ..ir.types import CommCtxType, DistributedTensorType, ScalarType, TensorType, TileType, TupleType, Type
from .cost import Cost, scalar
from .dist_comm import current_comm
from .memory import check_in_bounds, check_region, region
from .registry import OnChip, OpSpec, OpTypeError, Step, register
from .typing_rules import (
    ANY,
    expect_scalar,
    expect_tensor,
    expect_tile,
    int_list,
    kind_of,
    shape_str,
    static_ints,
)
from .valid import check_valid_shape, effective_shape, poison_outside, view_for

__all__ = ["SHORT_FORMS", "LINK_LOAD", "LINK_STORE", "window_target", "unbound_window_message"]

UNIT = TupleType(())
_SIGNAL_DTYPES = (INT32, INT64)
LINK_LOAD = Cost("link", "MTE2", "out_bytes")     # a remote read: the bytes arriving
LINK_STORE = Cost("link", "MTE3", "in_bytes")     # a remote write: the bytes of argument 0
_PUT = Cost("link", "MTE3", "xfer_bytes")         # put: the region (or all of dst) sent
_GET = Cost("link", "MTE2", "xfer_bytes")         # get: the region (or all of dst) fetched
_NOTIFY = Cost("link", "MTE3", "zero")            # a signal update: one link latency, no payload, on
#                                                   the write pipe: after the remote writes before it

# DSL short form -> the op it means, by the kind of the first argument ("tile" / "tensor"; "" any)
SHORT_FORMS: dict[str, dict[str, str]] = {
    "notify": {"": "pld.system.notify"},
    "wait": {"": "pld.system.wait"},
    "defer_wait": {"": "pld.system.defer_wait"},
    "fence": {"": "pld.system.fence"},
    "remote_load": {"": "pld.tile.remote_load"},
    "remote_store": {"tile": "pld.tile.remote_store", "tensor": "pld.tensor.remote_store"},
    "put": {"": "pld.tensor.put"},
    "get": {"": "pld.tensor.get"},
}


# ---- type rules ------------------------------------------------------------------------------

def window_target(args: list[Expr], i: int, name: str) -> DistributedTensorType:
    """Argument `i` as a window-bound tensor (SPEC §8: remote ops need a window-bound target)."""
    t = args[i].type
    if isinstance(t, DistributedTensorType):
        return t
    if isinstance(t, TensorType):
        raise OpTypeError(f"argument '{name}' must be a window-bound pld.DistributedTensor (a "
                          f"pld.DistributedTensor parameter, bound on the host with pld.window), got a plain "
                          f"pl.Tensor {shape_str(t.shape)}: other ranks cannot address it")
    raise OpTypeError(f"argument '{name}' must be a window-bound pld.DistributedTensor, got {kind_of(t)}")


def unbound_window_message(param: str, callee: str, arg_type: Type) -> str | None:
    """The error for passing `arg_type` to window-bound parameter `param` of function `callee`:
    a plain tensor cannot be addressed by other ranks (SPEC §8). None when `arg_type` is not a plain
    TensorType (a window-bound argument fits; other kinds are the caller's own type check)."""
    if isinstance(arg_type, DistributedTensorType) or not isinstance(arg_type, TensorType):
        return None
    return (f"argument '{param}' of '{callee}' must be a window-bound pld.DistributedTensor (the parameter is "
            f"declared pld.DistributedTensor), got a plain pl.Tensor {shape_str(arg_type.shape)}: other ranks "
            f"cannot address it; bind it to a window on the host (pld.window) and pass it down")


def _offsets(args: list[Expr], i: int, name: str, target: TensorType, tname: str) -> tuple[Expr, ...]:
    offs = int_list(args, i, name)
    if len(offs) != len(target.shape):
        raise OpTypeError(f"argument '{name}' has {_entries(len(offs))} but '{tname}' has rank {len(target.shape)} "
                          f"(shape {shape_str(target.shape)}): give one offset per dimension")
    return offs


def _entries(n: int) -> str:
    return f"{n} entr{'y' if n == 1 else 'ies'}"


def _int_scalar(args: list[Expr], i: int, name: str) -> None:
    t = expect_scalar(args, i, name)
    if not t.dtype.is_int():
        raise OpTypeError(f"argument '{name}' must be an integer scalar, got {t.dtype.name}")


def _cell(args: list[Expr], tname: str) -> DistributedTensorType:
    """The signal argument 0: window-bound, INT32 or INT64 (its cells are the counters)."""
    t = window_target(args, 0, tname)
    if t.dtype not in _SIGNAL_DTYPES:
        raise OpTypeError(f"argument '{tname}' is a signal: it must have dtype INT32 or INT64, got {t.dtype.name}")
    return t


def _ones(n: int) -> tuple[Expr, ...]:
    return tuple(ConstInt(1, INDEX) for _ in range(n))


def _attr_enum(attrs: dict[str, Any], key: str, cls: type) -> Any:
    v = attrs.get(key)
    if not isinstance(v, cls):
        members = ", ".join(repr(m) for m in cls)  # type: ignore[attr-defined]
        raise OpTypeError(f"attribute '{key}' must be one of {members}, got {v!r}")
    return v


def _comm_ctx_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    window_target(args, 0, "dt")
    return CommCtxType()


def _rank_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    if not isinstance(args[0].type, CommCtxType):
        raise OpTypeError(f"argument 'ctx' must be a pld.CommCtx (from pld.get_comm_ctx), got {kind_of(args[0].type)}")
    return ScalarType(INT32)


def _notify_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = _cell(args, "target")
    _int_scalar(args, 1, "peer")
    offs = _offsets(args, 2, "offsets", t, "target")
    check_in_bounds(t.shape, offs, _ones(len(offs)), "signal")
    _int_scalar(args, 3, "value")
    _attr_enum(attrs, "op", NotifyOp)
    return UNIT


def _wait_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = _cell(args, "signal")
    offs = _offsets(args, 1, "offsets", t, "signal")
    check_in_bounds(t.shape, offs, _ones(len(offs)), "signal")
    _int_scalar(args, 2, "expected")
    if "cmp" in attrs:
        _attr_enum(attrs, "cmp", WaitCmp)
    return UNIT


def _remote_load_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = window_target(args, 0, "target")
    _int_scalar(args, 1, "peer")
    offs = _offsets(args, 2, "offsets", t, "target")
    shape = static_ints(args, 3, "shape")
    if len(shape) != len(t.shape):
        raise OpTypeError(f"argument 'shape' has {_entries(len(shape))} but 'target' has rank {len(t.shape)} "
                          f"(shape {shape_str(t.shape)}): give one size per dimension")
    given = int_list(args, 4, "valid_shape") if len(args) > 4 else None
    if given is not None:
        check_valid_shape(given, shape, "valid_shape")
    check_in_bounds(t.shape, offs, given if given is not None else shape, "target")
    return TileType(shape, t.dtype, MemorySpace.Vec, view=view_for("tile", shape, given))


def _store_like(src: TensorType | TileType, sname: str, args: list[Expr], ti: int, attrs: dict[str, Any]) -> Type:
    t = window_target(args, ti, "target")
    _int_scalar(args, ti + 1, "peer")
    offs = _offsets(args, ti + 2, "offsets", t, "target")
    if len(src.shape) != len(t.shape):
        raise OpTypeError(f"argument '{sname}' has rank {len(src.shape)} but 'target' has rank {len(t.shape)}")
    check_in_bounds(t.shape, offs, effective_shape(src), "target")
    if src.dtype is not t.dtype:
        raise OpTypeError(f"argument '{sname}' has dtype {src.dtype.name} but 'target' has {t.dtype.name}; "
                          f"cast it first")
    _attr_enum(attrs, "atomic", AtomicType)
    return UNIT


def _tile_remote_store_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    tile = expect_tile(args, 0, "tile", (MemorySpace.Vec,))
    return _store_like(tile, "tile", args, 1, attrs)


def _tensor_remote_store_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    src = expect_tensor(args, 0, "src")
    return _store_like(src, "src", args, 1, attrs)


def _chunks(attrs: dict[str, Any]) -> None:
    for k in ("chunk_rows", "chunk_cols"):
        v = attrs.get(k)
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise OpTypeError(f"attribute '{k}' must be a non-negative integer (0: the whole region), got {v!r}")
    if not isinstance(attrs.get("pipeline"), bool):
        raise OpTypeError(f"attribute 'pipeline' must be True or False, got {attrs.get('pipeline')!r}")
    if attrs["pipeline"] and (attrs["chunk_rows"] <= 0 or attrs["chunk_cols"] <= 0):
        raise OpTypeError(f"pipeline=True double-buffers chunks: it needs chunk_rows > 0 and chunk_cols > 0, "
                          f"got chunk_rows={attrs['chunk_rows']}, chunk_cols={attrs['chunk_cols']}")


def _transfer_rule(remote: str):
    """put (`remote` "dst": the peer's window is the destination) / get (`remote` "src")."""
    def rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
        dst_t = window_target(args, 0, "dst") if remote == "dst" else expect_tensor(args, 0, "dst")
        _int_scalar(args, 1, "peer")
        src_t = window_target(args, 2, "src") if remote == "src" else expect_tensor(args, 2, "src")
        _attr_enum(attrs, "atomic", AtomicType)
        _chunks(attrs)
        if src_t.dtype is not dst_t.dtype:
            raise OpTypeError(f"arguments 'dst' and 'src' must have the same dtype, got {dst_t.dtype.name} and "
                              f"{src_t.dtype.name}")
        given = [p for p, i in (("dst_offsets", 3), ("src_offsets", 4), ("shape", 5))
                 if len(args) > i and args[i] is not None]
        if given and len(given) != 3:
            missing = [p for p in ("dst_offsets", "src_offsets", "shape") if p not in given]
            raise OpTypeError(f"a region transfer needs all three of dst_offsets, src_offsets and shape; "
                              f"missing {', '.join(missing)}")
        if not given:
            if len(src_t.shape) != len(dst_t.shape) or not all(
                    a == b for a, b in zip(_consts(src_t.shape), _consts(dst_t.shape))):
                raise OpTypeError(f"without dst_offsets/src_offsets/shape the whole tensor moves: 'dst' "
                                  f"{shape_str(dst_t.shape)} and 'src' {shape_str(src_t.shape)} must have the "
                                  f"same shape")
            return UNIT if remote == "dst" else dst_t
        doffs = _offsets(args, 3, "dst_offsets", dst_t, "dst")
        soffs = _offsets(args, 4, "src_offsets", src_t, "src")
        shape = int_list(args, 5, "shape")
        if len(shape) != len(dst_t.shape):
            raise OpTypeError(f"argument 'shape' has {_entries(len(shape))} but 'dst' has rank {len(dst_t.shape)}")
        check_in_bounds(dst_t.shape, doffs, shape, "dst")
        check_in_bounds(src_t.shape, soffs, shape, "src")
        return UNIT if remote == "dst" else dst_t
    return rule


def _consts(shape: tuple[Expr, ...]) -> tuple[Any, ...]:
    return tuple(d.value if isinstance(d, ConstInt) else getattr(d, "name", d) for d in shape)


def _fence_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    return UNIT


# ---- compute (torch semantics through the running rank's Comm) --------------------------------

def _cell_view(t: torch.Tensor, offsets: tuple) -> torch.Tensor:
    check_region("signal", tuple(t.shape), offsets, tuple(1 for _ in offsets))
    return t[region(offsets, tuple(1 for _ in offsets))]


def _get_comm_ctx(dt: Any) -> int:
    return 0   # one communicator per distributed run: the handle only names it


def _rank(ctx: Any) -> int:
    return current_comm("pld.rank").rank


def _nranks(ctx: Any) -> int:
    return current_comm("pld.nranks").nranks


def _notify(target: Any, peer: int, offsets: tuple, value: int, op: NotifyOp = NotifyOp.AtomicAdd) -> None:
    comm = current_comm("pld.system.notify")
    comm.notify(_cell_view(target, offsets), int(peer), int(value), "add" if op is NotifyOp.AtomicAdd else "set")


def _wait(signal: Any, offsets: tuple, expected: int, cmp: WaitCmp = WaitCmp.Eq) -> None:
    comm = current_comm("pld.system.wait")
    comm.wait(_cell_view(signal, offsets), int(expected), "eq" if cmp is WaitCmp.Eq else "ge")


def _defer_wait(signal: Any, offsets: tuple, expected: int) -> None:
    current_comm("pld.system.defer_wait").wait(_cell_view(signal, offsets), int(expected), "ge")


def _fence() -> None:
    current_comm("pld.system.fence").fence()


def _remote_load(target: Any, peer: int, offsets: tuple, shape: tuple, valid_shape: tuple | None = None) -> Any:
    comm = current_comm("pld.tile.remote_load")
    box = tuple(shape) if valid_shape is None else tuple(valid_shape)
    check_region("remote_load", tuple(target.shape), offsets, box)
    data = comm.remote_read(target[region(offsets, box)], int(peer))
    if valid_shape is None:
        return data
    out = torch.empty(tuple(shape), dtype=target.dtype)
    out[tuple(slice(0, v) for v in box)] = data
    return poison_outside(out, box)


def _remote_load_into(dst: Any, target: Any, peer: int, offsets: tuple, shape: tuple,
                      valid_shape: tuple | None = None) -> Any:
    """`_remote_load` written straight into the result tile `dst` (the simulator's `compute_into`):
    with a Comm that offers `remote_read_into`, the peer's region is copied once, not cloned first.
    Otherwise (or with `valid_shape`) it returns `_remote_load`'s tile for the caller to copy."""
    comm = current_comm("pld.tile.remote_load")
    read_into = getattr(comm, "remote_read_into", None)
    if valid_shape is not None or read_into is None or tuple(dst.shape) != tuple(shape):
        return _remote_load(target, peer, offsets, shape, valid_shape)
    check_region("remote_load", tuple(target.shape), offsets, tuple(shape))
    read_into(target[region(offsets, tuple(shape))], int(peer), dst)
    return None


def _write_remote(op: str, data: Any, target: Any, peer: int, offsets: tuple, atomic: AtomicType) -> None:
    comm = current_comm(op)
    check_region(op.rsplit(".", 1)[-1], tuple(target.shape), offsets, tuple(data.shape))
    comm.remote_write(target[region(offsets, tuple(data.shape))], int(peer), data, atomic is AtomicType.Add)


def _tile_remote_store(tile: Any, target: Any, peer: int, offsets: tuple, atomic: AtomicType = AtomicType.None_,
                       valid: tuple | None = None) -> None:
    vs = tuple(valid[0]) if valid and valid[0] is not None else tuple(tile.shape)
    _write_remote("pld.tile.remote_store", tile[tuple(slice(0, v) for v in vs)], target, peer, offsets, atomic)


def _tensor_remote_store(src: Any, target: Any, peer: int, offsets: tuple,
                         atomic: AtomicType = AtomicType.None_) -> None:
    _write_remote("pld.tensor.remote_store", src, target, peer, offsets, atomic)


def _regions(dst: Any, src: Any, dst_offsets: tuple | None, src_offsets: tuple | None,
             shape: tuple | None, what: str) -> tuple[Any, Any]:
    if shape is None:
        return dst, src
    check_region(f"{what} dst", tuple(dst.shape), dst_offsets, shape)
    check_region(f"{what} src", tuple(src.shape), src_offsets, shape)
    return dst[region(dst_offsets, shape)], src[region(src_offsets, shape)]


def _put(dst: Any, peer: int, src: Any, dst_offsets: tuple | None = None, src_offsets: tuple | None = None,
         shape: tuple | None = None, atomic: AtomicType = AtomicType.None_, **_: Any) -> None:
    comm = current_comm("pld.tensor.put")
    d, s = _regions(dst, src, dst_offsets, src_offsets, shape, "put")
    comm.remote_write(d, int(peer), s, atomic is AtomicType.Add)


def _get(dst: Any, peer: int, src: Any, dst_offsets: tuple | None = None, src_offsets: tuple | None = None,
         shape: tuple | None = None, atomic: AtomicType = AtomicType.None_, **_: Any) -> Any:
    comm = current_comm("pld.tensor.get")
    d, s = _regions(dst, src, dst_offsets, src_offsets, shape, "get")
    data = comm.remote_read(s, int(peer))
    if atomic is AtomicType.Add:
        d.add_(data)
    else:
        d.copy_(data)
    return dst


# ---- lowering when an operand lives on chip (ConvertTensorToTileOps, OpSpec.on_chip) ----------

def _zeros(t: Type) -> list[int]:
    return [0] * len(t.shape)  # type: ignore[attr-defined]


def _remote_store_on_chip(args: list[Expr], attrs: dict[str, Any]) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """`pld.tensor.remote_store(src_tile, ...)` is `pld.tile.remote_store` of the tile."""
    return [("pld.tile.remote_store", list(args[:4]), {"atomic": attrs["atomic"]})]


def _put_on_chip(args: list[Expr], attrs: dict[str, Any]) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """`pld.tensor.put(dst, peer, src_tile[, dst_offsets, src_offsets, shape])`: the tile (or its
    region, `tile.slice`) remote-stored at `dst_offsets` of PEER's `dst`."""
    dst, peer, src = args[:3]
    at = {"atomic": attrs["atomic"]}
    if len(args) <= 3:
        return [("pld.tile.remote_store", [src, dst, peer, _zeros(dst.type)], at)]
    doffs, soffs, shape = args[3:6]
    return [("tile.slice", [src, shape, soffs], {}), ("pld.tile.remote_store", [Step(0), dst, peer, doffs], at)]


def _get_on_chip(args: list[Expr], attrs: dict[str, Any]) -> list[tuple[str, list[Any], dict[str, Any]]]:
    """`pld.tensor.get(dst_tile, peer, src[, ...])`: `pld.tile.remote_load` of the region, written
    (`tile.assemble`) or added (`tile.add`) into the tile."""
    dst, peer, src = args[:3]
    add = attrs["atomic"] is AtomicType.Add
    if len(args) <= 3:
        load = ("pld.tile.remote_load", [src, peer, _zeros(src.type), list(dst.type.shape)], {})  # type: ignore[attr-defined]
        return [load, ("tile.add", [dst, Step(0)], {})] if add else [load]
    doffs, soffs, shape = args[3:6]
    steps: list[tuple[str, list[Any], dict[str, Any]]] = [("pld.tile.remote_load", [src, peer, soffs, shape], {})]
    if add:
        return steps + [("tile.slice", [dst, shape, doffs], {}), ("tile.add", [Step(1), Step(0)], {}),
                        ("tile.assemble", [dst, Step(2), doffs], {})]
    return steps + [("tile.assemble", [dst, Step(0), doffs], {})]


_ON_CHIP = {
    "pld.tensor.remote_store": OnChip((0,), _remote_store_on_chip),
    "pld.tensor.put": OnChip((2,), _put_on_chip),
    "pld.tensor.get": OnChip((0,), _get_on_chip),
}


# ---- registration ----------------------------------------------------------------------------

_KERNEL = frozenset({"system", "distributed"})
_TRANSFER = {"atomic": AtomicType.None_, "chunk_rows": 0, "chunk_cols": 0, "pipeline": False}
_XFER_PARAMS = ("dst", "peer", "src", "dst_offsets", "src_offsets", "shape")
_XFER_OPT = ("dst_offsets", "src_offsets", "shape")
_SIG = "signal cells: INT32, INT64"

# the box of each tensor argument, for PTO partition views (OpSpec.regions): (offsets arg, box)
_XFER_REGIONS: dict[int, tuple[int | None, int | str | None]] = {0: (3, 5), 2: (4, 5)}
_REGIONS: dict[str, dict[int, tuple[int | None, int | str | None]]] = {
    "pld.system.notify": {0: (2, "one")},
    "pld.system.wait": {0: (1, "one")},
    "pld.system.defer_wait": {0: (1, "one")},
    "pld.tensor.remote_store": {0: (None, None), 1: (3, 0)},
    "pld.tensor.put": _XFER_REGIONS,
    "pld.tensor.get": _XFER_REGIONS,
}

_OPS = [  # name, params, optional, rule, compute, attrs, reads, writes, traits, pto, cost, dtypes, doc
    ("pld.get_comm_ctx", ("dt",), (), _comm_ctx_rule, _get_comm_ctx, {}, (), (), frozenset({"distributed", "host"}),
     "pto.comm_ctx", scalar(), ANY.text,
     "The communication context (`pld.CommCtx`) of window-bound tensor `dt`, for `pld.rank` / `pld.nranks`."),
    ("pld.rank", ("ctx",), (), _rank_rule, _rank, {}, (), (), _KERNEL, "pto.comm_rank", scalar(), "INT32 result",
     "This rank's index in [0, nranks), as an INT32 scalar."),
    ("pld.nranks", ("ctx",), (), _rank_rule, _nranks, {}, (), (), _KERNEL, "pto.comm_nranks", scalar(),
     "INT32 result", "The number of ranks of the run, as an INT32 scalar."),
    ("pld.system.notify", ("target", "peer", "offsets", "value"), (), _notify_rule, _notify,
     {"op": NotifyOp.AtomicAdd}, (), (), _KERNEL, "pto.signal_notify", _NOTIFY, _SIG,
     "Add (`op=pld.NotifyOp.AtomicAdd`, atomically; `value` may be negative) or set (`pld.NotifyOp.Set`) "
     "`value` in the cell at `offsets` of PEER's copy of window-bound signal `target`; the rank's earlier "
     "remote writes are visible to PEER first (a fence precedes it)."),
    ("pld.system.wait", ("signal", "offsets", "expected"), (), _wait_rule, _wait, {"cmp": WaitCmp.Eq}, (0,), (),
     _KERNEL, "pto.signal_wait", scalar(), _SIG,
     "Block until this rank's own cell at `offsets` of `signal` is == (`cmp=pld.WaitCmp.Eq`) or >= "
     "(`pld.WaitCmp.Ge`) `expected`; the cell is not changed."),
    ("pld.system.defer_wait", ("signal", "offsets", "expected"), (), _wait_rule, _defer_wait, {}, (0,), (),
     _KERNEL, "pto.signal_defer_wait", scalar(), _SIG,
     "Wait (>=) as a task of its own: submitted with `pl.submit`, its TaskId completes when the own cell "
     "reaches `expected`, and consumers order after it with `deps=[tid]` (the simulator blocks the "
     "waiter task until then)."),
    ("pld.system.fence", (), (), _fence_rule, _fence, {}, (), (), _KERNEL, "pto.comm_fence", scalar(), "",
     "Make this rank's earlier remote writes visible to their peers before anything after it."),
    ("pld.tile.remote_load", ("target", "peer", "offsets", "shape", "valid_shape"), ("valid_shape",),
     _remote_load_rule, _remote_load, {}, (), (), _KERNEL, "pto.remote_tload", LINK_LOAD, ANY.text,
     "Load the region at `offsets` of size `shape` of PEER's copy of window-bound `target` into a new Vec "
     "tile; with `valid_shape` only that leading part is read and valid."),
    ("pld.tile.remote_store", ("tile", "target", "peer", "offsets"), (), _tile_remote_store_rule,
     _tile_remote_store, {"atomic": AtomicType.None_}, (0,), (), _KERNEL, "pto.remote_tstore", LINK_STORE,
     ANY.text,
     "Store the valid region of a Vec tile at `offsets` of PEER's copy of window-bound `target` "
     "(`atomic=pld.AtomicType.Add`: add it atomically instead)."),
    ("pld.tensor.remote_store", ("src", "target", "peer", "offsets"), (), _tensor_remote_store_rule,
     _tensor_remote_store, {"atomic": AtomicType.None_}, (0,), (), _KERNEL, "pto.remote_tstore", LINK_STORE,
     ANY.text,
     "Store local DDR tensor `src` at `offsets` of PEER's copy of window-bound `target` (or add it, "
     "`atomic=pld.AtomicType.Add`), staged through Vec on the chip."),
    ("pld.tensor.put", _XFER_PARAMS, _XFER_OPT, _transfer_rule("dst"), _put, _TRANSFER, (2,), (), _KERNEL,
     "pto.remote_put", _PUT, ANY.text,
     "Copy local DDR `src` (or its region at `src_offsets` of size `shape`) into PEER's copy of window-bound "
     "`dst` (at `dst_offsets`), staged through Vec in `chunk_rows` x `chunk_cols` blocks (`pipeline=True`: "
     "double-buffered); `atomic=pld.AtomicType.Add` adds instead."),
    ("pld.tensor.get", _XFER_PARAMS, _XFER_OPT, _transfer_rule("src"), _get, _TRANSFER, (), (0,), _KERNEL,
     "pto.remote_get", _GET, ANY.text,
     "Copy PEER's copy of window-bound `src` (or its region at `src_offsets` of size `shape`) into local DDR "
     "`dst` (at `dst_offsets`), staged through Vec in `chunk_rows` x `chunk_cols` blocks; returns `dst`."),
]

for (_name, _params, _opt, _rule, _fn, _attrs, _reads, _writes, _traits, _pto, _cost, _dtypes,
     _doc) in _OPS:
    register(OpSpec(_name, _params, _rule, _fn, attrs=dict(_attrs), optional=_opt, reads=_reads, writes=_writes,
                    regions=_REGIONS.get(_name, {}), on_chip=_ON_CHIP.get(_name),
                    traits=_traits, pto=_pto, cost=_cost, family="distributed", dtypes=_dtypes, doc=_doc,
                    valid_args=(0,) if _name == "pld.tile.remote_store" else (),
                    compute_into=_remote_load_into if _name == "pld.tile.remote_load" else None,
                    quiet_attrs=frozenset({"chunk_rows", "chunk_cols", "pipeline"}) if "chunk_rows" in _attrs
                    else frozenset()))
