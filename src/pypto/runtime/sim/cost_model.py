"""The simulator's cost model: cycles per op, per task and per submission (DESIGN idea 5).

Every number the model uses is in `CONSTANTS`, one row each, with its unit and where it comes from
(a public source, the SoC model of SPEC §6, or "estimate" with the reasoning). Nothing else in the
simulator holds a timing constant.

How a cost is formed (all results are whole cycles of the AI-core clock):

- **Vector ops** (OpSpec trait "vector", or "elementwise"/"reduction"): `vector_issue` +
  ceil(bytes / `vector_bytes_per_cycle`), where bytes is the largest tile the op reads or writes.
- **Cube ops** (trait "cube"): the cube unit consumes one 16 × k0 × 16 block per cycle, k0 being 32
  bytes of the operand dtype (16 FP16, 32 INT8, 8 FP32: the 512-byte fractal of SPEC §6):
  `cube_issue` + ceil(M/16) · ceil(N/16) · ceil(K/k0) / `cube_blocks_per_cycle`.
- **Memory ops** (trait "memory"): `mte_issue` + ceil(bytes / bandwidth of the path), the path being
  (source space, destination space) — DDR → Vec/Mat on MTE2, Vec → DDR on MTE3, Mat → Left/Right/Bias
  on MTE1, Acc → anywhere on the FIXPIPE. DDR transfers are charged whole access granules: each
  contiguous row of the tile costs ceil(row bytes / `soc.ddr_access_granularity`) granules.
- **Cross-core pipe ops** (`pypto.ops.system.PIPE_ROLES`): where the chip moves the tile from the
  sender's memory straight into the receiver's (`SoCModel.pipe_route` "direct", e.g. Acc → Vec on
  Ascend950) the push costs that transfer and the pop `scalar_op` (a flag); through a DDR slot
  buffer ("gm", Ascend910B) the push costs the store to DDR and the pop the load from it. A free
  costs `scalar_op`. A pop assumes the role's usual sender memory (Acc for the cube core, Vec for
  a vector core).
- **Link transfers** (unit "link", the `pld.*` ops of SPEC §8): `link_latency` + ceil(bytes /
  `link_bytes_per_cycle`) on MTE2 (remote reads), MTE3 (remote writes) or the scalar pipe (a
  signal notify: the latency alone).
- **Creation and view ops** cost nothing; any other op (scalar reads, system ops) costs
  `scalar_op`.
- A **task** costs `task_launch` plus the critical path of its ops as executed (loop trips
  counted) on the core's pipes, which overlap: an op starts when its pipe is free and the buffers
  it reads were written / the buffers it writes were read by earlier ops (`pipes.PipeSchedule`).
  `task_cost` gives the serial sum (per-pipe totals, and the cycles of the kernels of a Group call,
  whose clocks pace their cross-core pipe rings). The scheduler may stretch a task when the chip's
  shared DDR bandwidth cannot feed it (below).
- The **orchestrator** spends `orch_submit` per task it submits.

DDR bandwidth is shared: each core moves at most `mte2_bytes_per_cycle` / `mte3_bytes_per_cycle`
(its path through the chip's L2 cache), and all tasks in flight together at most
`ddr_bytes_per_cycle` of HBM traffic: the lines of their reads the L2 cache misses, and their stores
(`l2cache.L2Cache`, `bandwidth.DdrChannel`, applied by the scheduler: a task the chip cannot feed
in time runs longer by its `ddr_wait_cycles`).

Peaks of the chip (`peak_flops_per_cycle`, `peak_ddr_bytes_per_cycle`) follow from the same
constants; the roofline benchmark (benchmarks/roofline.py) compares simulated runs against them.

Per-op cost entries: when an OpSpec carries a `cost` entry (`pypto.ops.cost.Cost`: unit, pipe,
measure, factor), its measured amount of work drives the cycles: vector work in elements (times
the element size, over the vector width), cube work in multiply-accumulates (over the MACs of one
block per cycle), scalar work in instructions, unit "none" is free. Memory traffic always comes from
the call's source and destination spaces (path, bytes, granules) as above, and the traits are the
fallback for ops without an entry or with a dynamically shaped amount (see `op_cost`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ...backend.soc import SoCModel
from ...core.enums import MemorySpace
from ...ir.expr import Call
from ...ir.types import TensorType, TileType
from ...ops.registry import OpSpec
from ...ops.system import pipe_role

__all__ = ["Constant", "CONSTANTS", "const", "OpCost", "TaskCost", "PIPES", "op_cost", "copy_cost",
           "cycles_to_us", "task_cost", "peak_flops_per_cycle", "peak_ddr_bytes_per_cycle",
           "ddr_bytes_of", "ddr_read_write_bytes"]

M = MemorySpace


@dataclass(frozen=True)
class Constant:
    """One number of the cost model: `value` in `unit`, and where it comes from."""

    value: float
    unit: str
    source: str


_HC31 = ("Huawei, 'DaVinci: A Scalable Architecture for Neural Network Computing', Hot Chips 31 "
         "(2019)")

_CANN_INI = ("CANN platform configuration of the Ascend 910B parts (platform_config/Ascend910B*.ini, "
             "[AICoreMemoryRates]), as published in public material")

#  name                  value   unit                         source
CONSTANTS: dict[str, Constant] = {
    "clock_ghz": Constant(1.8, "GHz", "estimate: AI-core clock of the Ascend 910 class parts"),
    "cube_blocks_per_cycle": Constant(1, "16x16xk0 blocks / cycle",
                                      f"{_HC31}: the cube does 16x16x16 FP16 MACs (4096) per cycle"),
    "cube_issue": Constant(32, "cycles", "estimate: cube pipeline fill per matmul instruction"),
    "vector_bytes_per_cycle": Constant(256, "bytes / cycle", f"{_HC31}: 2048-bit vector unit"),
    "vector_issue": Constant(16, "cycles", "estimate: vector pipeline start-up per instruction"),
    "mte_issue": Constant(64, "cycles", "estimate: descriptor set-up per MTE / FIXPIPE transfer"),
    "mte2_bytes_per_cycle": Constant(110, "bytes / cycle",
                                     f"{_CANN_INI}: l2_read_rate = 110 B/cycle per core (MTE2 reads "
                                     "DDR through the L2 cache; L2 misses also take the chip's "
                                     "shared HBM bandwidth, `ddr_bytes_per_cycle`)"),
    "mte3_bytes_per_cycle": Constant(64, "bytes / cycle", f"{_CANN_INI}: ub_to_l2_rate = 64 B/cycle"),
    "ddr_bytes_per_cycle": Constant(888, "bytes / cycle",
                                    "estimate: the whole chip's HBM bandwidth, shared by all cores "
                                    "(`bandwidth.DdrChannel`): ~1.6 TB/s (public figure of the "
                                    "Ascend 910B class, 4 HBM2e stacks) / 1.8 GHz; the platform "
                                    "configuration's ddr_rate, 32 B/cycle per core, times 24 cores "
                                    "is of the same order"),
    "mte1_bytes_per_cycle": Constant(256, "bytes / cycle",
                                     "estimate: L1 -> L0 feeds the cube one 512-byte fractal per "
                                     "2 cycles (the platform configuration gives 512 to L0A, 256 "
                                     "to L0B: the slower for both)"),
    "fixpipe_bytes_per_cycle": Constant(128, "bytes / cycle", "estimate: L0C drain, half of MTE1"),
    "onchip_bytes_per_cycle": Constant(128, "bytes / cycle",
                                       "estimate: Vec <-> Mat / Acc -> Vec copies (Ascend950)"),
    "scalar_op": Constant(8, "cycles", "estimate: one scalar-unit instruction with its operands"),
    "link_latency": Constant(2700, "cycles",
                             "estimate: ~1.5 us one-way latency of a remote access between two NPUs of "
                             "one server over HCCS (published figures are in the 1-3 us range)"),
    "link_bytes_per_cycle": Constant(31, "bytes / cycle",
                                     "estimate: one HCCS link, ~56 GB/s per direction (Ascend 910 class "
                                     "public figure) / 1.8 GHz"),
    "task_launch": Constant(900, "cycles", "estimate: ~0.5 us from dispatch to kernel start"),
    "orch_submit": Constant(360, "cycles", "estimate: ~0.2 us of AICPU time to submit one task"),
}

PIPES: tuple[str, ...] = ("vector", "cube", "mte1", "mte2", "mte3", "fixpipe", "scalar")


def const(name: str) -> float:
    """The value of constant `name`. Raises KeyError naming it."""
    try:
        return CONSTANTS[name].value
    except KeyError:
        raise KeyError(f"the cost model has no constant {name!r}") from None


def cycles_to_us(cycles: float) -> float:
    """Cycles of the AI-core clock in microseconds."""
    return cycles / (const("clock_ghz") * 1e3)


def peak_flops_per_cycle(soc: SoCModel, bits: int = 16) -> float:
    """Peak cube throughput of the whole chip in FLOP per cycle for operands of `bits` bits: every
    cube core completing `cube_blocks_per_cycle` 16 x k0 x 16 blocks (k0 = 32 bytes of K) per cycle,
    a multiply-accumulate counting 2 FLOP. FP16 on Ascend910B: 24 x 4096 x 2 = 196608 FLOP/cycle,
    354 TFLOPS at 1.8 GHz (public figures for the part: ~280-320 TFLOPS FP16, at a lower clock)."""
    k0 = max(1, 256 // bits)
    return soc.num_aic * 16 * 16 * k0 * const("cube_blocks_per_cycle") * 2


def peak_ddr_bytes_per_cycle(soc: SoCModel) -> float:
    """Peak DDR traffic of the whole chip in bytes per cycle: the shared `ddr_bytes_per_cycle`,
    or every core streaming at its own MTE2 rate if that is less."""
    return min(const("ddr_bytes_per_cycle"), (soc.num_aic + soc.num_aiv) * const("mte2_bytes_per_cycle"))


class OpCost(NamedTuple):
    """Cost of one execution of one op: `cycles` on `pipe`; memory ops also move `nbytes` bytes
    along `path` = (source space, destination space). A DDR transfer also records the bytes it is
    charged in whole access granules (`ddr_bytes`) and its number of contiguous `rows`."""

    pipe: str
    cycles: int
    path: tuple[MemorySpace, MemorySpace] | None = None
    nbytes: int = 0
    ddr_bytes: int = 0
    rows: int = 0


FREE = OpCost("scalar", 0)


class TaskCost(NamedTuple):
    """Totals of one task: cycles (launch included), cycles per pipe, bytes per memory path, and
    the executions of each cost site of the kernel (`counts`; None: every site ran once)."""

    cycles: int
    pipe_cycles: dict[str, int]
    path_bytes: dict[tuple[MemorySpace, MemorySpace], int]
    counts: tuple[int, ...] | None = None


def task_cost(costs: list[OpCost] | tuple[OpCost, ...], counts: list[int] | None = None) -> TaskCost:
    """Sum op costs (each executed `counts[i]` times, once when `counts` is None) plus the launch.

    Remembered per (sites, counts) for a tuple of sites (a kernel's, whose tasks often run the same
    counts); the TaskCost returned is shared, like a static kernel's, and must not be modified."""
    launch = int(const("task_launch"))
    if counts is None or not isinstance(costs, tuple):
        return _task_cost(costs, counts, launch)
    key = (id(costs), tuple(counts), launch)
    hit = _TASK_COSTS.get(key)
    if hit is None or hit[0] is not costs:
        if len(_TASK_COSTS) >= 1024:
            _TASK_COSTS.clear()
        hit = _TASK_COSTS[key] = (costs, _task_cost(costs, key[1], launch))
    return hit[1]


