"""The BASIC verifier keeps distributed code honest (SPEC §8): a pass that lost a tensor's window
binding is caught — at a call of a function with a window-bound parameter, and at a `pld.*` op."""

import dataclasses

import pytest

import pypto.language as pl
from pypto.core.errors import VerificationError
from pypto.ir.expr import Call, Var
from pypto.ir.stmt import EvalStmt, SeqStmts
from pypto.ir.types import TensorType
from pypto.passes.verifier import verify_basic

SRC = """import pypto.language as pl
import pypto.language.distributed as pld


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, sig: pld.DistributedTensor[[2, 1], pl.INT32]):
        pld.notify(sig, 0, [0, 0], 1)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, sig: pld.DistributedTensor[[2, 1], pl.INT32]):
        self.k(sig)
"""


def _unbind(v: Var) -> Var:
    return Var(v.name, TensorType(v.type.shape, v.type.dtype), span=v.span)


def test_a_program_with_its_windows_verifies():
    verify_basic(pl.parse(SRC), "Test")


def test_a_plain_tensor_reaching_a_window_parameter_fails_verification():
    prog = pl.parse(SRC)
    main = prog.get_function("main")
    plain = _unbind(main.params[0])
    call = main.body.stmts[0].expr
    body = SeqStmts((EvalStmt(dataclasses.replace(call, args=(plain,))), *main.body.stmts[1:]))
    broken = dataclasses.replace(prog, functions=tuple(
        dataclasses.replace(f, params=(plain,), body=body) if f.name == "main" else f for f in prog.functions))
    with pytest.raises(VerificationError, match=r"after pass Test, function 'main': argument 'sig' of 'k' must be "
                                                r"a window-bound pld.DistributedTensor"):
        verify_basic(broken, "Test")


def test_a_pld_op_on_an_unbound_tensor_fails_verification():
    prog = pl.parse(SRC)
    k = prog.get_function("k")
    plain = _unbind(k.params[0])
    call: Call = k.body.stmts[0].expr
    body = SeqStmts((EvalStmt(dataclasses.replace(call, args=(plain, *call.args[1:]))), *k.body.stmts[1:]))
    broken = dataclasses.replace(prog, functions=tuple(
        dataclasses.replace(f, params=(plain,), body=body) if f.name == "k" else f for f in prog.functions))
    with pytest.raises(VerificationError, match=r"function 'k': pld.system.notify: argument 'target' must be a "
                                                r"window-bound"):
        verify_basic(broken, "Test")
