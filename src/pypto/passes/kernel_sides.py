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
from ..ir.expr import Call, Expr, GlobalVar, Var
from ..ir.stmt import AssignStmt, EvalStmt, Stmt
from ..ir.types import TileType
from ..ir.visitor import IRVisitor
from ..ops import get_op

__all__ = ["C", "V", "B", "X", "CUBE_SPACES", "stmt_side", "tile_side", "sides_used"]

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

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.sides.add(stmt_side(s))

    visit_EvalStmt = visit_AssignStmt  # type: ignore[assignment]


def sides_used(body: Stmt) -> set[str]:
    """The sides of every leaf statement in `body`."""
    v = _Sides()
    v.visit_stmt(body)
    return v.sides