_TASK_COSTS: dict[tuple, tuple[tuple[OpCost, ...], TaskCost]] = {}


def _task_cost(costs: list[OpCost] | tuple[OpCost, ...], counts: Sequence[int] | None, launch: int) -> TaskCost:
    pipes: dict[str, int] = {}
    paths: dict[tuple[MemorySpace, MemorySpace], int] = {}
    total = launch
    for i, c in enumerate(costs):
        n = 1 if counts is None else counts[i]
        if not n or (not c.cycles and not c.nbytes):
            continue
        total += n * c.cycles
        pipes[c.pipe] = pipes.get(c.pipe, 0) + n * c.cycles
        if c.path is not None:
            paths[c.path] = paths.get(c.path, 0) + n * c.nbytes
    return TaskCost(total, pipes, paths, tuple(counts) if counts is not None else None)


def ddr_bytes_of(cost: TaskCost) -> int:
    """Bytes a task moved to or from DDR (its memory paths with DDR at one end)."""
    return sum(n for (src, dst), n in cost.path_bytes.items() if src is M.DDR or dst is M.DDR)


def ddr_read_write_bytes(task: Any) -> tuple[int, int]:
    """(bytes its DDR loads were charged in whole access granules, bytes it stored to DDR) of a run
    task (`Task`: its executor's cost sites and the executions of each, `TaskCost.counts`); from
    its memory paths when the executor has no cost sites."""
    cost = task.cost
    sites = getattr(task.executor, "sites", None)
    writes = sum(n for (src, dst), n in cost.path_bytes.items() if dst is M.DDR and src is not M.DDR)
    if sites is None:
        return sum(n for (src, _), n in cost.path_bytes.items() if src is M.DDR), writes
    counts = cost.counts
    reads = 0
    for i, c in enumerate(sites):
        if c.path is not None and c.path[0] is M.DDR:
            reads += (c.ddr_bytes or c.nbytes) * (1 if counts is None else counts[i])
    return reads, writes


