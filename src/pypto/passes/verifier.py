"""IR verification run between passes (SPEC §5 "Verification levels").

BASIC checks well-formedness that every pass must keep: each Var read is defined before (a
parameter, an earlier assignment, a loop var, iter arg or return var in scope), each call to a
program function names an existing function with the right number of arguments, and the
distributed code of SPEC §8 keeps its windows: a window-bound parameter gets a window-bound
argument and every `pld.*` op still passes its type rule.
ROUNDTRIP additionally prints the program, parses the text and requires structural equality.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..core.errors import VerificationError
from ..ir.expr import Call, GlobalVar, Var
from ..ir.function import Function, Program
from ..ir.stmt import AssignStmt, ForStmt, IfStmt, ScopeStmt, SeqStmts, WhileStmt
from ..ir.visitor import IRVisitor

__all__ = ["verify_basic", "verify_roundtrip", "VerifiedFunctions"]


class _Scoped(IRVisitor):
    """One walk of a function body. The Vars in scope are one set, `defs`; `frame` lists those the
    innermost open scope added (removed again when it closes), `frames` the enclosing scopes'."""

    def __init__(self, program: Program, func: Function, pass_name: str) -> None:
        self.program, self.func, self.pass_name = program, func, pass_name
        self.defs: set[Var] = set(func.params) | _dims_of(func)
        self.frame: list[Var] = []
        self.frames: list[list[Var]] = []

    def defined(self, v: Var) -> bool:
        return v in self.defs

    def define(self, vs: Iterable[Var]) -> None:
        for v in vs:
            if v not in self.defs:
                self.defs.add(v)
                self.frame.append(v)

    def open_scope(self, vs: Iterable[Var] = ()) -> None:
        self.frames.append(self.frame)
        self.frame = []
        self.define(vs)

    def close_scope(self) -> list[Var]:
        """Ends the innermost scope; returns the Vars it had added."""
        added = self.frame
        self.defs.difference_update(added)
        self.frame = self.frames.pop()
        return added

    def fail(self, msg: str, span=None) -> None:  # type: ignore[no-untyped-def]
        raise VerificationError(f"after pass {self.pass_name}, function '{self.func.name}': {msg}",
                                span or self.func.span)

    def visit_Var(self, e: Var) -> None:
        if e not in self.defs:
            self.fail(f"variable '{e.name}' is used but not defined", e.span)

    visit_IterArg = visit_Var

    def visit_Call(self, e: Call) -> None:
        if isinstance(e.op, GlobalVar):
            callee = self.program.get_function(e.op.name)
            if callee is None:
                self.fail(f"call to unknown function '{e.op.name}'", e.span)
            elif len(callee.params) != len(e.args):  # type: ignore[union-attr]
                self.fail(f"call to '{e.op.name}' passes {len(e.args)} arguments, it takes "
                          f"{len(callee.params)}", e.span)  # type: ignore[union-attr]
            else:
                self.check_windows(e, callee)  # type: ignore[arg-type]
        elif isinstance(e.op, str) and e.op.startswith("pld."):
            self.check_distributed_op(e)
        super().visit_Call(e)

    def check_windows(self, e: Call, callee: Function) -> None:
        """A window-bound parameter (SPEC §8) gets a window-bound argument: a pass must not lose it."""
        from ..ir.types import DistributedTensorType
        from ..ops.distributed import unbound_window_message

        for p, a in zip(callee.params, e.args):
            if isinstance(p.type, DistributedTensorType):
                msg = unbound_window_message(p.name, callee.name, a.type)
                if msg is not None:
                    self.fail(msg, e.span)

    def check_distributed_op(self, e: Call) -> None:
        """The type rule of a `pld.*` op still accepts its operands (window-bound targets, ranks)."""
        from ..ops import OpTypeError, get_op, has_op

        if has_op(e.op):  # type: ignore[arg-type]
            spec = get_op(e.op)  # type: ignore[arg-type]
            try:
                spec.infer(list(e.args), {**spec.attrs, **dict(e.kwargs)})
            except OpTypeError as err:
                self.fail(f"{e.op}: {err}", e.span)

    def visit_AssignStmt(self, s: AssignStmt) -> None:
        self.visit_expr(s.value)
        if s.var not in self.defs:
            self.defs.add(s.var)
            self.frame.append(s.var)

    def visit_SeqStmts(self, s: SeqStmts) -> None:
        for x in s.stmts:
            self.visit_stmt(x)

    def visit_ForStmt(self, s: ForStmt) -> None:
        for e in (s.start, s.stop, s.step):
            self.visit_expr(e)
        for ia in s.iter_args:
            if ia.init is not None:
                self.visit_expr(ia.init)
        self.open_scope((s.loop_var, *s.iter_args))
        self.visit_stmt(s.body)
        self.close_scope()
        self.define(s.return_vars)

    def visit_WhileStmt(self, s: WhileStmt) -> None:
        for ia in s.iter_args:
            if ia.init is not None:
                self.visit_expr(ia.init)
        self.open_scope(s.iter_args)
        self.visit_expr(s.cond)
        self.visit_stmt(s.body)
        self.close_scope()
        self.define(s.return_vars)

    def visit_IfStmt(self, s: IfStmt) -> None:
        self.visit_expr(s.cond)
        self.open_scope()
        self.visit_stmt(s.then_body)
        then_defs = set(self.close_scope())
        else_defs: list[Var] = []
        if s.else_body is not None:
            self.open_scope()
            self.visit_stmt(s.else_body)
            else_defs = self.close_scope()
        self.define(s.return_vars)
        # Before ConvertToSSA (Python semantics) a variable assigned in both branches exists after
        # the if; ConvertToSSA turns it into a return var.
        self.define(v for v in else_defs if v in then_defs)

    def visit_ScopeStmt(self, s: ScopeStmt) -> None:
        for d in (*s.deps, *s.no_dep_args):
            self.visit_expr(d)
        if s.block_var is not None:
            self.define((s.block_var,))
        self.visit_stmt(s.body)
        if s.task_id is not None:  # `with pl.at(...) as tid`: bound once the region is submitted
            self.define((s.task_id,))


