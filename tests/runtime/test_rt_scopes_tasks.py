"""Scopes and tasks (SPEC §13) end to end: MANUAL runtime scopes, `pl.submit` TaskIds,
`with pl.at(...) as tid`, task options, SPMD launches — parsed, round-tripped, compiled, run on the
simulator against torch, and checked by the sanitizer."""

import re

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig
from pypto.runtime.sim.sanitizer import SanitizerError

H = [16, 64]

MANUAL = '''
import pypto.language as pl

@pl.program
class Manual:
    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 64])
        o = pl.store(pl.add(t, 1.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Out[pl.Tensor[[16, 64], pl.FP32]],
             c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.{scope}:
            b, t0 = pl.submit(self.inc, a, b, name_hint="first")
            with pl.at(level=pl.Level.CORE_GROUP{deps1}) as t1:
                c[:] = pl.mul(b, 2.0)
            c, t2 = pl.submit(self.inc, c, c{deps2})
        return c
'''


def _compile(text, tmp_path):
    return ir.compile(pl.parse(text), output_dir=tmp_path / "build",
                      verification_level=ir.VerificationLevel.ROUNDTRIP)


def _manual(scope="manual_scope()", deps1=", deps=[t0]", deps2=", deps=[t1]"):
    return MANUAL.format(scope=scope, deps1=deps1, deps2=deps2)


def test_manual_scope_round_trips_and_keeps_its_task_syntax():
    prog = pl.parse(_manual())
    text = prog.as_python()
    assert "with pl.manual_scope():" in text
    assert "pl.submit(self.inc, a, b, name_hint='first')" in text
    assert "with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]) as t1:" in text
    assert ir.structural_equal(pl.parse(text), prog)
    # pl.scope(mode=MANUAL) is the same scope
    same = pl.parse(_manual(scope="scope(mode=pl.ScopeMode.MANUAL)"))
    assert ir.structural_equal(same, prog)


def test_manual_scope_with_task_ids_runs_in_order_and_matches_torch(tmp_path):
    cp = _compile(_manual(), tmp_path)
    a, b, c = torch.randn(*H), torch.empty(*H), torch.empty(*H)
    cp(a, b, c, config=RunConfig(sanitize=True))
    torch.testing.assert_close(b, a + 1)
    torch.testing.assert_close(c, (a + 1) * 2 + 1)
    t0, t1, t2 = cp.last_run.tasks
    assert t0.manual and t1.manual and t2.manual
    assert t0.name_hint == "first"
    assert t1.deps == {0: "explicit"} and t2.deps == {1: "explicit"}  # nothing derived in MANUAL
    assert t1.start_cycle >= t0.end_cycle and t2.start_cycle >= t1.end_cycle
    assert [s.mode for s in cp.last_run.scopes][-1] is pl.ScopeMode.MANUAL
    host = (tmp_path / "build" / "orchestration" / "main.cpp").read_text()
    assert "PTO2_SCOPE(rt, PTO2ScopeMode::MANUAL)" in host
    assert "TaskId task0_id = submit_aiv_task(rt, FUNC_INC, task0);" in host
    assert "task1.add_dep(t0);" in host and 'task0.set_name("first");' in host


def test_auto_scope_derives_the_order_a_manual_one_does_not(tmp_path):
    auto = _compile(_manual(scope="scope()", deps1="", deps2=""), tmp_path / "auto")
    a, b, c = torch.randn(*H), torch.empty(*H), torch.empty(*H)
    auto(a, b, c, config=RunConfig(sanitize=True))
    torch.testing.assert_close(c, (a + 1) * 2 + 1)
    assert auto.last_run.tasks[1].deps == {0: "RAW"}
    assert not auto.last_run.tasks[1].manual


def test_sanitizer_reports_a_missing_manual_dependency_with_both_lines(tmp_path):
    text = _manual(deps2="")   # the last submit forgets deps=[t1]: it races the pl.at region
    cp = _compile(text, tmp_path)
    a, b, c = torch.randn(*H), torch.empty(*H), torch.empty(*H)
    with pytest.raises(SanitizerError) as ei:
        cp(a, b, c, config=RunConfig(sanitize=True))
    msg = str(ei.value)
    assert "[unordered-conflict]" in msg
    lines = text.splitlines()
    region = next(i for i, s in enumerate(lines, 1) if "as t1:" in s)
    submit = next(i for i, s in enumerate(lines, 1) if "c, t2 = pl.submit" in s)
    assert re.search(rf"task 2 \('inc', called at <pl\.parse-\d+>:{submit}\) reads 'a'", msg)
    assert re.search(rf"task 1 \('main_incore_0', called at <pl\.parse-\d+>:{region}\) writes 'c'", msg)


