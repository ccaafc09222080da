"""Block shapes for TileTensorBlocks: the on-chip bytes one block of a tensor-level chain needs, and
the deterministic choice of the block shape (issue 11 "Block shapes follow the SoC model"; SPEC §5
MemoryReuse / AllocateMemoryAddr, §6 capacities and DDR granularity).

**Footprint.** The bytes a candidate kernel needs are measured, not estimated: the candidate (the
blocked InCore function as TileTensorBlocks would emit it) is lowered by the same passes the
Default pipeline runs after TileTensorBlocks, up to MemoryReuse (`LOWERING`), and the result is,
per memory space, the bytes MemoryReuse packs the tiles into — the peak of the live tiles as the
allocator will place them (liveness over the lowered op chain: an input tile lives from its load to
its last use, a reduction's scratch tile only at its op, an elementwise result takes the buffer of
an operand that dies there). So every temporary the lowering adds (scratch tiles, casts,
broadcasts) is counted, and a block that fits here fits AllocateMemoryAddr.

**Refused early** (`fits_core`, the yes/no question the block search asks): a candidate that
surely does not fit is refused as soon as its tiles have their memory spaces (after
InferTileMemorySpace, the fourth of `LOWERING`), without the rest of the lowering, when every tile
is in Vec (a vector kernel: ExpandMixedKernel leaves it alone) and its largest tile — plus, when
double buffering, every loaded tile — holds more elements' bytes (`tile_bytes`) than Vec. The answer
is the one the whole lowering gives: the later passes keep each tile's elements, memory space and
every load (ResolveBackendOpLayouts only re-lays out column vectors), InitMemRef sizes a buffer at
least at its dense bytes, and MemoryReuse packs every buffer at its own size or more.

**Double buffering.** A kernel that runs several blocks one after another (a column-block loop, or a
row-block loop kept inside the kernel) leaves room for a second copy of each block's loaded tiles,
so the loads of the next block can overlap the computation of this one: it fits when
`packed(Vec) + loads ≤ capacity(Vec)`. A kernel that computes a single block (one parallel task per
row block) has nothing to prefetch: it fits when `packed(Vec) ≤ capacity(Vec)`. Every other space
(Mat, Left, Right, Acc, Bias) must hold its packed bytes.

**Choice** (`choose_blocks`), for a chain of `R × C` (a `pl.dynamic` extent counts as unbounded):
columns — all of C when `min(R, 8)` whole rows fit; else (not for an argmax / argmin, whose rows stay
whole; other row reductions accumulate across column blocks, `reduce_blocks`) the largest
`unit × 2^k < C` columns that fit with `min(R, 8)` rows, `unit` being the DDR access granularity in
elements of the widest dtype (512 B on 910B, 128 B on 950); rows — all of R when they fit (static
R), else the largest multiple of 8 below R that fits (found by a binary search over powers of two,
then over the multiples of 8 up to twice the power found; any count when fewer than 8 fit); for a
static R then the smallest multiple of 8 that needs no more blocks (e.g. 256 rows with 46 fitting:
40, not 32: 7 blocks rather than 8, the last one partial; 1000 rows with 151 fitting: 144, 7 blocks
  of 144 or fewer rows). Fewer, larger blocks win
on the simulated chip: every task costs a launch and an orchestrator submission
(docs/performance.md), so the largest block that fits is taken.

**Perf hint PH008** (`poor_shape_hint`): when the chosen block's rows are narrower than the DDR
access granule (each block row then moves a whole granule: the tensors' innermost dimension is too
short, or Vec holds no wider block) or it has fewer than 8 rows while the chain has more (Vec holds
no taller one), the pass reports it in `report/perf_hints.log` with the numbers and what to change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..backend import SoCModel
from ..core.diagnostics import Diagnostic
from ..core.dtype import DataType
from ..core.enums import MemorySpace
from ..core.errors import PyPTOError
from ..core.span import Span
from ..ir.expr import Call, ConstInt, Expr, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt
from ..ir.types import TensorType, TileType, num_elements
from ..ir.visitor import IRVisitor
from ..ops import get_op
from .base import Pass, PassContext
from .convert_tensor_to_tile_ops import SPECIAL_LOWERINGS, ConvertTensorToTileOps
from .expand_mixed_kernel import ExpandMixedKernel
from .flatten_tile_nd_to_2d import FlattenTileNdTo2D
from .infer_tile_memory_space import InferTileMemorySpace
from .init_memref import InitMemRef
from .legalize_tile_cast import LegalizeTileCast
from .memory_reuse import MemoryReuse, reuse_plan
from .resolve_backend_op_layouts import ResolveBackendOpLayouts
from .tile_layout import tile_bytes

__all__ = ["BlockPlan", "Footprint", "LOWERING", "footprint", "fits_core", "choose_blocks", "poor_shape_hint",
           "MIN_ROWS"]

# The passes of the Default pipeline between TileTensorBlocks and AllocateMemoryAddr.
LOWERING: tuple[type[Pass], ...] = (ConvertTensorToTileOps, FlattenTileNdTo2D, LegalizeTileCast,
                                    InferTileMemorySpace, ResolveBackendOpLayouts, ExpandMixedKernel,
                                    InitMemRef, MemoryReuse)
MIN_ROWS = 8   # rows a block keeps before its columns are split
_PLACED = LOWERING.index(InferTileMemorySpace) + 1   # LOWERING[:_PLACED]: every tile has its memory space


@dataclass(frozen=True)
class BlockPlan:
    """The block shape chosen for an `R × C` chain: `rows` × `cols` per block."""

    rows: int
    cols: int


@dataclass(frozen=True)
class Footprint:
    """What one lowered candidate kernel needs: `packed[space]`, the bytes MemoryReuse packs its
    tiles of `space` into (the largest over the kernels ExpandMixedKernel makes), and `loads`, the
    bytes of the tiles it loads from DDR (`tile.load` results, counted once each)."""

    packed: dict[MemorySpace, int] = field(default_factory=dict)
    loads: int = 0

    def over(self, capacity: Callable[[MemorySpace], int], double_buffer: bool) -> list[MemorySpace]:
        """The spaces that do not hold their packed bytes (Vec also a second copy of the loads when
        `double_buffer`); module docstring "Double buffering"."""
        return [space for space, used in self.packed.items()
                if used + (self.loads if double_buffer and space is MemorySpace.Vec else 0) > capacity(space)]

    def fits(self, capacity: Callable[[MemorySpace], int], double_buffer: bool) -> bool:
        """True when every space holds what it needs (`over` is empty)."""
        return not self.over(capacity, double_buffer)


class _Loads(IRVisitor):
    """Bytes of the loaded tiles (`tile.load` results, each once) of the visited kernels, at the
    sizes of their buffers after MemoryReuse (`plan`: MemoryReuse's plan of the kernel visited)."""

    def __init__(self) -> None:
        self.bytes = 0
        self.seen: set[int] = set()
        self.plan: dict[tuple[MemorySpace, int], tuple[int, int]] | None = None

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        v, t = s.var, s.var.type
        if isinstance(s.value, Call) and s.value.op == "tile.load" and isinstance(t, TileType) \
                and t.memref is not None and id(v) not in self.seen:
            self.seen.add(id(v))
            m = t.memref
            self.bytes += m.size if self.plan is None else self.plan[(m.memory_space, m.id)][1]
        super().visit_AssignStmt(s)


class _VecTiles(IRVisitor):
    """Dense bytes (`tile_bytes`) of the tiles a kernel lowered up to InferTileMemorySpace defines:
    the largest and the sum of the loaded ones; `all_vec` False when a tile is elsewhere than Vec."""

    def __init__(self) -> None:
        self.largest = self.loads = 0
        self.all_vec = True

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        t = s.var.type
        if isinstance(t, TileType):
            if t.memory_space is not MemorySpace.Vec or not all(isinstance(d, ConstInt) for d in t.shape):
                self.all_vec = False
            else:
                n = tile_bytes(t)
                self.largest = max(self.largest, n)
                if isinstance(s.value, Call) and s.value.op == "tile.load":
                    self.loads += n
        super().visit_AssignStmt(s)


class _LoadedBlocks(IRVisitor):
    """Tensor-level: the dense bytes of each tensor parameter or slice of one (a DDR block) that an
    op of the vector unit reads, or `tensor.assemble` stores — ConvertTensorToTileOps loads each
    such block once into a Vec tile of its shape (`as_tile`; a slice is a `region` until then)."""

    def __init__(self, params: tuple[Var, ...]) -> None:
        self.params = set(params)
        # DDR block (tensor parameter or slice of one, of static shape) -> its dense bytes
        self.blocks: dict[Var, int] = {p: _dense_bytes(p.type) for p in params if _dense_bytes(p.type)}
        self.loaded: dict[Var, int] = {}   # those read on the vector unit or stored

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        v = s.value
        if isinstance(v, Call) and isinstance(v.op, str) and v.op.startswith("tensor."):
            spec = get_op(v.op)
            if spec.lowering == "region":
                if v.args and v.args[0] in self.params and _dense_bytes(s.var.type):
                    self.blocks[s.var] = _dense_bytes(s.var.type)
            elif spec.lowering == "store":
                self._read(v.args[1:2])
            elif spec.lowering not in SPECIAL_LOWERINGS and spec.tile_op is not None \
                    and not get_op(spec.tile_op).has_trait("cube"):
                self._read(v.args)
        super().visit_AssignStmt(s)

    def _read(self, args: tuple[Expr, ...]) -> None:
        for a in args:
            if isinstance(a, Var) and a in self.blocks:
                self.loaded[a] = self.blocks[a]


def _dense_bytes(t: object) -> int:
    """Dense bytes of a tensor type of static shape; 0 for any other type."""
    if isinstance(t, TensorType) and all(isinstance(d, ConstInt) for d in t.shape):
        return t.dtype.storage_bytes(num_elements(t))
    return 0


def _blocks_surely_over(func: Function, vec: int, double_buffer: bool) -> bool:
    """True when tensor-level `func` surely does not fit `vec` bytes of Vec, before any lowering:
    the largest DDR block it loads into Vec — plus, when double buffering, all of them — is above
    `vec` (module docstring "Refused early"; each becomes a Vec tile and a load of at least its bytes)."""
    blocks = _LoadedBlocks(func.params)
    blocks.visit_stmt(func.body)
    sizes = blocks.loaded.values()
    return bool(sizes) and max(sizes) + (sum(sizes) if double_buffer else 0) > vec


def _surely_over(program: Program, vec: int, double_buffer: bool) -> bool:
    """True when `program`, lowered up to InferTileMemorySpace, cannot fit `vec` bytes of Vec
    whatever the rest of the lowering does (module docstring "Refused early")."""
    tiles = _VecTiles()
    for f in program.functions:
        tiles.visit_function(f)
    return tiles.all_vec and tiles.largest + (tiles.loads if double_buffer else 0) > vec


def _footprint(func: Function, ctx: PassContext, stop: Callable[[Program], bool] | None = None) -> Footprint | None:
    """The footprint of `func` alone lowered by `LOWERING` for `ctx.backend_type` (with the records
    of a fresh context); None when a pass refuses it (PyPTOError) or `stop` says so once the tiles
    are placed (after InferTileMemorySpace)."""
    sub = PassContext(ctx.backend_type)
    program = Program(name=f"{func.name}_block", functions=(func,))
    try:
        for i, cls in enumerate(LOWERING[:-1]):  # MemoryReuse: its plan is enough (`_measure`)
            program = cls().run(program, sub)
            if i + 1 == _PLACED and stop is not None and stop(program):
                return None
        return _measure(program, sub)
    except PyPTOError:
        return None


def fits_core(func: Function, ctx: PassContext, double_buffer: bool) -> bool:
    """True when InCore function `func` (tensor-level), lowered, fits one core of `ctx.soc`:
    `footprint(func, ctx)` is not None and `fits(capacity, double_buffer)` — the same answer, found
    sooner for a candidate that surely does not fit (module docstring "Refused early")."""
    vec = ctx.soc.capacity_of(MemorySpace.Vec)
    if _blocks_surely_over(func, vec, double_buffer):
        return False
    fp = _footprint(func, ctx, lambda p: _surely_over(p, vec, double_buffer))
    return fp is not None and fp.fits(ctx.soc.capacity_of, double_buffer)


def footprint(func: Function, ctx: PassContext) -> Footprint | None:
    """The footprint of InCore function `func` (tensor-level) once lowered for `ctx.backend_type`;
    None when the lowering refuses it (e.g. a tensor of dynamic shape that is not blocked)."""
    return _footprint(func, ctx)


def _measure(program: Program, sub: PassContext) -> Footprint:
    """The footprint of `program`, lowered up to MemoryReuse (the last of `LOWERING`), from what
    MemoryReuse would make of each kernel (`reuse_plan`: its records and buffer sizes; the same
    numbers as running the pass, without rewriting the kernels)."""
    packed: dict[MemorySpace, int] = {}
    loads = _Loads()
    for f in program.functions:
        planned = reuse_plan(f, sub) if f.external is None else None
        loads.plan = None
        if planned is not None:
            loads.plan, stats = planned
            for name, used in stats.items():
                space = MemorySpace[name]
                packed[space] = max(packed.get(space, 0), used["reused"])
        loads.visit_function(f)
    return Footprint(packed, loads.bytes)


def _largest(candidates: list[int], pred: Callable[[int], bool]) -> int | None:
    """The largest of the ascending `candidates` satisfying the monotone `pred` (binary search)."""
    lo, hi, best = 0, len(candidates) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        if pred(candidates[mid]):
            best, lo = candidates[mid], mid + 1
        else:
            hi = mid - 1
    return best


def _pow2_below(base: int, limit: int) -> list[int]:
    out, v = [], base
    while v < limit:
        out.append(v)
        v *= 2
    return out


def _rows_that_fit(rows: int, static_rows: bool, fits: Callable[[int], bool]) -> int | None:
    """The block rows below `rows` (module docstring "Choice"): the largest power of two that fits
    (binary search), then the largest count up to twice that which fits — a multiple of 8 from 8
    rows on, any count below; for static rows the smallest multiple of 8 that keeps the same number
    of blocks (even blocks, a short tail). None when not even one row fits."""
    p = _largest(_pow2_below(1, rows), fits)
    if p is None:
        return None
    step = MIN_ROWS if p >= MIN_ROWS else 1
    top = min(2 * p, rows) if p >= MIN_ROWS else min(2 * p, rows, MIN_ROWS)
    best = _largest(range(p, top, step), fits) or p  # type: ignore[arg-type]
    if not static_rows or best < MIN_ROWS:
        return best
    blocks = -(-rows // best)
    even = -(-rows // blocks)
    return min(best, -(-even // MIN_ROWS) * MIN_ROWS)


def choose_blocks(rows: int, cols: int, static_rows: bool, reduces_rows: bool, unit: int,
                  fits: Callable[[int, int], bool]) -> BlockPlan | None:
    """The block shape of an `rows × cols` chain (module docstring "Choice"): `fits(r, c)` says
    whether an `r × c` block fits the core; `unit` is the DDR granularity in elements of the widest
    dtype; `static_rows` False for a dynamic row extent (never taken whole); `reduces_rows` True
    when the rows must stay whole (a reduction that does not combine across column blocks). None
    when no block fits (such a reduction whose single row is too long)."""
    few = min(rows, MIN_ROWS)
    bc = cols
    if not fits(few, cols) and not reduces_rows:
        bc = _largest(_pow2_below(unit, cols), lambda c: fits(few, c)) or min(unit, cols)
    if static_rows and fits(rows, bc):
        return BlockPlan(rows, bc)
    br = _rows_that_fit(rows, static_rows, lambda r: fits(r, bc))
    return BlockPlan(br, bc) if br is not None else None


def poor_shape_hint(function: str, span: Span, extent: tuple[int, int], plan: BlockPlan, dtype: DataType,
                    soc: SoCModel) -> Diagnostic | None:
    """Perf hint PH008 for `plan`, chosen for a chain of `extent` (rows, columns; a dynamic extent
    as unbounded) whose widest dtype is `dtype` (module docstring), or None when the shape is good."""
    rows, cols = extent
    granule = soc.ddr_access_granularity
    row_bytes = dtype.storage_bytes(plan.cols)
    vec = soc.capacity_of(MemorySpace.Vec)
    shape = f"blocks of {plan.rows} x {plan.cols} {dtype.name}"
    if row_bytes < granule:
        why = (f"the tensors' rows hold only {cols} elements; a layout with a longer innermost dimension "
               f"(e.g. the transposed tensor) moves fewer granules" if plan.cols >= cols else
               f"no wider block fits one core's Vec ({vec} B); a region with fewer live values (split it "
               f"into several pl.at regions) or narrower dtypes gets wider blocks")
        return Diagnostic("PH008", function, f"the tensor-level region is tiled into {shape}: rows of "
                          f"{row_bytes} B, below the {granule} B DDR access granule of {soc.backend.name}, so "
                          f"each block row moves a whole granule; {why}", span)
    if plan.rows < min(rows, MIN_ROWS):
        return Diagnostic("PH008", function, f"the tensor-level region is tiled into {shape}: only {plan.rows} "
                          f"row(s) of {plan.cols} elements fit one core's Vec ({vec} B) with the chain's live "
                          f"values, so each block pays its transfers' set-up for few bytes; a region with fewer "
                          f"live values (split it into several pl.at regions), narrower dtypes or a hand-written "
                          f"block loop over shorter rows does better", span)
    return None
