"""IR of scopes and tasks (SPEC §13): ScopeStmt modes, TaskId bindings, task options, SPMD and
cluster scopes, submit calls — printed, parsed back, serialized, compared and rewritten."""

import pytest

import pypto.language as pl
from pypto import ir
from pypto.core.enums import ScopeKind, ScopeMode
from pypto.ir.serialize import deserialize, serialize
from pypto.ir.stmt import ScopeStmt
from pypto.ir.visitor import IRMutator, IRVisitor
from pypto.passes.rewrite import FreshBindings

TEXT = '''
import pypto.language as pl

@pl.program
class Tasks:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(a, [pl.get_block_idx() * 16, 0], [16, 64])
        o = pl.store(t, [pl.get_block_idx() * 16, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
             p: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.manual_scope():
            o, t0 = pl.spmd_submit(self.k, a, o, core_num=4, sync_start=True, name_hint="spread")
            with pl.at(level=pl.Level.CORE_GROUP, deps=[t0], no_dep_args=[a], allow_early_resolve=False) as t1:
                p[:] = pl.add(o, a)
        with pl.scope():
            for blk in pl.spmd(4):
                o, t2 = pl.submit(self.k, p, o, deps=[t1])
        with pl.spmd(core_num=2):
            with pl.cluster():
                o = self.k(a, o)
        return o
'''

LINES = [
    "with pl.manual_scope():",
    "pl.spmd_submit(self.k, a, o, core_num=4, sync_start=True, name_hint='spread')",
    "with pl.at(level=pl.Level.CORE_GROUP, deps=[t0], no_dep_args=[a], allow_early_resolve=False) as t1:",
    "with pl.scope():",
    "for blk in pl.spmd(core_num=4):",
    "pl.submit(self.k, p, o, deps=[t1])",
    "with pl.spmd(core_num=2):",
    "with pl.cluster():",
]


def _scopes(node):
    found = []

    class V(IRVisitor):
        def visit_ScopeStmt(self, s):
            found.append(s)
            super().visit_ScopeStmt(s)

    V().visit_program(node)
    return found


def test_printed_forms_parse_back_equal_and_serialize():
    prog = pl.parse(TEXT)
    text = prog.as_python()
    for line in LINES:
        assert line in text, line
    again = pl.parse(text)
    ir.assert_structural_equal(prog, again)
    assert ir.structural_hash(prog) == ir.structural_hash(again)
    ir.assert_structural_equal(deserialize(serialize(prog)), prog)
    kinds = [(s.kind, s.mode) for s in _scopes(prog)]
    assert kinds == [(ScopeKind.Runtime, ScopeMode.MANUAL), (ScopeKind.InCore, ScopeMode.AUTO),
                     (ScopeKind.Runtime, ScopeMode.AUTO), (ScopeKind.Spmd, ScopeMode.AUTO),
                     (ScopeKind.Spmd, ScopeMode.AUTO), (ScopeKind.Cluster, ScopeMode.AUTO)]
    region = _scopes(prog)[1]
    assert region.task_id.name == "t1" and ir.structural_equal(region.task_id.type, pl.TaskId.to_ir())
    assert region.attr("allow_early_resolve") is False and [v.name for v in region.no_dep_args] == ["a"]


@pytest.mark.parametrize("old, new", [
    ("with pl.manual_scope():", "with pl.scope():"),
    ("name_hint=\"spread\"", "name_hint=\"other\""),
    ("core_num=4, sync_start=True", "core_num=4"),
    ("allow_early_resolve=False", "allow_early_resolve=True"),
    ("deps=[t0], no_dep_args=[a]", "deps=[t0]"),
    ("for blk in pl.spmd(4):", "for blk in pl.spmd(3):"),
])
def test_structural_equality_sees_every_scope_and_task_option(old, new):
    assert old in TEXT
    assert not ir.structural_equal(pl.parse(TEXT), pl.parse(TEXT.replace(old, new)))


def test_mutators_keep_unchanged_scopes_and_rebind_task_ids():
    prog = pl.parse(TEXT)
    main = prog.get_function("main")
    assert IRMutator().visit_function(main) is main
    fresh = FreshBindings({}).visit_function(main)
    old, new = _scopes(prog)[1], _scopes(ir.Program("x", (fresh,)))[1]
    assert new.task_id is not old.task_id and new.task_id.name == old.task_id.name
    later = _scopes(ir.Program("x", (fresh,)))[3]
    assert later.block_var is not _scopes(prog)[3].block_var
    ir.assert_structural_equal(fresh, main)


def test_task_id_is_typed_and_not_data():
    prog = pl.parse(TEXT)
    assert pl.TaskId.to_ir().dtype is pl.TASK_ID
    assert isinstance(_scopes(prog)[0], ScopeStmt)