def test_task_id_of_a_submit_orders_a_later_task_in_auto_scope_too(tmp_path):
    text = '''
import pypto.language as pl

@pl.program
class Halves:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 64])
        o = pl.store(pl.mul(t, 2.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32], b: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        r0, t0 = pl.submit(self.scale, a[0:16], b[0:16])
        r1, t1 = pl.submit(self.scale, a[16:32], b[16:32], deps=[t0], allow_early_resolve=False)
        return b
'''
    cp = _compile(text, tmp_path)
    a, b = torch.randn(32, 64), torch.empty(32, 64)
    cp(a, b)
    torch.testing.assert_close(b, 2 * a)
    t0, t1 = cp.last_run.tasks
    assert t1.deps == {0: "explicit"} and t1.allow_early_resolve is False


def test_no_dep_args_leave_an_argument_out_of_dependency_tracking(tmp_path):
    # AUTO scope: the region reads b, which task 0 writes (RAW) — unless b is a no_dep_arg
    plain = _compile(_manual(scope="scope()", deps1="", deps2=""), tmp_path / "plain")
    text = _manual(scope="scope()", deps1=", deps=[t0], no_dep_args=[b]", deps2="")
    prog = pl.parse(text)
    assert "no_dep_args=[b]) as t1:" in prog.as_python()
    cp = _compile(text, tmp_path / "nodep")
    for p in (plain, cp):
        a, b, c = torch.randn(*H), torch.empty(*H), torch.empty(*H)
        p(a, b, c)
        torch.testing.assert_close(c, (a + 1) * 2 + 1)
    assert plain.last_run.tasks[1].deps == {0: "RAW"}
    assert cp.last_run.tasks[1].deps == {0: "explicit"}
    host = (tmp_path / "nodep" / "build" / "orchestration" / "main.cpp").read_text()
    assert "add_input(b_1, /*no_dep=*/true);" in host


SPMD = '''
import pypto.language as pl

@pl.program
class Spmd:
    @pl.function(type=pl.FunctionType.InCore)
    def rows(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        r = pl.get_block_idx() * 16
        t = pl.load(a, [r, 0], [16, 64])
        o = pl.store(pl.add(t, pl.cast(pl.get_block_num(), pl.FP32)), [r, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
{body}
        return o
'''


@pytest.mark.parametrize("body", [
    "        with pl.spmd(core_num=4):\n            o = self.rows(a, o)",
    "        with pl.spmd(core_num=4, sync_start=True):\n            o = self.rows(a, o)",
    "        o, tid = pl.spmd_submit(self.rows, a, o, core_num=4)",
])
def test_spmd_runs_one_task_per_block_spread_over_cores(tmp_path, body):
    text = SPMD.format(body=body)
    prog = pl.parse(text)
    assert ir.structural_equal(pl.parse(prog.as_python()), prog)
    cp = _compile(text, tmp_path)
    a, o = torch.randn(64, 64), torch.empty(64, 64)
    cp(a, o, config=RunConfig(sanitize=True))
    torch.testing.assert_close(o, a + 4.0)
    tasks = cp.last_run.tasks
    assert [t.block_idx for t in tasks] == [0, 1, 2, 3] and {t.block_num for t in tasks} == {4}
    assert len({t.core for t in tasks}) == 4 and all(t.deps == {} for t in tasks)
    assert len({t.start_cycle for t in tasks}) == 1   # independent blocks start together
    host = (tmp_path / "build" / "orchestration" / "main.cpp").read_text()
    assert "set_block_num(4);" in host
    assert ("set_sync_start(true);" in host) == ("sync_start" in body)


def test_spmd_loop_form_passes_the_block_index_to_a_region(tmp_path):
    body = ("        for blk in pl.spmd(4):\n"
            "            with pl.at(level=pl.Level.CORE_GROUP):\n"
            "                o[blk * 16:blk * 16 + 16, :] = pl.mul(a[blk * 16:blk * 16 + 16, :], 3.0)")
    text = SPMD.format(body=body)
    prog = pl.parse(text)
    assert "for blk in pl.spmd(core_num=4):" in prog.as_python()
    assert ir.structural_equal(pl.parse(prog.as_python()), prog)
    cp = _compile(text, tmp_path)
    a, o = torch.randn(64, 64), torch.empty(64, 64)
    cp(a, o, config=RunConfig(sanitize=True))
    torch.testing.assert_close(o, 3 * a)
    assert [t.args[-1] for t in cp.last_run.tasks if t.kernel.startswith("main_incore")] == [0, 1, 2, 3]


