"""LegalizeTileCast: a tile cast the target cannot do in one instruction becomes a chain (SPEC §5).

The SoC model lists the dtype pairs one conversion instruction handles (`backend.casts`, with the
per-architecture tables). A tile conversion op — a tile op whose OpSpec has a `target_type`
attribute, i.e. `tile.cast` — whose (source, target) pair is not native is rewritten into one
conversion per hop of `soc.cast_chain(src, dst)`::

    r = pl.tile.cast(t, target_type=pl.FP16, mode="round")        # t: INT32, on Ascend950
    ⇒
    r_fp32 = pl.tile.cast(t, target_type=pl.FP32, mode="round")
    r = pl.tile.cast(r_fp32, target_type=pl.FP16, mode="round")

The user's rounding `mode` goes to the hop that turns a float into an integer (the only kind of hop
where it matters), or to the last hop when there is none; the other hops round to nearest-even.
A pair that no chain connects raises CompileError naming both dtypes and the backend.

The pass also checks the other dtype-dependent instruction of the target, the cube unit: a tile
op with the "cube" trait (matmul) whose `lhs` / `rhs` dtype is not in `soc.cube_dtypes` (FP8 or
FP4 operands on Ascend910B) raises CompileError naming the dtype, the backend and what it supports.
"""

from __future__ import annotations

from dataclasses import replace

from ..backend.casts import cast_refusal
from ..core import dtype as D
from ..core.dtype import DataType
from ..core.errors import CompileError
from ..core.span import Span
from ..ir.expr import Call, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, SeqStmts, Stmt
from ..ir.types import TileType
from ..ir.visitor import IRMutator
from ..ops import get_op
from .base import FunctionPass, PassContext
from .op_builder import build_call

__all__ = ["LegalizeTileCast"]


def _conversion(call: Call) -> tuple[DataType, DataType] | None:
    """(src, dst) dtypes if `call` is a tile dtype conversion, else None."""
    if not isinstance(call.op, str):
        return None
    spec = get_op(call.op)
    if spec.namespace != "tile" or "target_type" not in spec.attrs or not call.args:
        return None
    src_t, dst = call.args[0].type, call.attr("target_type")
    if not isinstance(src_t, TileType) or not isinstance(dst, DataType):
        return None
    return src_t.dtype, dst


def _mode_hop(src: DataType, chain: tuple[DataType, ...]) -> int:
    """Index of the hop that gets the user's rounding mode (see the module docstring)."""
    prev = src
    for i, t in enumerate(chain):
        if prev.is_float() and not t.is_float():
            return i
        prev = t
    return len(chain) - 1


class _Legalize(IRMutator):
    def __init__(self, ctx: PassContext) -> None:
        super().__init__()
        self.ctx = ctx

    def check_cube_operands(self, call: Call, span: Span) -> None:
        if not isinstance(call.op, str):
            return
        spec = get_op(call.op)
        if spec.namespace != "tile" or not spec.has_trait("cube"):
            return
        soc = self.ctx.soc
        for name, a in zip(spec.params, call.args):
            t = a.type
            if name in ("lhs", "rhs") and isinstance(t, TileType) and t.dtype not in soc.cube_dtypes:
                have = ", ".join(d.name for d in D.ALL_DTYPES if d in soc.cube_dtypes)
                raise CompileError(f"{call.op}: the cube unit of {self.ctx.backend_type.name} cannot "
                                   f"multiply {t.dtype.name} operands ('{name}'); it multiplies {have}; "
                                   f"cast the operands first, e.g. pl.cast(x, pl.BF16)", span)

    def visit_AssignStmt(self, s: AssignStmt) -> Stmt:
        s2 = super().visit_AssignStmt(s)
        if not isinstance(s2, AssignStmt) or not isinstance(s2.value, Call):
            return s2
        call = s2.value
        self.check_cube_operands(call, s2.span)
        pair = _conversion(call)
        if pair is None:
            return s2
        src, dst = pair
        chain = self.ctx.soc.cast_chain(src, dst)
        if chain is None:
            backend = self.ctx.backend_type.name
            raise CompileError(f"{call.op}: {backend} cannot convert {src.name} to {dst.name}: "
                               f"{cast_refusal(backend, src, dst)} (native pairs: pypto.backend.casts)",
                               s2.span)
        if len(chain) == 1:
            return s2
        user_mode = call.attr("mode")
        mode_at = _mode_hop(src, chain)
        stmts: list[Stmt] = []
        value = call.args[0]
        for i, t in enumerate(chain):
            attrs = dict(call.kwargs, target_type=t)
            if "mode" in attrs:
                attrs["mode"] = user_mode if i == mode_at else "round"
            hop = build_call(call.op, [value, *call.args[1:]], attrs, call.span)  # type: ignore[arg-type]
            if i == len(chain) - 1:
                stmts.append(replace(s2, value=hop))
            else:
                value = Var(f"{s2.var.name}_{t.name.lower()}", hop.type, span=s2.span)
                stmts.append(AssignStmt(value, hop, span=s2.span))
        return SeqStmts(tuple(stmts), span=s2.span)


class LegalizeTileCast(FunctionPass):
    """Expand tile casts that are not native on the target into chains of native casts; refuse
    cube operands of a dtype the target's cube unit does not multiply."""

    name = "LegalizeTileCast"

    def run_function(self, func: Function, program: Program, ctx: PassContext) -> Function:
        return _Legalize(ctx).visit_function(func)
