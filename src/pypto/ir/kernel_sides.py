"""Which core of a cluster — the cube core (AIC) or a vector core (AIV) — runs each statement of a
kernel, for ExpandMixedKernel (SPEC §1 "Block level", §3 "System", §6 "Cluster").

Leaf statements are classified from op traits and memory spaces, never op names:

| statement | side |
|---|---|
| op with the "cube" trait (matmul, ...; cube-side system ops) | C |
| op with the "vector" trait (elementwise, reductions, casts, ...; vector-side system ops) | V |
| other op touching tiles (load, store, move, create, ...) only in Mat/Left/Right/Acc/Bias | C |
| other op touching tiles only in Vec | V |
| other op touching tiles in both (a move Acc → Vec or Vec → Mat) | X: a transfer between the cores |
| anything else (scalar arithmetic, block ids, tensor metadata) | B: both cores compute it |

A tile value belongs to the side of its memory space (Vec: V, the cube memories: C).
"""

from __future__ import annotations

from ..core.enums import MemorySpace
from ..core.span import Span
from ..ops import get_op
from .expr import Call, Expr, GlobalVar, Var
from .function import Function
from .stmt import AssignStmt, EvalStmt, ForStmt, IfStmt, ReturnStmt, SeqStmts, Stmt, WhileStmt, YieldStmt
from .types import TileType
from .uses import used_vars
from .visitor import IRVisitor, stmt_children

__all__ = ["C", "V", "B", "X", "CUBE_SPACES", "stmt_side", "tile_side", "sides_used", "side_uses", "sided_ops"]

C, V, B, X = "C", "V", "B", "X"
CUBE_SPACES = frozenset({MemorySpace.Mat, MemorySpace.Left, MemorySpace.Right, MemorySpace.Acc,
                         MemorySpace.Bias})


def tile_side(t: object) -> str | None:
    """C or V for a tile type by its memory space, None for other types."""
    if not isinstance(t, TileType):
        return None
    return C if (t.memory_space or MemorySpace.Vec) in CUBE_SPACES else V


def _value_side(value: Expr, result_type: object) -> str:
    if isinstance(value, Var):
        return tile_side(value.type) or B
    if not isinstance(value, Call) or isinstance(value.op, GlobalVar):
        return B
    spec = get_op(value.op)
    if spec.has_trait("cube"):
        return C
    if spec.has_trait("vector"):
        return V
    sides = {tile_side(a.type) for a in value.args} | {tile_side(result_type)}
    sides.discard(None)
    if sides == {C, V}:
        return X
    return sides.pop() if sides else B


def stmt_side(s: Stmt) -> str:
    """Side of a leaf statement (AssignStmt / EvalStmt), see the module docstring."""
    if isinstance(s, AssignStmt):
        return _value_side(s.value, s.var.type)
    if isinstance(s, EvalStmt):
        return _value_side(s.expr, s.expr.type)
    return B


class _Sides(IRVisitor):
    def __init__(self) -> None:
        self.sides: set[str] = set()
        self.pipes = False

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.sides.add(stmt_side(s))
        value = s.value if isinstance(s, AssignStmt) else s.expr  # type: ignore[attr-defined]
        if isinstance(value, Call) and isinstance(value.op, str):
            spec = get_op(value.op)
            self.pipes |= spec.has_trait("system") and (spec.has_trait("cube") or spec.has_trait("vector"))

    visit_EvalStmt = visit_AssignStmt  # type: ignore[assignment]


def sides_used(body: Stmt) -> tuple[set[str], bool]:
    """The sides of every leaf statement in `body`, and whether it already uses cross-core pipe
    ops (system ops of one side: a kernel whose pipes the author placed by hand)."""
    v = _Sides()
    v.visit_stmt(body)
    return v.sides, v.pipes


def side_uses(body: SeqStmts) -> dict[Var, set[str]]:
    """Var -> the sides that read it (see kernel_sides)."""
    uses: dict[Var, set[str]] = {}

    def mark(e: object, sides: set[str]) -> None:
        for v in used_vars(e) if isinstance(e, Stmt) else used_vars(EvalStmt(e)):  # type: ignore[arg-type]
            uses.setdefault(v, set()).update(sides)

    def walk(s: Stmt, targets: tuple[Var, ...] = ()) -> None:
        if isinstance(s, SeqStmts):
            for x in s.stmts:
                walk(x, targets)
        elif isinstance(s, (AssignStmt, EvalStmt)):
            side = stmt_side(s)
            value = s.value if isinstance(s, AssignStmt) else s.expr
            if side == X:
                mark(value, {tile_side(value.args[0].type)})  # type: ignore[attr-defined]
            else:
                mark(value, {C, V} if side == B else {side})
        elif isinstance(s, (YieldStmt, ReturnStmt)):
            for i, v in enumerate(s.values):
                t = targets[i].type if i < len(targets) else v.type
                mark(v, {tile_side(t)} if tile_side(t) else {C, V})
        elif isinstance(s, (ForStmt, WhileStmt)):
            heads = [s.cond] if isinstance(s, WhileStmt) else [s.start, s.stop, s.step]
            for e in heads:
                mark(e, {C, V})
            for ia in s.iter_args:
                if ia.init is not None:
                    mark(ia.init, {tile_side(ia.type)} if tile_side(ia.type) else {C, V})
            walk(s.body, tuple(s.iter_args))
        elif isinstance(s, IfStmt):
            mark(s.cond, {C, V})
            walk(s.then_body, s.return_vars)
            if s.else_body is not None:
                walk(s.else_body, s.return_vars)

    walk(body)
    return uses


def _leaf_stmts(s: Stmt) -> list[Stmt]:
    if isinstance(s, (AssignStmt, EvalStmt)):
        return [s]
    return [leaf for c in stmt_children(s) for leaf in _leaf_stmts(c)]


def _calls(e: Expr) -> list[Call]:
    """Op calls in `e`, innermost first (`c[:] = pl.matmul(a, b)` nests the matmul)."""
    if isinstance(e, Call):
        inner = [c for a in e.args for c in _calls(a)]
        return inner + ([e] if isinstance(e.op, str) else [])
    return [c for a in getattr(e, "elements", ()) for c in _calls(a)]


def sided_ops(code: Function | Stmt) -> list[tuple[str, str, Span, bool]]:
    """(side, description, span, runs on a unit) of every op call in a function's body (or in a
    statement, e.g. a `pl.at` body), those of ops with the "cube" / "vector" trait first, each
    group in source order."""
    out = []
    for s in _leaf_stmts(code.body if isinstance(code, Function) else code):
        value = s.value if isinstance(s, AssignStmt) else s.expr  # type: ignore[attr-defined]
        for c in _calls(value):
            leaf = s if c is value else EvalStmt(c, span=s.span)
            t = leaf.var.type if isinstance(leaf, AssignStmt) else c.type
            unit = get_op(c.op).has_trait("cube") or get_op(c.op).has_trait("vector")  # type: ignore[arg-type]
            space = t.memory_space.name if isinstance(t, TileType) and t.memory_space is not None else "Vec"
            what = f"'{c.op}'" if unit or not isinstance(t, TileType) else f"'{c.op}' (into a {space} tile)"
            out.append((stmt_side(leaf), what, s.span, unit))
    return sorted(out, key=lambda o: not o[3])  # ops of a unit first: they name the kernel's work
