"""Which values of host code outlive the C++ block that computes them.

The host emitter opens a C++ block `{ ... }` for a runtime scope (`PTO2_SCOPE(rt) { ... }`), a loop
body and each branch of an `if`. A C++ variable declared inside such a block is gone after its `}`,
but the IR may use the value later: a tensor computed in one `with pl.scope():` block and consumed
by the next one, the result of an inline helper whose hand-placed scope produced it, a loop's or an
`if`'s results when the loop or `if` itself sits inside a scope. Such a value is declared in the
enclosing block, just before the statement that opens the inner block, and only assigned inside
(`Tensor` is a copyable, default-constructible handle of the runtime API; scalars start at zero).

`escaping(s, uses)` names the values declared inside the blocks that statement `s` opens and used
outside `s`; the emitter asks it at every block-opening statement from the outside in, so a value
is declared in the innermost block that encloses its definition and all of its uses.
"""

from __future__ import annotations

from collections import Counter

from ...core.enums import ScopeKind
from ...ir.expr import IterArg, Var
from ...ir.stmt import AssignStmt, ForStmt, IfStmt, ScopeStmt, SeqStmts, Stmt, WhileStmt
from ...ir.visitor import IRVisitor

__all__ = ["opens_block", "block_locals", "use_counts", "escaping"]


def opens_block(s: Stmt) -> bool:
    """True when the emitter writes `s` as a C++ block (runtime scope, loop, if)."""
    if isinstance(s, ScopeStmt):
        return s.kind is ScopeKind.Runtime
    return isinstance(s, (ForStmt, WhileStmt, IfStmt))


def _declared(s: Stmt, out: list[Var]) -> None:
    """Vars the emitter declares for statement `s`: at `s`'s own level and inside its blocks."""
    if isinstance(s, AssignStmt):
        out.append(s.var)
    elif isinstance(s, SeqStmts):
        for x in s.stmts:
            _declared(x, out)
    elif isinstance(s, (ForStmt, WhileStmt)):
        out.extend(s.iter_args)       # before the loop, in the current block
        _inside(s, out)
        out.extend(s.return_vars)     # after the loop, in the current block
    elif isinstance(s, IfStmt):
        out.extend(s.return_vars)     # before the if, in the current block
        _inside(s, out)
    elif isinstance(s, ScopeStmt):
        _inside(s, out)


def _inside(s: Stmt, out: list[Var]) -> None:
    if isinstance(s, ForStmt):
        out.append(s.loop_var)        # the for header belongs to the loop's block
        _declared(s.body, out)
    elif isinstance(s, (WhileStmt, ScopeStmt)):
        _declared(s.body, out)
    elif isinstance(s, IfStmt):
        _declared(s.then_body, out)
        if s.else_body is not None:
            _declared(s.else_body, out)


def block_locals(s: Stmt) -> list[Var]:
    """Vars the emitter declares inside the C++ block(s) that `s` opens, in emission order (empty
    for a statement that opens none; a loop's carried values and results, and an if's results,
    are declared in the current block, not inside)."""
    out: list[Var] = []
    if opens_block(s):
        _inside(s, out)
    return out


class _Uses(IRVisitor):
    def __init__(self) -> None:
        self.count: Counter[Var] = Counter()

    def visit_Var(self, e: Var) -> None:
        self.count[e] += 1

    def visit_IterArg(self, e: IterArg) -> None:
        self.count[e] += 1


def use_counts(*stmts: Stmt) -> Counter[Var]:
    """How often each Var occurs (as an operand, a dependency or a binding) in `stmts`."""
    v = _Uses()
    for s in stmts:
        v.visit_stmt(s)
    return v.count


def escaping(s: Stmt, uses: Counter[Var]) -> list[Var]:
    """The Vars declared inside the blocks `s` opens that also occur outside `s`, where `uses`
    counts the occurrences in the whole region the emitter writes (a function body)."""
    local = block_locals(s)
    if not local:
        return []
    inner = use_counts(s)
    return [v for v in local if uses[v] > inner[v]]
