"""Collectives of the distributed namespace `pld.*` (SPEC §8 "Collectives").

Every collective takes window-bound tensors (`pld.DistributedTensor`), writes its `target` in place
and returns it; every rank must call the same collective with the same shapes. They synchronise
through an integer *signal* window (INT32 or INT64) whose shape depends on the algorithm:

| collective | operands | signal |
|---|---|---|
| `allreduce(src[, signal], *, op=Sum, mode="mesh"|"ring", core_num=1)` | `src` reduced over ranks in place | mesh `[NR, 1]`, ring `[2(NR-1), NR]` |
| `barrier(signal)` | rendezvous | `[NR, 1]` |
| `broadcast(target, signal, *, root=0)` | every rank's `target` = root's | `[NR, 1]` |
| `allgather(local, target, signal)` | `target[NR, *local.shape]`, row s = rank s's `local` | `[NR, 1]` |
| `reduce_scatter(target, signal, *, op=Sum)` | `target[NR, ...]`: row `rank` = reduction over ranks of their row `rank` | `[NR, 1]` |
| `all_to_all(input, target, signal)` | `target[s]` = rank s's `input[rank]` | `[NR, 1]` |
| `all_to_all_v(input, target, signal, send_counts, recv_counts)` | `target[s][:n]` = rank s's `input[rank][:n]`, `n` = `recv_counts[s]` (= rank s's `send_counts[rank]`) | `[NR, 1]` |

A kernel's collectives exist only until the `LowerCollectives` pass (`pypto.passes.lower_collectives`)
rewrites them into the primitives (`pld.system.notify` / `wait`, `pld.tile.remote_load` and tile ops);
at host level the host compiler turns them into per-rank dispatches of the builtin chip programs of
`pypto.runtime.dist.builtin`. So they have no PTO instruction; their cost entry is an estimate for
the op as written (the bytes of the first operand over the link), the lowered primitives carry the
real costs. Their compute functions are the *reference semantics* through the running rank's `Comm`
(`pypto.ops.dist_comm`), written independently of the lowering: the same mesh rendezvous on the
signal (cells `[s, 0]`, or `[0, s]` of a ring signal), then every rank reads what it needs from
the peers (`remote_read`) and writes its own target; they leave the signal at zero like the
lowered code.

Effects (`reads` / `writes`), as for the primitives, name what the op does to THIS rank's memory:
the target is written (the lowering pulls peers' data and stores it locally), the signal and the
inputs are read; what peers do to this rank's signal is the runtime's business.

The type rules check what can be checked before the rank count is known: window-bound operands,
signal dtype and rank, static signal dimensions against the algorithm's shape (`[NR, 1]`;
`[2(NR-1), NR]`), a row count `NR` shared by the signal and the `[NR, ...]` operands when both are
static, `op` a `pld.ReduceOp`, `mode` "mesh" or "ring", `core_num` 1 (see `CORE_NUM_NOTE`).
"""

from __future__ import annotations

from typing import Any

import torch

from ..core.enums import ReduceOp
from ..ir.expr import Expr
from ..ir.types import DistributedTensorType, TensorType, TupleType, Type
from .cost import Cost
from .dist_comm import Comm, current_comm
from .registry import OpSpec, OpTypeError, register
from .typing_rules import INT, NUMBER, attr_choice, attr_int, const_dims, kind_of, shape_str

__all__ = ["COLLECTIVES", "MODES", "CORE_NUM_NOTE", "signal_rows", "expect_window"]

MODES = ("mesh", "ring")
CORE_NUM_NOTE = ("core_num > 1 (splitting one collective over several cores) is not supported yet; "
                 "the lowered collective runs on the core of the kernel that calls it")
_SIGNAL_DTYPES = "INT32 or INT64"


def expect_window(args: list[Expr], i: int, name: str) -> DistributedTensorType:
    """Argument `i` as a window-bound tensor. Raises OpTypeError naming `name` otherwise."""
    t = args[i].type
    if isinstance(t, DistributedTensorType):
        return t
    hint = (" (a plain Tensor lives only in this rank's memory: bind it to a window with pld.window(...) "
            "on the host and declare the parameter pld.DistributedTensor[[...], dtype])"
            if isinstance(t, TensorType) else "")
    raise OpTypeError(f"argument '{name}' must be a window-bound pld.DistributedTensor, got {kind_of(t)}{hint}")