@pytest.mark.parametrize("text", [
    _manual(),
    SPMD.format(body="        o, tid = pl.spmd_submit(self.rows, a, o, core_num=4)"),
    SPMD.format(body=("        for blk in pl.spmd(4):\n"
                      "            with pl.at(level=pl.Level.CORE_GROUP):\n"
                      "                o[blk * 16:blk * 16 + 16, :] = pl.mul(a[blk * 16:blk * 16 + 16, :], 3.0)")),
])
def test_every_pass_keeps_the_meaning_of_tasks_and_spmd(tmp_path, text):
    """The torch script of every pass dump (TaskIds as None, SPMD bodies once per block) and the
    simulator agree with the expected numbers."""
    cp = ir.compile(pl.parse(text), output_dir=tmp_path / "b", dump_passes=True)
    n = 16 if "Manual" in text else 64
    ins = [torch.randn(n, 64)] + [torch.zeros(n, 64) for _ in range(2 if n == 16 else 1)]
    if n == 16:
        want = [ins[0] + 1, (ins[0] + 1) * 2 + 1]
    else:
        want = [ins[0] + 4.0] if "spmd_submit" in text else [3 * ins[0]]
    rep = cp.validate_ir(ins, want)
    assert rep.ok, rep
    assert len(rep.stages) > 5


CLUSTER = '''
import pypto.language as pl

@pl.program
class Grouped:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
             x: pl.Tensor[[16, 64], pl.FP32], c: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
             d: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> tuple[pl.Tensor[[16, 16], pl.FP32], pl.Tensor[[16, 64], pl.FP32]]:
        with pl.cluster():
            with pl.at(level=pl.Level.AIC):
                c[:] = pl.matmul(a, b)
            with pl.at(level=pl.Level.AIV):
                d[:] = pl.add(x, 1.0)
        return c, d
'''


def test_cluster_groups_a_cube_and_a_vector_kernel_into_one_group(tmp_path):
    prog = pl.parse(CLUSTER)
    assert "        with pl.cluster():\n            with pl.at(level=pl.Level.AIC):" in prog.as_python()
    cp = _compile(CLUSTER, tmp_path)
    group = cp.program.get_function("main_group_0")
    assert group.func_type is pl.FunctionType.Group
    a, b, x = torch.randn(16, 16).half(), torch.randn(16, 16).half(), torch.randn(16, 64)
    c, d = torch.empty(16, 16), torch.empty(16, 64)
    cp(a, b, x, c, d, config=RunConfig(sanitize=True))
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(d, x + 1)
    t0, t1 = cp.last_run.tasks
    assert (t0.group, t1.group) == (0, 0) and t0.start_cycle == t1.start_cycle
    assert (t0.core, t1.core) == ("AIC0", "AIV0")     # one cluster: cube core 0 and vector core 0
    host = (tmp_path / "build" / "orchestration" / "main.cpp").read_text()
    assert "submit_mixed_task(rt, {{FUNC_MAIN_INCORE_0, task0}, {FUNC_MAIN_INCORE_1, task1}});" in host


def test_spmd_function_launches_every_kernel_it_submits_on_n_blocks(tmp_path):
    text = SPMD.format(body="        o, tid = pl.spmd_submit(self.launch, a, o, core_num=4)").replace(
        "    @pl.function(type=pl.FunctionType.Orchestration)\n    def main",
        "    @pl.function(type=pl.FunctionType.Spmd)\n"
        "    def launch(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) "
        "-> pl.Tensor[[64, 64], pl.FP32]:\n"
        "        o = self.rows(a, o)\n        return o\n\n"
        "    @pl.function(type=pl.FunctionType.Orchestration)\n    def main")
    prog = pl.parse(text)
    assert prog.get_function("launch").func_type is pl.FunctionType.Spmd
    assert ir.structural_equal(pl.parse(prog.as_python()), prog)
    cp = _compile(text, tmp_path)
    a, o = torch.randn(64, 64), torch.empty(64, 64)
    cp(a, o, config=RunConfig(sanitize=True))
    torch.testing.assert_close(o, a + 4.0)
    assert [t.block_idx for t in cp.last_run.tasks] == [0, 1, 2, 3]
    host = (tmp_path / "build" / "orchestration" / "main.cpp").read_text()
    assert "push_block_num(rt, 4);" in host and "pop_block_num(rt);" in host


def test_writes_of_a_manual_scope_still_order_the_auto_tasks_after_it(tmp_path):
    text = _manual().replace("        return c\n", "        d, t3 = pl.submit(self.inc, c, b)\n        return c\n")
    cp = _compile(text, tmp_path)
    a, b, c = torch.randn(*H), torch.empty(*H), torch.empty(*H)
    cp(a, b, c, config=RunConfig(sanitize=True))
    torch.testing.assert_close(b, (a + 1) * 2 + 2)
    last = cp.last_run.tasks[-1]
    assert not last.manual and last.deps == {1: "RAW", 2: "RAW", 0: "WAW"}  # c read, b rewritten


