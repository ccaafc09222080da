"""Explicit task dependencies in the language (SPEC §1): `self.k(..., deps=[x])` and
`with pl.at(..., deps=[x])` — the IR they parse to, their printed form, and the errors of bad uses."""

from pathlib import Path

import pytest

import pypto.language as pl
from pypto import ir
from pypto.core.errors import (
    InvalidOperationError,
    ParserError,
    ParserSyntaxError,
    ParserTypeError,
    UndefinedVariableError,
)
from pypto.ir import AssignStmt, Call, EvalStmt, ScopeStmt, TupleGetItem, Var

THIS = Path(__file__).resolve()
SRC = THIS.read_text().splitlines()
S = [32, 64]
H = [16, 64]


def line_of(marker: str) -> int:
    hits = [i + 1 for i, line in enumerate(SRC) if marker in line and "line_of(" not in line
            and "located(" not in line]
    assert len(hits) == 1, hits
    return hits[0]


def located(err: ParserError, marker: str) -> None:
    """The error points at the user's file and the line carrying `marker`."""
    assert Path(err.span.filename).resolve() == THIS
    assert err.span.begin_line == line_of(marker)
    assert str(err).startswith(f"{err.span.filename}:{err.span.begin_line}:")


@pl.program
class Deps:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(a, [0, 0], H)
        o = pl.store(pl.mul(t, 2.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.InCore)
    def split2(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]],
               p: pl.Out[pl.Tensor[H, pl.FP32]]) -> tuple[pl.Tensor[H, pl.FP32], pl.Tensor[H, pl.FP32]]:
        t = pl.load(a, [0, 0], H)
        o = pl.store(t, [0, 0], o)
        p = pl.store(t, [0, 0], p)
        return o, p

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        top = pl.slice(b, H, [0, 0])
        bottom = pl.slice(b, H, [16, 0])
        a_top = pl.slice(a, H, [0, 0])
        t0 = self.scale(a_top, top)
        t1 = self.scale(a_top, bottom, deps=[t0, a, t0])
        r = self.split2(a_top, pl.create_tensor(H, dtype=pl.FP32), pl.create_tensor(H, dtype=pl.FP32))
        with pl.at(level=pl.Level.CORE_GROUP, deps=[t1, r[1]]):
            c = pl.add(a, 1.0)
        self.scale(a_top, top, deps=[c])
        self.scale(a_top, bottom, deps=[b[0:16]])  # a view: waits for the writers of that part of b
        return b


def _main_stmts():
    return Deps.get_function("main").body.stmts


def test_call_deps_are_uses_of_the_named_tensors():
    stmts = _main_stmts()
    t0, t1 = stmts[3].var, stmts[4]
    assert isinstance(t1, AssignStmt) and isinstance(t1.value, Call)
    a = Deps.get_function("main").params[0]
    assert t1.value.deps == (t0, a)  # duplicates dropped, source order kept
    assert t1.value.kwargs == ()  # deps are not attributes
    assert stmts[3].value.deps == ()


def test_region_deps_accept_tuple_elements_and_a_region_result_is_a_dependency():
    stmts = _main_stmts()
    scope = next(s for s in stmts if isinstance(s, ScopeStmt))
    r = next(s.var for s in stmts if isinstance(s, AssignStmt) and s.var.name == "r")
    assert scope.deps[0] is stmts[4].var
    assert isinstance(scope.deps[1], TupleGetItem) and scope.deps[1].tuple_value is r and scope.deps[1].index == 1
    c = scope.body.stmts[0].var  # assigned inside the region
    last = next(s for s in stmts if isinstance(s, EvalStmt))
    assert last.expr.deps == (c,) and isinstance(c, Var)


def test_printed_deps_reparse_to_an_equal_program():
    text = Deps.as_python()
    assert "self.scale(a_top, bottom, deps=[t0, a])" in text
    assert "with pl.at(level=pl.Level.CORE_GROUP, deps=[t1, r[1]]):" in text
    assert "self.scale(a_top, top, deps=[c])" in text
    assert "self.scale(a_top, bottom, deps=[pl.tensor.slice(b, [16, 64], [0, 0])])" in text
    again = pl.parse(text)
    ir.assert_structural_equal(Deps, again)
    assert ir.structural_hash(Deps) == ir.structural_hash(again)
    assert again.as_python() == text