def _expect_signal(args: list[Expr], i: int, mode: str) -> DistributedTensorType:
    t = expect_window(args, i, "signal")
    if t.dtype.name not in ("INT32", "INT64"):
        raise OpTypeError(f"argument 'signal' must have dtype {_SIGNAL_DTYPES} (signal cells are integer "
                          f"counters), got {t.dtype.name}")
    want = "[NR, 1]" if mode == "mesh" else "[2*(NR-1), NR]"
    if len(t.shape) != 2:
        raise OpTypeError(f"argument 'signal' must have shape {want} for a {mode} collective, got "
                          f"{shape_str(t.shape)}")
    rows, cols = const_dims(t.shape)
    if mode == "mesh" and cols is not None and cols != 1:
        raise OpTypeError(f"argument 'signal' must have shape [NR, 1] (one cell per rank), got "
                          f"{shape_str(t.shape)}")
    if mode == "ring" and rows is not None and cols is not None and (cols < 2 or rows != 2 * (cols - 1)):
        good = f"[{2 * (cols - 1)}, {cols}] for NR = {cols}" if cols >= 2 else "one column per rank, NR >= 2"
        raise OpTypeError(f"argument 'signal' must have shape [2*(NR-1), NR] for mode=\"ring\" ({good}), "
                          f"got {shape_str(t.shape)}")
    return t


def signal_rows(mode: str, nranks: int) -> list[int]:
    """The signal shape a collective of `mode` needs for `nranks` ranks (SPEC §8)."""
    return [nranks, 1] if mode == "mesh" else [2 * (nranks - 1), nranks]


def _nranks_of_signal(t: TensorType, mode: str) -> int | None:
    rows, cols = const_dims(t.shape)
    return rows if mode == "mesh" else cols


def _expect_ranked(t: TensorType, name: str, nr: int | None) -> None:
    """`t` has a leading rank dimension NR (equal to the signal's when both are static)."""
    if len(t.shape) < 2:
        raise OpTypeError(f"argument '{name}' must have a leading rank dimension, shape [NR, ...] with at "
                          f"least 2 dimensions, got {shape_str(t.shape)}")
    lead = const_dims(t.shape[:1])[0]
    if lead is not None and nr is not None and lead != nr:
        raise OpTypeError(f"argument '{name}' has {lead} rows but the signal is sized for {nr} ranks; "
                          f"both must be [NR, ...] for the same NR")


def _expect_static(t: TensorType, name: str, skip: int = 0) -> None:
    dims = const_dims(t.shape[skip:])
    if any(d is None for d in dims):
        raise OpTypeError(f"argument '{name}' needs static dimensions{' after the first' if skip else ''} "
                          f"(the collective is chunked at compile time), got {shape_str(t.shape)}")


def _attr_reduce(attrs: dict[str, Any]) -> ReduceOp:
    v = attrs.get("op")
    if not isinstance(v, ReduceOp):
        raise OpTypeError(f"attribute 'op' must be one of pld.ReduceOp.Sum, Max, Min, Prod, got {v!r}")
    return v


def _core_num(attrs: dict[str, Any]) -> None:
    n = attr_int(attrs, "core_num", 1)
    if n != 1:
        raise OpTypeError(f"attribute 'core_num' = {n}: {CORE_NUM_NOTE}")


def _numeric(t: TensorType, name: str) -> None:
    if not NUMBER.accepts(t.dtype):
        raise OpTypeError(f"argument '{name}' must have dtype {NUMBER.text}, got {t.dtype.name}")


def _allreduce(args: list[Expr], attrs: dict[str, Any]) -> Type:
    src = expect_window(args, 0, "src")
    _numeric(src, "src")
    _expect_static(src, "src")
    mode = attr_choice(attrs, "mode", MODES)
    _attr_reduce(attrs)
    _core_num(attrs)
    if len(args) > 1:
        _expect_signal(args, 1, mode)
    return src