def test_sanitizer_reports_blocks_of_one_launch_writing_the_same_rows(tmp_path):
    text = SPMD.format(body="        with pl.spmd(core_num=2):\n            o = self.rows(a, o)").replace(
        "r = pl.get_block_idx() * 16", "r = pl.get_block_idx() * 0")
    cp = _compile(text, tmp_path)
    with pytest.raises(SanitizerError, match=r"unordered-conflict.*task 1 \('rows'.*task 0 \('rows'"):
        cp(torch.randn(64, 64), torch.empty(64, 64), config=RunConfig(sanitize=True))


def test_compile_time_task_graph_follows_task_ids_and_manual_scopes(tmp_path):
    import json

    cp = _compile(_manual(), tmp_path)
    graph = json.loads((tmp_path / "build" / "report" / "task_dependencies.json").read_text())["main"]
    assert [t.get("manual") for t in graph["tasks"]] == [True, True, True]
    assert [t.get("task_deps", []) for t in graph["tasks"]] == [[], [0], [1]]
    assert [(e["from"], e["to"], e["kinds"]) for e in graph["edges"]] == [(0, 1, ["explicit"]),
                                                                          (1, 2, ["explicit"])]
    auto = _compile(_manual(scope="scope()", deps1="", deps2=""), tmp_path / "auto")
    graph = json.loads((tmp_path / "auto" / "build" / "report" / "task_dependencies.json").read_text())["main"]
    assert [(e["from"], e["to"], e["kinds"]) for e in graph["edges"]] == [(0, 1, ["RAW"]), (1, 2, ["RAW", "WAW"])]
    assert cp.program is not None


LOOP = '''
import pypto.language as pl

@pl.program
class Loop:
    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, a: pl.Tensor[[16, 64], pl.FP32], o: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 64])
        o = pl.store(pl.add(t, 1.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.manual_scope():
            b, t = pl.submit(self.inc, a, b)
            for i in pl.{kind}(0, 3):
                with pl.at(level=pl.Level.CORE_GROUP, deps=[t]) as t:
                    b[:] = pl.add(b, 2.0)
        return b
'''


@pytest.mark.parametrize("kind", ["range", "unroll"])
def test_a_task_id_carried_around_a_loop_chains_the_iterations(tmp_path, kind):
    text = LOOP.format(kind=kind)
    cp = ir.compile(pl.parse(text), output_dir=tmp_path / "b", dump_passes=True,
                    verification_level=ir.VerificationLevel.ROUNDTRIP)
    a, b = torch.randn(*H), torch.empty(*H)
    cp(a, b, config=RunConfig(sanitize=True))
    torch.testing.assert_close(b, a + 7)
    assert [dict(t.deps) for t in cp.last_run.tasks] == [{}, {0: "explicit"}, {1: "explicit"}, {2: "explicit"}]
    assert cp.validate_ir([a, torch.zeros(*H)], [a + 7]).ok


MIXED = '''
import pypto.language as pl

@pl.program
class Mixed:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 16], pl.FP16], b: pl.Tensor[[16, 16], pl.FP16],
             c: pl.Out[pl.Tensor[[32, 16], pl.FP32]], d: pl.Out[pl.Tensor[[32, 16], pl.FP32]]) -> pl.Tensor[[32, 16], pl.FP32]:
        with pl.manual_scope():
            with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN)]) as t0:
                c[:] = pl.relu(pl.matmul(a, b))
            with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]):
                d[:] = pl.add(c, 1.0)
        return d
'''


def test_task_id_of_a_mixed_region_names_every_kernel_of_its_cluster(tmp_path):
    """pl.split_aiv(2, mode=UP_DOWN) splits the vector half over both vector cores; the region's
    TaskId stands for the cube task and both vector tasks."""
    cp = _compile(MIXED, tmp_path)
    a, b = torch.randn(32, 16).half(), torch.randn(16, 16).half()
    c, d = torch.empty(32, 16), torch.empty(32, 16)
    cp(a, b, c, d, config=RunConfig(sanitize=True))
    ref = torch.relu(a.float() @ b.float())
    torch.testing.assert_close(c, ref, rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(d, ref + 1, rtol=1e-3, atol=1e-3)
    tasks = cp.last_run.tasks
    assert [(t.core_type, t.subblock, t.group) for t in tasks[:3]] == [("AIC", None, 0), ("AIV", 0, 0), ("AIV", 1, 0)]
    assert tasks[3].deps == {0: "explicit", 1: "explicit", 2: "explicit"}
