"""`Call.deps` / `ScopeStmt.deps` (explicit task dependencies, SPEC §1) in the IR core: structural
equality and hash, serialization, visitors and mutators treat them as uses of Vars."""

from dataclasses import replace

import pypto.language as pl
from pypto import ir
from pypto.ir import AssignStmt, Call, ScopeStmt, Var
from pypto.ir.visitor import IRMutator, IRVisitor

H = [16, 64]


@pl.program
class Two:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        o = pl.store(pl.load(a, [0, 0], H), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[H, pl.FP32], x: pl.Out[pl.Tensor[H, pl.FP32]],
             y: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        x = self.k(a, x)
        y = self.k(a, y, deps=[x])
        with pl.at(level=pl.Level.CORE_GROUP, deps=[y]):
            a2 = pl.add(a, 1.0)
        return y


def _main():
    return Two.get_function("main")


def _with_main(body_stmts):
    f = _main()
    return replace(Two, functions=(Two.functions[0], replace(f, body=replace(f.body, stmts=body_stmts))))


def test_deps_take_part_in_structural_equality_and_hash():
    stmts = _main().body.stmts
    call = stmts[1].value
    a = _main().params[0]
    no_deps = _with_main((stmts[0], replace(stmts[1], value=replace(call, deps=())), *stmts[2:]))
    other_dep = _with_main((stmts[0], replace(stmts[1], value=replace(call, deps=(a,))), *stmts[2:]))
    same = pl.parse(Two.as_python())
    assert ir.structural_equal(Two, same) and ir.structural_hash(Two) == ir.structural_hash(same)
    assert not ir.structural_equal(Two, no_deps)
    assert not ir.structural_equal(Two, other_dep)
    assert ir.structural_hash(Two) != ir.structural_hash(no_deps)
    assert ir.structural_hash(Two) != ir.structural_hash(other_dep)
    scope = stmts[2]
    assert isinstance(scope, ScopeStmt)
    no_scope_deps = _with_main((*stmts[:2], replace(scope, deps=()), *stmts[3:]))
    assert not ir.structural_equal(Two, no_scope_deps)


def test_serialization_keeps_deps_and_their_sharing():
    back = ir.deserialize(ir.serialize(Two))
    ir.assert_structural_equal(Two, back)
    stmts = back.get_function("main").body.stmts
    assert stmts[1].value.deps[0] is stmts[0].var  # the same Var object, not a copy
    assert stmts[2].deps[0] is stmts[1].var


def test_visitors_see_deps_and_mutators_remap_them():
    seen = []

    class Uses(IRVisitor):
        def visit_Var(self, e: Var) -> None:
            seen.append(e)

    stmts = _main().body.stmts
    x, y = stmts[0].var, stmts[1].var
    Uses().visit_expr(stmts[1].value)
    assert seen.count(x) == 1  # only through deps: x is not an argument
    seen.clear()
    Uses().visit_stmt(replace(stmts[2], body=replace(stmts[2].body, stmts=())))
    assert seen == [y]

    fresh = Var("x2", x.type)
    new_call = IRMutator({x: fresh}).visit_expr(stmts[1].value)
    assert isinstance(new_call, Call) and new_call.deps == (fresh,) and new_call.args == stmts[1].value.args
    new_scope = IRMutator({y: fresh}).visit_stmt(stmts[2])
    assert new_scope.deps == (fresh,) and new_scope.body is stmts[2].body
    # nothing to substitute: the very same nodes come back
    assert IRMutator().visit_expr(stmts[1].value) is stmts[1].value
    assert IRMutator().visit_stmt(stmts[2]) is stmts[2]
    assert isinstance(stmts[0], AssignStmt)