def _barrier(args: list[Expr], attrs: dict[str, Any]) -> Type:
    _expect_signal(args, 0, "mesh")
    return TupleType(())


def _broadcast(args: list[Expr], attrs: dict[str, Any]) -> Type:
    target = expect_window(args, 0, "target")
    _expect_static(target, "target")
    sig = _expect_signal(args, 1, "mesh")
    root = attr_int(attrs, "root", 0)
    nr = _nranks_of_signal(sig, "mesh")
    if nr is not None and root >= nr:
        raise OpTypeError(f"attribute 'root' = {root} is not a rank of the {nr} the signal is sized for")
    return target


def _allgather(args: list[Expr], attrs: dict[str, Any]) -> Type:
    local = args[0].type
    if not isinstance(local, TensorType):
        raise OpTypeError(f"argument 'local' must be a Tensor, got {kind_of(local)}")
    target = expect_window(args, 1, "target")
    sig = _expect_signal(args, 2, "mesh")
    _expect_ranked(target, "target", _nranks_of_signal(sig, "mesh"))
    _expect_static(local, "local")
    if const_dims(target.shape[1:]) != const_dims(local.shape):
        raise OpTypeError(f"argument 'target' must have shape [NR, *local.shape] = [NR, "
                          f"{shape_str(local.shape)[1:]}, got {shape_str(target.shape)}")
    if local.dtype is not target.dtype:
        raise OpTypeError(f"arguments 'local' and 'target' must have the same dtype, got {local.dtype.name} "
                          f"and {target.dtype.name}")
    return target


def _reduce_scatter(args: list[Expr], attrs: dict[str, Any]) -> Type:
    target = expect_window(args, 0, "target")
    _numeric(target, "target")
    sig = _expect_signal(args, 1, "mesh")
    _expect_ranked(target, "target", _nranks_of_signal(sig, "mesh"))
    _expect_static(target, "target", skip=1)
    _attr_reduce(attrs)
    return target


def _all_to_all_common(args: list[Expr]) -> tuple[TensorType, DistributedTensorType, int | None]:
    inp = expect_window(args, 0, "input")
    target = expect_window(args, 1, "target")
    sig = _expect_signal(args, 2, "mesh")
    nr = _nranks_of_signal(sig, "mesh")
    _expect_ranked(inp, "input", nr)
    _expect_ranked(target, "target", nr)
    _expect_static(inp, "input", skip=1)
    if const_dims(inp.shape[1:]) != const_dims(target.shape[1:]) or len(inp.shape) != len(target.shape):
        raise OpTypeError(f"arguments 'input' and 'target' must both be [NR, ...] with the same row shape, "
                          f"got {shape_str(inp.shape)} and {shape_str(target.shape)}")
    if inp.dtype is not target.dtype:
        raise OpTypeError(f"arguments 'input' and 'target' must have the same dtype, got {inp.dtype.name} "
                          f"and {target.dtype.name}")
    return inp, target, nr


def _all_to_all(args: list[Expr], attrs: dict[str, Any]) -> Type:
    return _all_to_all_common(args)[1]


def _all_to_all_v(args: list[Expr], attrs: dict[str, Any]) -> Type:
    inp, target, nr = _all_to_all_common(args)
    if len(inp.shape) != 2:
        raise OpTypeError(f"argument 'input' must be 2-D [NR, MAX_COUNT] (row p holds what goes to rank p), "
                          f"got {shape_str(inp.shape)}")
    for i, name in ((3, "send_counts"), (4, "recv_counts")):
        t = args[i].type
        if not isinstance(t, TensorType):
            raise OpTypeError(f"argument '{name}' must be a Tensor [NR] of element counts, got {kind_of(t)}")
        if not INT.accepts(t.dtype) or len(t.shape) != 1:
            raise OpTypeError(f"argument '{name}' must be a 1-D integer Tensor [NR], got {t.dtype.name} "
                              f"{shape_str(t.shape)}")
        n = const_dims(t.shape)[0]
        if n is not None and nr is not None and n != nr:
            raise OpTypeError(f"argument '{name}' has {n} entries but the signal is sized for {nr} ranks")
    return target