def test_deps_on_an_op_call():
    with pytest.raises(ParserTypeError) as ei:
        @pl.function(type=pl.FunctionType.Orchestration)
        def f(a: pl.Tensor[S, pl.FP32]) -> pl.Tensor[S, pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                b = pl.add(a, 1.0, deps=[a])  # MARK-op
            return b
    assert ei.value.message == ("deps= applies to calls of program functions (kernels, orchestration "
                                "functions) and pl.at regions, not to op call 'pl.add'")
    located(ei.value, "MARK-op")


def test_deps_inside_an_incore_function():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], H), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.InCore)
            def k2(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                o = self.k(a, o, deps=[a])  # MARK-incore
                return o
    assert ei.value.message.startswith("deps= is not allowed inside an InCore function: only "
                                       "orchestration code submits tasks")
    located(ei.value, "MARK-incore")


def test_deps_inside_a_group_function():
    with pytest.raises(InvalidOperationError, match="inside a Group function") as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV)
            def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], H), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Group)
            def g(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                o = self.k(a, o, deps=[a])  # MARK-group
                return o
    located(ei.value, "MARK-group")


def test_deps_on_a_call_inside_a_region():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], H), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    o = self.k(a, o, deps=[a])  # MARK-in-region
                return o
    assert "with pl.at(..., deps=[...])" in ei.value.message
    located(ei.value, "MARK-in-region")


def test_deps_entry_that_is_not_a_tensor():
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], H), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]],
                     n: pl.Scalar[pl.INDEX]) -> pl.Tensor[H, pl.FP32]:
                o = self.k(a, o, deps=[n])  # MARK-scalar
                return o
    assert ei.value.message == "deps= entry 'n' is a pl.Scalar[pl.INDEX], not a tensor or a pl.TaskId; only those order tasks"
    located(ei.value, "MARK-scalar")


def test_deps_entry_with_an_unknown_name():
    with pytest.raises(UndefinedVariableError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], H), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP, deps=[nowhere]):  # noqa: F821  MARK-unknown
                    o[:] = pl.add(a, 1.0)
                return o
    assert ei.value.message == "Undefined variable 'nowhere'"
    located(ei.value, "MARK-unknown")


@pytest.mark.parametrize("deps, cls, message", [
    ("a", ParserSyntaxError, "deps= takes a list of tensor variables, e.g. deps=[x, y]; got 'a'"),
    ("[self.k(a, o)]", ParserSyntaxError, "deps= entries name tensors; 'self.k(a, o)' calls a program "
                                          "function (it would submit a task): call it before and name its "
                                          "result"),
    ("[3]", ParserTypeError, "deps= entry '3' is a pl.Scalar[pl.INDEX], not a tensor or a pl.TaskId; only "
                             "those order tasks"),
    ("[a[0, 0]]", ParserTypeError, "deps= entry 'a[0, 0]' is a pl.Scalar[pl.FP32], not a tensor or a "
                                   "pl.TaskId; only those order tasks"),
])
def test_deps_that_are_not_a_list_of_tensors(deps, cls, message):
    text = f'''
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        o = pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        o = self.k(a, o, deps={deps})
        return o
'''
    with pytest.raises(cls) as ei:
        pl.parse(text, filename="deps_case.py")
    assert ei.value.message == message
    assert ei.value.span.filename == "deps_case.py" and ei.value.span.begin_line == 13


def test_deps_on_a_runtime_scope_and_on_an_inline_helper():
    with pytest.raises(ParserTypeError, match=r"pl.scope\(\) takes only mode="):
        @pl.function(type=pl.FunctionType.Orchestration)
        def f(a: pl.Tensor[S, pl.FP32]) -> pl.Tensor[S, pl.FP32]:
            with pl.scope(deps=[a]):
                pass
            return a

    @pl.inline
    def helper(x: pl.Tensor[S, pl.FP32]) -> pl.Tensor[S, pl.FP32]:
        return x

    with pytest.raises(ParserTypeError) as ei:
        @pl.function(type=pl.FunctionType.Orchestration)
        def g(a: pl.Tensor[S, pl.FP32]) -> pl.Tensor[S, pl.FP32]:
            b = helper(a, deps=[a])  # MARK-inline
            return b
    assert "not to inline helper 'helper'" in ei.value.message
    located(ei.value, "MARK-inline")


def test_other_keywords_on_function_calls_are_still_rejected():
    """Keywords naming a parameter bind like Python's (tests/language/test_call_keywords.py); any
    other keyword than deps= is an error naming it and the parameters."""
    with pytest.raises(ParserTypeError, match=r"'k' got an unexpected keyword argument 'after' \(its parameters: "
                                              r"a, o; a call also takes deps=\[\.\.\.\]\)"):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                o = pl.store(pl.load(a, [0, 0], H), [0, 0], o)
                return o

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
                o = self.k(a, o, after=[a])
                return o