# ---- op costs ------------------------------------------------------------------------------------

def _shape(t: Any) -> tuple[int, ...] | None:
    dims = []
    for d in getattr(t, "shape", ()):
        v = getattr(d, "value", None)
        if not isinstance(v, int):
            return None
        dims.append(v)
    return tuple(dims)


def _nbytes(t: Any) -> int:
    shape = _shape(t)
    if shape is None:
        return 0
    return t.dtype.storage_bytes(math.prod(shape))


def _space(t: Any) -> MemorySpace | None:
    if isinstance(t, TileType):
        return t.memory_space
    if isinstance(t, TensorType):
        return M.DDR
    return None


def _pipe_of(path: tuple[MemorySpace, MemorySpace]) -> tuple[str, str]:
    """(pipe, bandwidth constant) of a transfer from path[0] to path[1]."""
    src, dst = path
    if src is M.DDR:
        return "mte2", "mte2_bytes_per_cycle"
    if dst is M.DDR and src is not M.Acc:
        return "mte3", "mte3_bytes_per_cycle"
    if src is M.Acc:
        return "fixpipe", "fixpipe_bytes_per_cycle"
    if src is M.Mat:
        return "mte1", "mte1_bytes_per_cycle"
    return "vector", "onchip_bytes_per_cycle"