# ---- reference semantics (compute) -----------------------------------------------------------

class _Rendezvous:
    """The mesh rendezvous of the module docstring over a signal's per-rank cells."""

    def __init__(self, op: str, signal: torch.Tensor, ring: bool = False) -> None:
        self.comm: Comm = current_comm(op)
        self.signal, self.ring, self.g = signal, ring, 0
        self.me, self.n = self.comm.rank, self.comm.nranks

    def cell(self, s: int) -> torch.Tensor:
        return self.signal[0:1, s:s + 1] if self.ring else self.signal[s:s + 1, 0:1]

    def peers(self) -> list[int]:
        return [p for p in range(self.n) if p != self.me]

    def step(self) -> None:
        self.g += 1
        for p in self.peers():
            self.comm.notify(self.cell(self.me), p, 1, "add")
        for p in self.peers():
            self.comm.wait(self.cell(p), self.g, "ge")

    def clear(self) -> None:
        for p in self.peers():
            self.comm.notify(self.cell(p), self.me, -self.g, "add")


def _combine(parts: list[torch.Tensor], op: ReduceOp) -> torch.Tensor:
    """`parts` reduced in rank order (as the lowering does, so the numbers agree bit for bit)."""
    acc = parts[0].clone()
    for x in parts[1:]:
        if op is ReduceOp.Sum:
            acc = acc + x
        elif op is ReduceOp.Prod:
            acc = acc * x
        else:
            acc = torch.maximum(acc, x) if op is ReduceOp.Max else torch.minimum(acc, x)
    return acc.to(parts[0].dtype)


def _allreduce_ref(src: Any, signal: Any = None, op: ReduceOp = ReduceOp.Sum, mode: str = "mesh",
                   core_num: int = 1) -> Any:
    if signal is None:
        from ..core.errors import RuntimeSimError

        raise RuntimeSimError("pld.allreduce without a signal runs only from the host (the builtin program "
                              "allocates one); in a kernel pass a signal window")
    r = _Rendezvous("pld.allreduce", signal, ring=mode == "ring")
    r.step()
    result = _combine([r.comm.remote_read(src, p) for p in range(r.n)], op)
    r.step()   # every rank has read every src: now each may overwrite its own
    src.copy_(result)
    r.clear()
    return src


def _barrier_ref(signal: Any) -> None:
    r = _Rendezvous("pld.barrier", signal)
    r.step()
    r.clear()


def _broadcast_ref(target: Any, signal: Any, root: int = 0) -> Any:
    r = _Rendezvous("pld.broadcast", signal)
    r.step()
    if r.me != root:
        target.copy_(r.comm.remote_read(target, root))
    r.step()
    r.clear()
    return target


def _allgather_ref(local: Any, target: Any, signal: Any) -> Any:
    r = _Rendezvous("pld.allgather", signal)
    target[r.me].copy_(local)
    r.step()
    for s in r.peers():
        target[s].copy_(r.comm.remote_read(target[s], s))
    r.step()
    r.clear()
    return target


def _reduce_scatter_ref(target: Any, signal: Any, op: ReduceOp = ReduceOp.Sum) -> Any:
    r = _Rendezvous("pld.reduce_scatter", signal)
    r.step()
    target[r.me].copy_(_combine([r.comm.remote_read(target[r.me], p) for p in range(r.n)], op))
    r.step()
    r.clear()
    return target


def _all_to_all_ref(input: Any, target: Any, signal: Any) -> Any:
    r = _Rendezvous("pld.all_to_all", signal)
    r.step()
    for s in range(r.n):
        target[s].copy_(r.comm.remote_read(input[r.me], s))
    r.step()
    r.clear()
    return target


def _all_to_all_v_ref(input: Any, target: Any, signal: Any, send_counts: Any, recv_counts: Any) -> Any:
    r = _Rendezvous("pld.all_to_all_v", signal)
    r.step()
    for s in range(r.n):
        n = int(recv_counts[s])
        if n:
            target[s, :n].copy_(r.comm.remote_read(input[r.me, :n], s))
    r.step()
    r.clear()
    return target


