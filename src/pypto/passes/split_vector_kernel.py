"""Splitting the vector half of a mixed kernel between the two vector cores of a cluster, for
ExpandMixedKernel (Language Guide "InCore Scopes": `pl.split(pl.SplitMode.UP_DOWN | LEFT_RIGHT)`;
SPEC §2.2 "SplitMode", §6 "Cluster").

A cluster has one cube core and two vector cores. With a split mode the AIV kernel runs on both
vector cores (subblocks 0 and 1), each on half of the data: UP_DOWN halves the rows of every Vec
tile, LEFT_RIGHT the columns. `split_vector_body(body, mode, span)` rewrites the AIV kernel's body
(the vector side as ExpandMixedKernel built it, whole tiles) into the body one vector core runs:

| statement | rewrite |
|---|---|
| any Vec tile of extent > 1 in the split dimension | its type has half that extent (odd: CompileError) |
| a Vec tile of extent 1 in the split dimension | kept whole: both vector cores hold the same tile |
| `tpop` of a split tile (pipe op, `PIPE_ROLES`) | its `shape` argument halved |
| `tpush` to the cube core of a whole tile (`split=NONE`: extent 1 there) | `if subblock == 0:` (one sender) |
| DDR load / store of a halved tile (an op with a tensor operand and an `offsets` list) | `shapes` halved, `offsets[dim] += subblock * half` |
| creation from a shape and a fill value (`params` within shape, value) | `shape` halved |
| op with trait elementwise / positionwise / reduction, or a tile-only memory op | operands substituted, result re-inferred |
| a reduction across the split dimension (halved operand, result of extent 1 there) | CompileError |
| any other op touching a halved tile (slices, element reads, gathers, transposes, ...) | CompileError |

`subblock` is one `tile.get_subblock_idx()` at the start of the body (only when an offset or a
push needs it). A tile with a partial valid region (`valid_shape` smaller than its shape) cannot be
split (CompileError). The rules read op traits and parameter names from the registry, never op names.
"""

from __future__ import annotations

from dataclasses import replace

from ..core.dtype import BOOL, INDEX
from ..core.enums import MemorySpace, SplitMode
from ..core.errors import CompileError
from ..core.span import Span
from ..ir.expr import BinaryExpr, Call, ConstInt, Expr, MakeTuple, Var
from ..ir.stmt import AssignStmt, EvalStmt, IfStmt, SeqStmts, Stmt
from ..ir.types import ScalarType, TensorType, TileType, TileView, Type
from ..ir.visitor import IRMutator
from ..ops import get_op
from ..ops.system import pipe_role
from .op_builder import build_call

__all__ = ["split_vector_body", "split_dim", "halvable"]

_FILL_PARAMS = frozenset({"shape", "value"})


def split_dim(t: Type, mode: SplitMode) -> int | None:
    """The dimension `mode` halves in tile type `t` (rows: rank-2, columns: rank-1), None when
    `t` is not a tile of rank >= 2 or the mode is NONE."""
    if mode is SplitMode.NONE or not isinstance(t, TileType) or len(t.shape) < 2:
        return None
    return len(t.shape) - (2 if mode is SplitMode.UP_DOWN else 1)


def halvable(t: Type, mode: SplitMode) -> bool:
    """Whether a Vec tile of type `t` is divided between the vector cores under `mode` (its
    extent in the split dimension is not 1); a tile in another memory, or of extent 1, is not."""
    d = split_dim(t, mode)
    if d is None or (t.memory_space or MemorySpace.Vec) is not MemorySpace.Vec:  # type: ignore[attr-defined]
        return False
    e = t.shape[d]  # type: ignore[attr-defined]
    return not (isinstance(e, ConstInt) and e.value == 1)


def _const(e: Expr) -> int | None:
    return e.value if isinstance(e, ConstInt) else None