def _ddr_rows(t: Any, granule: int) -> tuple[int, int]:
    """(bytes of DDR traffic, contiguous rows) to move tile type `t`: whole access granules per row."""
    shape = _shape(t)
    if not shape:
        return _nbytes(t), 1
    row = t.dtype.storage_bytes(shape[-1])
    rows = math.prod(shape[:-1])
    return rows * math.ceil(row / granule) * granule, rows


def transfer_cost(path: tuple[MemorySpace, MemorySpace], tile_type: Any, soc: SoCModel) -> OpCost:
    """Cost of moving one tile of `tile_type` along `path` (DDR sides in whole granules)."""
    pipe, bw = _pipe_of(path)
    nbytes = _nbytes(tile_type)
    moved, rows = _ddr_rows(tile_type, soc.ddr_access_granularity) if M.DDR in path else (nbytes, 0)
    cycles = int(const("mte_issue")) + math.ceil(moved / const(bw))
    return OpCost(pipe, cycles, path, nbytes, moved if rows else 0, rows)


def copy_cost(space: MemorySpace, nbytes: int) -> OpCost:
    """Cost of an on-chip copy of `nbytes` within `space` (carried-value copies of loops/ifs)."""
    cycles = int(const("vector_issue")) + math.ceil(nbytes / const("vector_bytes_per_cycle"))
    return OpCost("vector", cycles, (space, space), nbytes)


def _memory_cost(spec: OpSpec, call: Call, soc: SoCModel) -> OpCost:
    reads = [call.args[i].type for i in spec.reads if i < len(call.args)]
    src_t = next((t for t in reads if _space(t) is not None), None)
    res = call.result_type
    if isinstance(res, TileType):
        dst_t = res
    else:
        writes = [call.args[i].type for i in spec.writes if i < len(call.args)]
        dst_t = next((t for t in writes if _space(t) is not None), res)
    src, dst = _space(src_t), _space(dst_t)
    if src is None or dst is None:
        return FREE
    # the tile moved: the result of a load / move / extract (a part of its source), the source of a store
    tile_t = dst_t if isinstance(dst_t, TileType) else src_t
    return transfer_cost((src, dst), tile_t, soc)


