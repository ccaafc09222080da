"""ResolveBackendOpLayouts: give tiles the layouts the target's tile instructions require (SPEC §5, §6).

A PTO tile buffer is laid out in boxes: row-major (ND) tiles in Vec start every row on a 32-byte
boundary; Mat, Left, Right and Acc tiles are made of 16-row fractal boxes of 512 bytes (1024 in
Acc). What this pass does for our ops:

| tile | requirement | what the pass does |
|---|---|---|
| Vec column vector [M, 1], M > 1 (row reductions `row_sum`/`row_max`/..., the vector operand of `row_expand_*`, loads of [M, 1] regions) | a row-major [M, 1] tile spends 32 bytes per element; the vector unit reads such vectors column-major | re-lays it out DN (column-major): the same M values, contiguous, in one 32-byte-aligned column. The bytes are identical for a single column, so no data moves; codegen emits `blayout=col_major` |
| Vec tile whose rows are not a multiple of 32 bytes | each row starts on a 32-byte boundary | InitMemRef reserves the padded footprint; recorded here |
| Mat / Left / Right / Acc tile not a whole number of fractals (rows % 16, row bytes % 32 — % 64 in Acc) | whole fractal boxes | InitMemRef reserves whole fractals; recorded here |

Tiles whose footprint exceeds their dense size are recorded in
`ctx.records["layout"][function]` as `{"tile", "space", "shape", "layout", "line", "dense_bytes",
"buffer_bytes"}` (for the report's performance hints). Only Var types change (annotations carry
layouts); op result types are re-inferred by the op type rules as usual.
"""

from __future__ import annotations

from ..core.enums import FunctionType, MemorySpace, PadValue, TensorLayout
from ..ir.expr import ConstInt, Var
from ..ir.function import Function, Program
from ..ir.replace import fast_replace
from ..ir.types import TileType, TileView, static_shape
from ..ir.visitor import IRMutator
from .base import FunctionPass, PassContext
from .init_memref import buffer_bytes, tile_bytes

__all__ = ["ResolveBackendOpLayouts", "needs_column_layout"]

_KERNELS = (FunctionType.InCore, FunctionType.AIC, FunctionType.AIV)


def needs_column_layout(t: TileType) -> bool:
    """A Vec column vector [M, 1] (M > 1) laid out row-major (see the module docstring)."""
    if (t.memory_space or MemorySpace.Vec) is not MemorySpace.Vec or len(t.shape) != 2:
        return False
    rows, cols = t.shape
    layout = t.view.layout if t.view is not None else TensorLayout.ND
    return isinstance(rows, ConstInt) and rows.value > 1 and isinstance(cols, ConstInt) and \
        cols.value == 1 and layout is TensorLayout.ND


class _Resolve(IRMutator):
    def __init__(self, ctx: PassContext, func: Function) -> None:
        super().__init__()
        self.ctx, self.func = ctx, func
        self.issues: list[dict] = []

    def visit_binding(self, v: Var) -> Var:
        if v in self.var_map:
            return self.var_map[v]  # type: ignore[return-value]
        t = v.type
        if not isinstance(t, TileType):
            return super().visit_binding(v)
        nt = t
        if needs_column_layout(t):
            old = t.view
            nt = fast_replace(t, view=TileView(old.valid_shape if old else None, TensorLayout.DN,
                                               old.pad if old else PadValue.null))
        self.check(v, nt)
        if nt is t:
            return super().visit_binding(v)
        nv = fast_replace(v, var_type=nt)
        self.var_map[v] = nv
        return nv

    def check(self, v: Var, t: TileType) -> None:
        try:
            shape = static_shape(t)
        except Exception:  # dynamic shapes are checked when they are specialised
            return
        dense, padded = tile_bytes(t), buffer_bytes(t, self.ctx.soc)
        if padded > max(dense, 1) and padded - dense >= self.ctx.soc.alignment:
            layout = t.view.layout if t.view is not None else TensorLayout.ND
            self.issues.append({"tile": v.name, "space": (t.memory_space or MemorySpace.Vec).name,
                                "shape": list(shape), "layout": layout.name, "line": v.span.begin_line,
                                "dense_bytes": dense, "buffer_bytes": padded})


class ResolveBackendOpLayouts(FunctionPass):
    """Lay out Vec column vectors column-major; record tiles that need padded layouts."""

    name = "ResolveBackendOpLayouts"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        if func.func_type not in _KERNELS:
            return func
        r = _Resolve(ctx, func)
        out = r.visit_function(func)
        if r.issues:
            ctx.records.setdefault("layout", {})[func.name] = r.issues
        return out