# "host": a HOST orchestrator may call them too (they become builtin chip-program dispatches there)
_COLL = frozenset({"collective", "distributed", "host"})
_COST = Cost("link", "MTE2", "in_bytes")   # estimate: argument 0 once over the link (see the docstring)
_QUIET = frozenset({"core_num"})   # printed only when not 1
_SUM = ReduceOp.Sum

# name, params, optional, rule, compute, attrs, reads, writes, doc
COLLECTIVES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], Any, Any, dict[str, Any], tuple[int, ...],
                         tuple[int, ...], str], ...] = (
    ("allreduce", ("src", "signal"), ("signal",), _allreduce, _allreduce_ref,
     {"op": _SUM, "mode": "mesh", "core_num": 1}, (0, 1), (0,),
     "Every rank's `src` becomes the reduction (`op`: Sum, Max, Min, Prod) over all ranks' `src`, "
     "identical on every rank. mode=\"mesh\" (signal [NR, 1]): every rank reads every peer and reduces "
     "locally — few steps, suits small payloads; mode=\"ring\" (signal [2*(NR-1), NR]): reduce-scatter "
     "then allgather around the ring in 2*(NR-1) steps — each rank moves 2*(NR-1)/NR of the data, suits "
     "large payloads (> ~16 KiB). In a kernel `signal` is required; from the host it may be omitted."),
    ("barrier", ("signal",), (), _barrier, _barrier_ref, {}, (0,), (),
     "Rendezvous: no rank passes until every rank has reached it. Signal [NR, 1]."),
    ("broadcast", ("target", "signal"), (), _broadcast, _broadcast_ref, {"root": 0}, (0, 1), (0,),
     "Every rank's `target` becomes rank `root`'s `target`. Signal [NR, 1]."),
    ("allgather", ("local", "target", "signal"), (), _allgather, _allgather_ref, {}, (0, 1, 2), (1,),
     "`target` [NR, *local.shape]: row s becomes rank s's `local`, on every rank. Signal [NR, 1]."),
    ("reduce_scatter", ("target", "signal"), (), _reduce_scatter, _reduce_scatter_ref, {"op": _SUM}, (0, 1),
     (0,),
     "`target` [NR, ...]: row `my_rank` becomes the reduction (`op`) over all ranks of their row "
     "`my_rank`; the other rows are left as they were. Signal [NR, 1]."),
    ("all_to_all", ("input", "target", "signal"), (), _all_to_all, _all_to_all_ref, {}, (0, 1, 2), (1,),
     "`input` and `target` [NR, ...]: `target` row s becomes rank s's `input` row `my_rank` (the row rank "
     "s addressed to me). Signal [NR, 1]."),
    ("all_to_all_v", ("input", "target", "signal", "send_counts", "recv_counts"), (), _all_to_all_v,
     _all_to_all_v_ref, {},
     (0, 1, 2, 3, 4), (1,),
     "Variable-size all_to_all (like MPI_Alltoallv over fixed rows): `input`, `target` [NR, MAX]; the first "
     "`send_counts[p]` elements of `input` row p go to rank p's `target` row `my_rank`; the rest of a "
     "target row is left as it was. Each rank pulls, so the transfer is sized by the receiver's "
     "`recv_counts`: `recv_counts[s]` must equal rank s's `send_counts[my_rank]`. Counts are 1-D integer "
     "tensors [NR]. Signal [NR, 1]."),
)

for _name, _params, _optional, _rule, _ref, _attrs, _reads, _writes, _doc in COLLECTIVES:
    register(OpSpec(f"pld.{_name}", _params, _rule, _ref, attrs=dict(_attrs),
                    optional=_optional, reads=_reads, writes=_writes, traits=_COLL, family="collective",
                    quiet_attrs=_QUIET, cost=_COST, dtypes=f"target: {NUMBER.text}; signal: {_SIGNAL_DTYPES}",
                    doc=_doc))

