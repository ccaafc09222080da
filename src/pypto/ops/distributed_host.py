"""Host-level distributed ops (SPEC §8): what a HOST orchestrator does besides dispatching.

- `pld.world_size()` -> INT64: the number of ranks of the run (`len(device_ids)`).
- `pld.alloc_window_buffer(nbytes)` or `pld.alloc_window_buffer(shape, dtype=...)` -> a
  `WindowBufferType` handle: a zero-initialised, 32-byte aligned slot of every rank's window, for
  one host call (the whole call of a persistent worker).
- `pld.window(buf, shape, dtype=...)` -> `pld.DistributedTensor[[shape], dtype]`: the slot viewed
  as a tensor; a chip orchestration function receiving it sees its own rank's copy.
- `pld.rank_view(x, rank)`: `x[r]` of a world-shaped host tensor `[NR, ...]` inside a host function
  (the leading dimension dropped; a view, so an Out tensor's rows are written in place).

These ops never run on a chip: they have no torch `compute`, and the trait "host" marks them
legal in a HOST orchestrator (the parser rejects every op without it there, and rejects these
"host_only" ops everywhere else). Their `host` field is the Python the host driver
(`orchestration/host_orch.py`, written by `pypto.codegen.host`) runs for them: a `str.format`
template over the operand and attribute names, against the runtime object `rt` of the
distributed runtime (`rt.world_size()`, `rt.alloc_window_buffer(nbytes)`, `rt.window(buf, shape,
dtype_name)`) and this module imported as `_pld` (`window_nbytes`).

A call of a chip orchestration function with `device=r` (SPEC §8 "Host dispatch") is an ordinary
`Call` of the function's GlobalVar whose last argument is the rank and whose attributes hold
(`DEVICE_ATTR`, True); `dispatch_device` / `dispatch_args` take such a call apart.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.dtype import INT64, DataType
from ..ir.expr import Call, ConstInt, Expr, MakeTuple
from ..ir.types import DistributedTensorType, ScalarType, TensorType, Type, WindowBufferType
from .cost import free
from .registry import OpSpec, OpTypeError, register
from .typing_rules import expect_scalar, expect_tensor, int_list

__all__ = ["DEVICE_ATTR", "HOST_TRAIT", "HOST_ONLY_TRAIT", "dispatch_device", "dispatch_args",
           "window_nbytes", "WINDOW_ALIGN", "world_dims"]

DEVICE_ATTR = "device"       # attribute of a dispatch call: its last argument is the rank
HOST_TRAIT = "host"          # legal in a HOST orchestrator
HOST_ONLY_TRAIT = "host_only"  # legal only there
WINDOW_ALIGN = 32            # bytes; every window slot starts on this boundary (SPEC §8)
_HOST = frozenset({HOST_TRAIT, HOST_ONLY_TRAIT})


def dispatch_device(call: Call) -> Expr | None:
    """The rank expression of a `f(..., device=r)` dispatch call, or None for any other call."""
    return call.args[-1] if call.attr(DEVICE_ATTR) else None


def dispatch_args(call: Call) -> tuple[Expr, ...]:
    """The arguments a call passes to its callee (a dispatch call's rank left out)."""
    return call.args[:-1] if call.attr(DEVICE_ATTR) else call.args


def world_dims(func: Any) -> set[Any]:
    """The `pl.dynamic` dimensions of HOST orchestrator `func` bound to the world size: the leading
    dimension of each tensor parameter when it is dynamic (SPEC §8: `NR = pl.dynamic("NR")`)."""
    from ..ir.expr import Var

    out: set[Any] = set()
    for p in func.params:
        t = p.type
        if isinstance(t, TensorType) and t.shape and isinstance(t.shape[0], Var):
            out.add(t.shape[0])
    return out


def window_nbytes(size: Any, dtype: str | None) -> int:
    """Bytes of `pld.alloc_window_buffer(size, dtype=dtype)`: `size` itself without a dtype, else
    the elements of shape `size` times the element size of the dtype named `dtype` ("FP32").
    Raises ValueError for a size that is not positive."""
    from ..core.dtype import dtype_from_name

    if dtype is None:
        n = int(size)
    else:
        dt = dtype_from_name(dtype)
        n = math.prod(int(d) for d in size) * dt.get_bit() // 8
    if n <= 0:
        raise ValueError(f"pld.alloc_window_buffer: the size must be positive, got {n} bytes")
    return n


# ---- type rules --------------------------------------------------------------------------------
def _world_size_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    return ScalarType(INT64)


def _positive_dims(dims: tuple[Expr, ...], what: str) -> None:
    for d in dims:
        if isinstance(d, ConstInt) and d.value <= 0:
            raise OpTypeError(f"{what} must be positive, got {d.value}")


def _alloc_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    dt = attrs.get("dtype")
    if dt is None:
        if isinstance(args[0], MakeTuple):
            raise OpTypeError("argument 'size' is a shape: give its element type too, "
                              "pld.alloc_window_buffer(shape, dtype=pl.FP32)")
        t = expect_scalar(args, 0, "size")
        if not t.dtype.is_int():
            raise OpTypeError(f"argument 'size' (bytes) must be an integer, got {t.dtype.name}")
        _positive_dims((args[0],), "argument 'size' (bytes)")
        return WindowBufferType()
    if not isinstance(dt, DataType):
        raise OpTypeError(f"attribute 'dtype' must be a data type (pl.FP32, ...), got {dt!r}")
    _positive_dims(int_list(args, 0, "size"), "every dimension of 'size'")
    return WindowBufferType()


def _window_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    if not isinstance(args[0].type, WindowBufferType):
        raise OpTypeError(f"argument 'buf' must be a window buffer (pld.alloc_window_buffer(...)), got "
                          f"{type(args[0].type).__name__.replace('Type', '')}")
    dt = attrs.get("dtype")
    if not isinstance(dt, DataType):
        raise OpTypeError("attribute 'dtype' must be a data type, e.g. pld.window(buf, [1, 256], "
                          "dtype=pl.FP32)")
    shape = int_list(args, 1, "shape")
    _positive_dims(shape, "every dimension of 'shape'")
    return DistributedTensorType(shape, dt)


def _rank_view_rule(args: list[Expr], attrs: dict[str, Any]) -> Type:
    t = expect_tensor(args, 0, "x")
    if len(t.shape) < 2:
        raise OpTypeError(f"x[r] selects rank r's part of a world-shaped tensor [NR, ...]; 'x' has "
                          f"rank {len(t.shape)}, so its part would have no dimensions")
    r = expect_scalar(args, 1, "rank")
    if not r.dtype.is_int():
        raise OpTypeError(f"argument 'rank' must be an integer, got {r.dtype.name}")
    return TensorType(tuple(t.shape[1:]), t.dtype)


_DOC_WORLD = ("The number of ranks of the run (`len(device_ids)` of the DistributedConfig), on the host "
              "only (SPEC §8; in a kernel use `pld.nranks(ctx)`).")
_DOC_ALLOC = ("A zero-initialised slot of every rank's window of `size` bytes, or of a tensor of shape "
              "`size` and `dtype`; 32-byte aligned; lives for one host call (SPEC §8).")
_DOC_WINDOW = ("The window slot `buf` viewed as a `pld.DistributedTensor[[shape], dtype]` bound to that "
               "slot on every rank (SPEC §8).")
_DOC_RANK = ("`x[r]` in a HOST orchestrator: rank `r`'s part of a world-shaped host tensor `[NR, ...]`, "
             "the leading dimension dropped (a view; SPEC §8).")

register(OpSpec("pld.world_size", (), _world_size_rule, None, traits=_HOST, cost=free(),
                host="rt.world_size()", family="distributed_host", dtypes="INT64", doc=_DOC_WORLD))
register(OpSpec("pld.alloc_window_buffer", ("size",), _alloc_rule, None, attrs={"dtype": None},
                quiet_attrs=frozenset({"dtype"}),
                traits=_HOST, cost=free(), host="rt.alloc_window_buffer(_pld.window_nbytes({size}, {dtype}))",
                family="distributed_host", dtypes="any (with a shape)", doc=_DOC_ALLOC))
register(OpSpec("pld.window", ("buf", "shape"), _window_rule, None, attrs={"dtype": None},
                traits=_HOST | {"view"}, reads=(0,), cost=free(), host="rt.window({buf}, {shape}, {dtype})",
                family="distributed_host", dtypes="any", doc=_DOC_WINDOW))
register(OpSpec("pld.rank_view", ("x", "rank"), _rank_view_rule, None,
                traits=_HOST | {"view"}, reads=(0,), cost=free(), host="{x}[{rank}]",
                family="distributed_host", dtypes="any", doc=_DOC_RANK))