def _dims_of(func: Function) -> set[Var]:
    """Dynamic-dimension Vars: those appearing in the shapes of parameter and return types."""
    from ..ir.types import TensorType, TileType, TupleType

    dims: set[Var] = set()

    def walk(t) -> None:  # type: ignore[no-untyped-def]
        if isinstance(t, (TensorType, TileType)):
            dims.update(d for d in t.shape if isinstance(d, Var))
        elif isinstance(t, TupleType):
            for x in t.types:
                walk(x)

    for p in func.params:
        walk(p.type)
    for t in func.return_types:
        walk(t)
    return dims


class VerifiedFunctions:
    """What `verify_basic` already accepted, so that a function a pass left unchanged is not walked
    again (IR is immutable: the same Function object checked against the same callees gives the same
    answer). Per function object it keeps the program's call table at that check, `(name, params)`
    per function; a function is skipped only while its callees' names and parameter tuples are the
    very same objects. Holds references to the functions it remembers (one PassManager run)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Function, tuple[tuple[str, tuple[Var, ...]], ...]]] = {}

    @staticmethod
    def call_table(program: Program) -> tuple[tuple[str, tuple[Var, ...]], ...]:
        return tuple((f.name, f.params) for f in program.functions)

    def known(self, func: Function, table: tuple[tuple[str, tuple[Var, ...]], ...]) -> bool:
        seen = self._seen.get(id(func))
        if seen is None or seen[0] is not func or len(seen[1]) != len(table):
            return False
        return all(a[0] == b[0] and a[1] is b[1] for a, b in zip(seen[1], table))

    def add(self, func: Function, table: tuple[tuple[str, tuple[Var, ...]], ...]) -> None:
        self._seen[id(func)] = (func, table)


def verify_basic(program: Program, pass_name: str, memo: VerifiedFunctions | None = None) -> None:
    """Raise VerificationError if a Var is used undefined or a function call is malformed.

    With `memo`, functions it already accepted (same object, same callee table) are not walked
    again, and those checked now are added to it.
    """
    table = VerifiedFunctions.call_table(program) if memo is not None else ()
    for f in program.functions:
        if memo is not None and memo.known(f, table):
            continue
        _Scoped(program, f, pass_name).visit_stmt(f.body)
        if memo is not None:
            memo.add(f, table)


def verify_roundtrip(program: Program, pass_name: str, reparse: Callable[..., Program]) -> None:
    """Raise VerificationError if print → parse does not give a structurally equal program.

    `reparse(text, filename=...)` is the DSL parser (`pypto.language.parser.entry.parse_text`),
    passed in by the caller so that passes do not import the language layer above them.
    """
    from ..ir.printer import python_print
    from ..ir.structural import assert_structural_equal

    text = python_print(program)
    try:
        again = reparse(text, filename=f"<roundtrip after {pass_name}>")
        assert_structural_equal(program, again)
        if again.function_names != program.function_names:  # equality ignores function names
            raise AssertionError(f"function names {program.function_names} became {again.function_names}")
    except AssertionError as e:
        raise VerificationError(f"after pass {pass_name}: printed IR does not re-parse to the same "
                                f"program: {e}") from None
    except Exception as e:
        raise VerificationError(f"after pass {pass_name}: printed IR does not re-parse: {e}") from None
