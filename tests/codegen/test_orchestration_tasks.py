"""Host C++ of scopes and tasks (SPEC §13) — MANUAL scopes, pl.submit TaskIds and add_dep,
no_dep_args, task names, SPMD launches (scope, pl.spmd_submit, Spmd functions), pl.cluster
groups — compiles against the runtime API stub (`cpp_check.py`)."""

import sys
from pathlib import Path

import pytest
from cpp_check import compiles_as_cpp

import pypto.language as pl
from pypto import ir

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
import test_rt_scopes_tasks as T  # noqa: E402

SPMD_FN = T.SPMD.format(body="        o, tid = pl.spmd_submit(self.launch, a, o, core_num=4, sync_start=True)").replace(
    "    @pl.function(type=pl.FunctionType.Orchestration)\n    def main",
    "    @pl.function(type=pl.FunctionType.Spmd)\n"
    "    def launch(self, a: pl.Tensor[[64, 64], pl.FP32], o: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) "
    "-> pl.Tensor[[64, 64], pl.FP32]:\n        o = self.rows(a, o)\n        return o\n\n"
    "    @pl.function(type=pl.FunctionType.Orchestration)\n    def main")

PROGRAMS = {
    "manual": T._manual(),
    "no_dep": T._manual(scope="scope()", deps1=", deps=[t0], no_dep_args=[b], allow_early_resolve=False", deps2=""),
    "spmd_loop": T.SPMD.format(body=("        for blk in pl.spmd(4):\n"
                                      "            with pl.at(level=pl.Level.CORE_GROUP):\n"
                                      "                o[blk * 16:blk * 16 + 16, :] = pl.mul(a[blk * 16:blk * 16 + 16, :], 3.0)")),
    "spmd_fn": SPMD_FN,
    "cluster": T.CLUSTER,
    "mixed": T.MIXED,
    "loop": T.LOOP.format(kind="range"),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_task_programs_generate_host_code_that_compiles(name, tmp_path):
    cp = ir.compile(pl.parse(PROGRAMS[name]), output_dir=tmp_path / "b")
    host = tmp_path / "b" / "orchestration" / "main.cpp"
    text = host.read_text()
    expected = {"manual": "PTO2ScopeMode::MANUAL", "no_dep": "/*no_dep=*/true", "spmd_loop": "add_block_idx_scalar",
                "spmd_fn": "push_block_num(rt, 4, /*sync_start=*/true);", "cluster": "submit_mixed_task",
                "mixed": "TaskId", "loop": "add_dep(t"}[name]
    assert expected in text
    assert cp.program is not None
    compiles_as_cpp([host], tmp_path)
