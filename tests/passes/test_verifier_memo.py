"""BASIC verification (SPEC §5) with the memo of already verified functions that the PassManager
keeps: a function left unchanged by a pass is not walked again, but a change to what it calls (a
callee's parameters) makes it checked again; and the scope rules of the single-set walk (loop and
branch bodies end their scope; a value assigned on both branches lives on)."""

import dataclasses

import pytest

import pypto.language as pl
from pypto.core.errors import VerificationError
from pypto.ir.expr import Var
from pypto.ir.stmt import SeqStmts
from pypto.ir.visitor import IRVisitor
from pypto.passes import verifier
from pypto.passes.verifier import VerifiedFunctions, verify_basic

SRC = """import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [64, 64])
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        y = self.k(x, y)
        return y
"""


def _with(prog, name, **changes):  # type: ignore[no-untyped-def]
    return dataclasses.replace(prog, functions=tuple(
        dataclasses.replace(f, **changes) if f.name == name else f for f in prog.functions))


def _walks(monkeypatch) -> list[str]:  # type: ignore[no-untyped-def]
    walked: list[str] = []
    real = verifier._Scoped.__init__

    def init(self, program, func, pass_name):  # type: ignore[no-untyped-def]
        walked.append(func.name)
        real(self, program, func, pass_name)

    monkeypatch.setattr(verifier._Scoped, "__init__", init)
    return walked


def test_an_unchanged_program_is_walked_once(monkeypatch):
    walked = _walks(monkeypatch)
    prog, memo = pl.parse(SRC), VerifiedFunctions()
    verify_basic(prog, "A", memo=memo)
    verify_basic(prog, "B", memo=memo)
    assert walked == ["k", "main"]
    k = prog.get_function("k")
    verify_basic(_with(prog, "k", body=SeqStmts(k.body.stmts, span=k.body.span)), "C", memo=memo)
    assert walked == ["k", "main", "k"]  # only the changed function; main calls the same k.params


def test_a_callee_gaining_a_parameter_is_caught_in_an_unchanged_caller():
    prog, memo = pl.parse(SRC), VerifiedFunctions()
    verify_basic(prog, "A", memo=memo)
    k = prog.get_function("k")
    extra = Var("extra", k.params[0].type)
    broken = _with(prog, "k", params=(*k.params, extra), param_directions=(*k.param_directions, k.param_directions[0]))
    assert broken.get_function("main") is prog.get_function("main")  # the caller is the same object
    with pytest.raises(VerificationError, match=r"after pass B, function 'main': call to 'k' passes 2 arguments, "
                                                r"it takes 3"):
        verify_basic(broken, "B", memo=memo)


def test_an_undefined_use_in_a_new_function_is_caught_with_a_memo():
    prog, memo = pl.parse(SRC), VerifiedFunctions()
    verify_basic(prog, "A", memo=memo)
    k = prog.get_function("k")
    ghost = Var("ghost", k.params[0].type)
    load = k.body.stmts[0]
    bad = SeqStmts((dataclasses.replace(load, value=dataclasses.replace(load.value, args=(ghost, *load.value.args[1:]))),
                    *k.body.stmts[1:]), span=k.body.span)
    with pytest.raises(VerificationError, match=r"after pass B, function 'k': variable 'ghost' is used but not defined"):
        verify_basic(_with(prog, "k", body=bad), "B", memo=memo)


SCOPES = """import pypto.language as pl


@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:
        if n > 0:
            a = n + 1
            b = n
        else:
            a = n - 1
        for i in pl.range(0, 4, 1):
            c = i
        return a
"""


def _assigned(func, name):  # type: ignore[no-untyped-def]
    """The Var bound to `name` anywhere in `func` (an assignment or a loop variable)."""
    found = []

    class Find(IRVisitor):
        def visit_AssignStmt(self, st):  # type: ignore[no-untyped-def]
            found.extend([st.var] if st.var.name == name else [])
            super().visit_AssignStmt(st)

        def visit_ForStmt(self, st):  # type: ignore[no-untyped-def]
            found.extend([st.loop_var] if st.loop_var.name == name else [])
            super().visit_ForStmt(st)

    Find().visit_stmt(func.body)
    return found[0]


@pytest.mark.parametrize(("ret", "error"), [
    ("a", None),                                   # assigned on both branches: defined after the if
    ("b", "variable 'b' is used but not defined"),  # only on one branch
    ("c", "variable 'c' is used but not defined"),  # the loop body's scope ended
    ("i", "variable 'i' is used but not defined"),  # so did the loop variable's
])
def test_scopes_of_branches_and_loops(ret, error):
    prog = pl.parse(SCOPES)   # returns a; the parser itself refuses the others: build them as IR
    main = prog.get_function("main")
    stmts = main.body.stmts
    back = dataclasses.replace(stmts[-1], values=(_assigned(main, ret),))
    prog = _with(prog, "main", body=SeqStmts((*stmts[:-1], back), span=main.body.span))
    if error is None:
        verify_basic(prog, "Frontend", memo=VerifiedFunctions())
    else:
        with pytest.raises(VerificationError, match=rf"after pass Frontend, function 'main': {error}"):
            verify_basic(prog, "Frontend", memo=VerifiedFunctions())