class _Split(IRMutator):
    def __init__(self, mode: SplitMode, span: Span) -> None:
        super().__init__()
        self.mode, self.span = mode, span
        self.sub: Var | None = None
        self.where = f"pl.split({mode!r})"

    def fail(self, msg: str) -> CompileError:
        return CompileError(f"{msg}; the vector half of a mixed kernel under {self.where} runs on the two "
                            f"vector cores, each on half of every Vec tile", self.span)

    # ---- types ---------------------------------------------------------------------------
    def visit_type(self, t: Type) -> Type:
        t = super().visit_type(t)
        if not isinstance(t, TileType) or not halvable(t, self.mode):
            return t
        d = split_dim(t, self.mode)
        n = _const(t.shape[d])  # type: ignore[index]
        if n is None or n % 2:
            what = "rows" if self.mode is SplitMode.UP_DOWN else "columns"
            raise self.fail(f"a Vec tile of shape {_dims(t.shape)} cannot be halved in dimension {d}: give it "
                            f"an even number of {what}, or drop the pl.split")
        view = t.view
        if isinstance(view, TileView) and view.valid_shape is not None:
            if any(_const(v) != _const(s) for v, s in zip(view.valid_shape, t.shape)):
                raise self.fail(f"a tile with valid region {_dims(view.valid_shape)} of shape "
                                f"{_dims(t.shape)} cannot be split")
            view = replace(view, valid_shape=_halve(view.valid_shape, d))  # type: ignore[arg-type]
        return replace(t, shape=_halve(t.shape, d), view=view)  # type: ignore[arg-type]

    # ---- statements ----------------------------------------------------------------------
    def visit_AssignStmt(self, s: AssignStmt) -> Stmt:
        if not (isinstance(s.value, Call) and isinstance(s.value.op, str)):
            return super().visit_AssignStmt(s)
        self.span = s.span
        call = self.rewrite(s.value, s.var.type)
        var = self.visit_binding(s.var)
        if isinstance(var.type, TileType) and _dims(call.type.shape) != _dims(var.type.shape):  # type: ignore[attr-defined]
            raise self.fail(f"{call.op} gives a {_dims(call.type.shape)} tile for '{s.var.name}' "  # type: ignore[attr-defined]
                            f"where the split needs {_dims(var.type.shape)}")
        return AssignStmt(var, call, span=s.span)

    def visit_EvalStmt(self, s: EvalStmt) -> Stmt:
        if not (isinstance(s.expr, Call) and isinstance(s.expr.op, str)):
            return super().visit_EvalStmt(s)
        self.span = s.span
        st = EvalStmt(self.rewrite(s.expr, s.expr.type), span=s.span)
        role = pipe_role(s.expr.op)
        if role is None or role.kind != "push" or role.side != "AIV" or \
                s.expr.attr("split", SplitMode.NONE) is not SplitMode.NONE:
            return st
        # both vector cores hold the whole tile; the cube core receives it once
        first = BinaryExpr("eq", self.subblock(), ConstInt(0, INDEX), BOOL, span=s.span)
        return IfStmt(first, SeqStmts((st,), span=s.span), None, span=s.span)

    def subblock(self) -> Var:
        if self.sub is None:
            self.sub = Var("subblock", ScalarType(INDEX), span=self.span)
        return self.sub

    # ---- calls ---------------------------------------------------------------------------
    def rewrite(self, call: Call, result: Type) -> Call:
        spec = get_op(call.op)  # type: ignore[arg-type]
        attrs = dict(call.kwargs)
        args = [self.visit_expr(a) for a in call.args]
        halved = [i for i, a in enumerate(call.args) if halvable(a.type, self.mode)]
        out_halved = halvable(result, self.mode)
        role = pipe_role(spec.name)
        params = spec.params
        if role is not None:
            if role.kind == "pop" and attrs.get("split", SplitMode.NONE) is not SplitMode.NONE:
                args[0] = self.halve_list(args[0], result)
        elif any(isinstance(a.type, TensorType) for a in call.args) and "offsets" in params:
            tile = result if out_halved else next((call.args[i].type for i in halved), None)
            if tile is not None:
                self.ddr_access(spec.name, params, args, tile)
        elif spec.has_trait("creation") and set(params) <= _FILL_PARAMS:
            if out_halved and "shape" in params:
                args[params.index("shape")] = self.halve_list(args[params.index("shape")], result)
        elif spec.traits & {"elementwise", "positionwise", "reduction"} or (
                spec.has_trait("memory") and not any(isinstance(a, MakeTuple) for a in call.args)):
            if halved and isinstance(result, TileType) and not out_halved and \
                    split_dim(result, self.mode) is not None:
                raise self.fail(f"{spec.name} reduces across the split dimension")
        elif halved or out_halved:
            raise self.fail(f"{spec.name} cannot run on half of a tile")
        return build_call(spec.name, args, attrs, call.span)

    def halve_list(self, e: Expr, tile: Type) -> Expr:
        d = split_dim(tile, self.mode)
        if not isinstance(e, MakeTuple) or d is None or _const(e.elements[d]) is None:
            raise self.fail("a split tile needs a static shape")
        return replace(e, elements=_halve(e.elements, d))

    def ddr_access(self, op: str, params: tuple[str, ...], args: list[Expr], tile: Type) -> None:
        """A load into / store from a halved tile: this core's half of the DDR region."""
        d = split_dim(tile, self.mode)
        half = _const(tile.shape[d]) // 2  # type: ignore[attr-defined,index,operator]
        for name in ("valid_shape",):
            if name in params and params.index(name) < len(args):
                raise self.fail(f"{op} with {name}= cannot be split")
        for name in ("shapes", "shape"):
            if name in params:
                args[params.index(name)] = self.halve_list(args[params.index(name)], tile)
        k = params.index("offsets")
        offs = args[k]
        if not isinstance(offs, MakeTuple) or d is None:
            raise self.fail(f"{op} needs a list of offsets")
        step = BinaryExpr("mul", self.subblock(), ConstInt(half, INDEX), INDEX, span=self.span)
        els = list(offs.elements)
        els[d] = step if _const(els[d]) == 0 else BinaryExpr("add", els[d], step, INDEX, span=self.span)
        args[k] = replace(offs, elements=tuple(els))


def _halve(dims: tuple[Expr, ...], d: int) -> tuple[Expr, ...]:
    out = list(dims)
    out[d] = ConstInt(_const(dims[d]) // 2, INDEX)  # type: ignore[operator]
    return tuple(out)


def _dims(dims: tuple[Expr, ...]) -> str:
    return "[" + ", ".join(str(_const(x)) if _const(x) is not None else "?" for x in dims) + "]"


def split_vector_body(body: SeqStmts, mode: SplitMode, span: Span) -> SeqStmts:
    """The body one vector core runs under `mode` (module docstring). `span` locates errors that
    have no statement of their own. Raises CompileError for what cannot be split."""
    if mode is SplitMode.NONE:
        return body
    m = _Split(mode, span)
    out = m.visit_seq(body)
    if m.sub is None:
        return out
    sub = AssignStmt(m.sub, build_call("tile.get_subblock_idx", [], {}, span), span=span)
    return replace(out, stmts=(sub, *out.stmts))