def _cube_cost(spec: OpSpec, call: Call) -> OpCost:
    res = _shape(call.result_type)
    lhs = None
    for i, spaces in spec.operand_spaces.items():
        if M.Left in spaces and i < len(call.args):
            lhs = call.args[i].type
    if lhs is None:   # no declared Left operand: the first tile argument is the lhs
        lhs = next((a.type for a in call.args if isinstance(a.type, TileType)), None)
    lshape = _shape(lhs) if lhs is not None else None
    if not res or len(res) < 2 or not lshape:
        return OpCost("cube", int(const("cube_issue")))
    m, n, k = res[-2], res[-1], lshape[-1]
    k0 = max(1, 256 // lhs.dtype.storage_bits)   # 32 bytes of K per block
    blocks = math.ceil(m / 16) * math.ceil(n / 16) * math.ceil(k / k0)
    cycles = int(const("cube_issue")) + math.ceil(blocks / const("cube_blocks_per_cycle"))
    return OpCost("cube", cycles)


def _vector_cost(call: Call) -> OpCost:
    sizes = [_nbytes(a.type) for a in call.args if isinstance(a.type, TileType)]
    if isinstance(call.result_type, TileType):
        sizes.append(_nbytes(call.result_type))
    nbytes = max(sizes, default=0)
    return OpCost("vector", int(const("vector_issue")) + math.ceil(nbytes / const("vector_bytes_per_cycle")))


def _elem_bytes(call: Call) -> float:
    for t in (call.result_type, *(a.type for a in call.args)):
        if isinstance(t, (TileType, TensorType)):
            return t.dtype.storage_bits / 8
    return 4.0


def _from_entry(spec: OpSpec, call: Call, soc: SoCModel) -> OpCost | None:
    """Cost from the OpSpec's `cost` entry, or None to derive it from the traits."""
    entry = getattr(spec, "cost", None)
    unit = getattr(entry, "unit", None)
    if unit is None:
        return None
    if unit == "none":
        return FREE
    if unit == "mte":
        return _memory_cost(spec, call, soc)
    from ...ops.cost import work_of

    if unit == "link":   # a transfer to / from another rank (pypto.ops.distributed)
        nbytes = work_of(call).amount or 0
        pipe = {"MTE2": "mte2", "MTE3": "mte3"}.get(entry.pipe, "scalar")  # type: ignore[union-attr]
        return OpCost(pipe, int(const("link_latency")) + math.ceil(nbytes / const("link_bytes_per_cycle")))

    amount = work_of(call).amount
    if amount is None:
        return None
    if unit == "vector":
        nbytes = amount * _elem_bytes(call)
        return OpCost("vector", int(const("vector_issue")) + math.ceil(nbytes / const("vector_bytes_per_cycle")))
    if unit == "cube":   # the MAC rate follows the Left operand's dtype (not an FP32 accumulator's)
        left = [i for i, sp in spec.operand_spaces.items() if M.Left in sp and i < len(call.args)]
        cands = [call.args[i] for i in left] or list(call.args)
        lhs = next((a.type for a in cands if isinstance(a.type, (TileType, TensorType))), None)
        bits = lhs.dtype.storage_bits if lhs is not None else 16
        macs_per_cycle = 16 * 16 * max(1, 256 // bits) * const("cube_blocks_per_cycle")
        return OpCost("cube", int(const("cube_issue")) + math.ceil(amount / macs_per_cycle))
    return OpCost("scalar", math.ceil(amount * const("scalar_op")))


def _pipe_cost(role: Any, call: Call, soc: SoCModel) -> OpCost:
    """Cost of a cross-core pipe op (module docstring)."""
    flag = OpCost("scalar", int(const("scalar_op")))
    if role.kind == "free":
        return flag
    tile = call.args[0].type if role.kind == "push" else call.result_type
    if not isinstance(tile, TileType):
        return flag
    src = (tile.memory_space or M.Vec) if role.kind == "push" else role.sender_space
    dst = role.receiver_space if role.kind == "push" else (tile.memory_space or M.Vec)
    route = soc.pipe_route(src, dst)
    if route == "direct":
        return transfer_cost((src, dst), tile, soc) if role.kind == "push" else flag
    if route == "gm":
        return transfer_cost((src, M.DDR) if role.kind == "push" else (M.DDR, dst), tile, soc)
    return flag


def op_cost(spec: OpSpec, call: Call, soc: SoCModel) -> OpCost:
    """Cost of one execution of `call` (an op of `spec`) on a core of `soc` (see the module doc)."""
    role = pipe_role(spec.name)
    if role is not None:
        return _pipe_cost(role, call, soc)
    cost = _from_entry(spec, call, soc)
    if cost is not None:
        return cost
    traits = spec.traits
    if traits & {"creation", "view"}:
        return FREE
    if "memory" in traits:
        return _memory_cost(spec, call, soc)
    if "cube" in traits:
        return _cube_cost(spec, call)
    if traits & {"vector", "elementwise", "reduction"}:
        return _vector_cost(call)
    return OpCost("scalar", int(const("scalar_op")))
