"""The record of a run whose task fails inside runtime scopes (`runtime/sim/rewind.py`): a run that
runs each task when it starts (`PYPTO_SIM_BATCH=0`, no replay), a run with deferred tasks, a
replayed run and a replayed run without batches leave the same record, scope "end" records
included, and write the same DFX files. The one-at-a-time run stops its schedule at the failure:
the scopes open then end with the rings of that moment and nothing starts after the failed task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from test_rt_replay import _task_facts

import pypto.language as pl
from pypto import ir
from pypto.core.errors import RuntimeSimError
from pypto.runtime import RunConfig
from pypto.runtime.dfx.deps import deps_json
from pypto.runtime.sim import SimDevice, batch

_NESTED = """
import pypto.language as pl

@pl.program
class ScopedDivides:
    @pl.function(type=pl.FunctionType.InCore)
    def quot(self, a: pl.Tensor[[16, 32], pl.INT32], b: pl.Tensor[[16, 32], pl.INT32],
             q: pl.Out[pl.Tensor[[16, 32], pl.INT32]]) -> pl.Tensor[[16, 32], pl.INT32]:
        q = pl.store(pl.tile.div(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [16, 32])), [0, 0], q)
        return q

    @pl.function(type=pl.FunctionType.InCore)
    def acc(self, a: pl.Tensor[[16, 32], pl.INT32], b: pl.Tensor[[16, 32], pl.INT32],
            c: pl.InOut[pl.Tensor[[16, 32], pl.INT32]]) -> pl.Tensor[[16, 32], pl.INT32]:
        q = pl.tile.div(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [16, 32]))
        c = pl.store(pl.add(q, pl.load(c, [0, 0], [16, 32])), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.InCore)
    def blk(self, a: pl.Tensor[[128, 32], pl.INT32],
            d: pl.Out[pl.Tensor[[128, 32], pl.INT32]]) -> pl.Tensor[[128, 32], pl.INT32]:
        r = pl.get_block_idx() * 16
        d = pl.store(pl.load(a, [r, 0], [16, 32]), [r, 0], d)
        return d

    @pl.function(type=pl.FunctionType.Orchestration)
    def inner(self, a: pl.Tensor[[64, 32], pl.INT32], b: pl.Tensor[[64, 32], pl.INT32],
              c: pl.InOut[pl.Tensor[[64, 32], pl.INT32]]) -> pl.Tensor[[64, 32], pl.INT32]:
        with pl.scope():
            for j in pl.range(0, 24):
                i = j % 4
                sc = pl.slice(c, [16, 32], [i * 16, 0])
                sc = self.acc(pl.slice(a, [16, 32], [i * 16, 0]), pl.slice(b, [16, 32], [i * 16, 0]), sc)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 32], pl.INT32], b: pl.Tensor[[128, 32], pl.INT32],
             c: pl.InOut[pl.Tensor[[128, 32], pl.INT32]],
             d: pl.Out[pl.Tensor[[128, 32], pl.INT32]]) -> pl.Tensor[[128, 32], pl.INT32]:
        with pl.scope():
            tmp = pl.create_tensor([64, 32], dtype=pl.INT32)
            for i in pl.range(0, 4):
                st = pl.slice(tmp, [16, 32], [i * 16, 0])
                st = self.quot(pl.slice(a, [16, 32], [i * 16, 0]), pl.slice(b, [16, 32], [i * 16, 0]), st)
            lo = pl.slice(c, [64, 32], [0, 0])
            lo = self.inner(tmp, pl.slice(b, [64, 32], [0, 0]), lo)
            hi = pl.slice(c, [64, 32], [64, 0])
            hi = self.inner(pl.slice(a, [64, 32], [64, 0]), pl.slice(b, [64, 32], [64, 0]), hi)
        with pl.scope():
            with pl.spmd(core_num=8):     # SPMD blocks are not deferred: the deferred tasks run first
                d = self.blk(a, d)
            for j in pl.range(0, 8):
                sc = pl.slice(c, [16, 32], [j * 16, 0])
                sc = self.acc(pl.slice(a, [16, 32], [j * 16, 0]), pl.slice(b, [16, 32], [j * 16, 0]), sc)
        return c
"""

_ENTERING = """
import pypto.language as pl

@pl.program
class FailsEntering:
    @pl.function(type=pl.FunctionType.InCore)
    def quot(self, a: pl.Tensor[[16, 32], pl.INT32], b: pl.Tensor[[16, 32], pl.INT32],
             q: pl.Out[pl.Tensor[[16, 32], pl.INT32]]) -> pl.Tensor[[16, 32], pl.INT32]:
        q = pl.store(pl.tile.div(pl.load(a, [0, 0], [16, 32]), pl.load(b, [0, 0], [16, 32])), [0, 0], q)
        return q

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[128, 32], pl.INT32], b: pl.Tensor[[128, 32], pl.INT32],
             c: pl.InOut[pl.Tensor[[128, 32], pl.INT32]],
             d: pl.Out[pl.Tensor[[128, 32], pl.INT32]]) -> pl.Tensor[[128, 32], pl.INT32]:
        with pl.scope():
            for i in pl.range(0, 8):
                sc = pl.slice(c, [16, 32], [i * 16, 0])
                sc = self.quot(pl.slice(a, [16, 32], [i * 16, 0]), pl.slice(b, [16, 32], [i * 16, 0]), sc)
                with pl.scope():      # entering it starts the task just submitted
                    sd = pl.slice(d, [16, 32], [i * 16, 0])
                    sd = self.quot(pl.slice(b, [16, 32], [i * 16, 0]), pl.slice(b, [16, 32], [i * 16, 0]), sd)
        return c
"""

_OUT_OF_BOUNDS = """
import pypto.language as pl

@pl.program
class LateFault:
    @pl.function(type=pl.FunctionType.InCore)
    def rows(self, x: pl.Tensor[[64, 64], pl.FP32], r: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        t = pl.load(x, [r, 0], [16, 64])
        y = pl.store(pl.exp(t), [r, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], y: pl.Out[pl.Tensor[[64, 64], pl.FP32]],
             z: pl.Out[pl.Tensor[[64, 64], pl.FP32]], w: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.scope():
            for k in pl.range(4):
                y = self.rows(x, k * 16, y)
            with pl.scope():
                for k in pl.range(6):
                    z = self.rows(y, k * 12, z)     # k = 5: rows 60:76 of 64, out of bounds
                for j in pl.range(40):
                    w = self.rows(x, (j % 4) * 16, w)
        return z
"""

_DFX = ("swimlane.json", "scope_stats.json", "scope_stats.jsonl", "deps.json")
# (batching on, replay on) per mode
_MODES = {"one at a time": (False, False), "deferred": (True, False), "replayed": (True, True),
          "replayed unbatched": (False, True)}


def _args(seed: int, zero_row: int | None) -> list:
    """Arguments of `_NESTED` / `_ENTERING`; b[zero_row, 3] = 0 unless `zero_row` is None."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randint(-1000, 1000, (128, 32), generator=g, dtype=torch.int32)
    b = torch.randint(1, 50, (128, 32), generator=g, dtype=torch.int32)
    if zero_row is not None:
        b[zero_row, 3] = 0
    return [a, b, torch.randint(-5, 5, (128, 32), generator=g, dtype=torch.int32), torch.zeros(128, 32, dtype=torch.int32)]


def _failed_run(cp, mode: str, make_args, monkeypatch) -> tuple:
    """A run of `cp` on `make_args(False)` that fails, in `mode` (`_MODES`; a replayed mode runs
    `make_args(True)` first, so that the failing run replays); returns its error, record, outputs
    and DFX files."""
    batched, replaying = _MODES[mode]
    if batched:
        monkeypatch.delenv(batch.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(batch.ENV_VAR, "0")
    cfg = RunConfig(sim_replay=replaying, enable_scope_stats=True, enable_chip_swimlane=4, enable_dep_gen=True)
    dev = SimDevice(cp.backend_type)
    if replaying:
        cp.run_on(dev, make_args(True), cfg)
    args = make_args(False)
    with pytest.raises(RuntimeSimError) as err:
        cp.run_on(dev, args, cfg)
    monkeypatch.delenv(batch.ENV_VAR, raising=False)
    rec = cp.last_run
    assert rec.replayed == replaying
    out = Path(cp.output_dir) / "dfx_outputs"
    files = {name: (out / name).read_text() for name in _DFX}
    return str(err.value), rec, args, files


def _compare(cp, make_args, monkeypatch, modes=tuple(_MODES)):
    """Every mode's failed run (`_failed_run`) against the one-at-a-time run's: error, record,
    dependencies, outputs and DFX files; returns that run's (error, record, files)."""
    runs = {mode: _failed_run(cp, mode, make_args, monkeypatch) for mode in modes}
    err, rec, args, files = runs["one at a time"]
    for mode, (e, r, a, f) in runs.items():
        assert e == err, mode
        assert _task_facts(r) == _task_facts(rec), f"{mode}: records differ"
        assert deps_json(r) == deps_json(rec), mode
        assert all(torch.equal(x, y) for x, y in zip(a, args)), f"{mode}: outputs differ"
        for name in _DFX:
            assert f[name] == files[name], f"{mode}: {name} differs"
    failed = next(t for t in rec.tasks if t.start_cycle is not None and t.end_cycle is None)
    assert f"task {failed.task_id} " in err
    assert all(t.start_cycle is None or t.start_cycle <= failed.start_cycle for t in rec.tasks), \
        "a task started after the failed one"
    return err, rec, files


@pytest.fixture(scope="module")
def nested(tmp_path_factory):
    return ir.compile(pl.parse(_NESTED), output_dir=tmp_path_factory.mktemp("nested"), dump_passes=False,
                      skip_ptoas=True)


@pytest.mark.parametrize("zero_row, open_scopes", [(2, ["main/scope@40"]),
                                                   (100, ["main/scope@40/inner/scope@29", "main/scope@40/inner",
                                                          "main/scope@40"])])
def test_scopes_open_at_a_failed_task_end_alike_in_every_mode(nested, zero_row, open_scopes, monkeypatch) -> None:
    """A division by zero in the outer scope (b row 2: the first `quot` task) or in the second
    call of `inner` (b row 100), three scopes deep, found by the deferred run only when the SPMD
    blocks of the last scope start: every mode ends the scopes open at the failed task's start,
    innermost first, with the figures of that moment, and the entry's scope not at all."""
    err, rec, files = _compare(nested, lambda good: _args(int(not good), None if good else zero_row), monkeypatch)
    assert "integer division by zero" in err
    ends = [e for e in rec.scope_events if e["event"] == "end"]
    failed = next(t for t in rec.tasks if t.start_cycle is not None and t.end_cycle is None)
    closing = ends[len(ends) - len(open_scopes):]
    assert [e["scope"] for e in closing] == open_scopes
    assert rec.scope_events[-len(open_scopes):] == closing      # the last records of the run
    assert {e["tasks_submitted"] for e in closing} == {len(rec.tasks)}
    assert {e["tasks_retired"] for e in closing} == {sum(t.retire_cycle is not None for t in rec.tasks)}
    assert all(e["cycle"] >= failed.start_cycle for e in closing)
    outer = closing[-1]
    assert outer["heap"] == {"used": 64 * 32 * 4, "capacity": rec.rings.heap[1], "peak": 64 * 32 * 4}   # tmp
    assert outer["task_window"]["used"] == sum(t.ring == 1 and t.retire_cycle is None for t in rec.tasks)
    rows = {r["scope"]: r for r in json.loads(files["scope_stats.json"])}
    assert all("peak_task_window" in rows[s] for s in open_scopes)
    assert "peak_task_window" not in rows["main"]
    slices = [e["name"] for e in json.loads(files["swimlane.json"])["traceEvents"] if e.get("cat") == "scope"]
    assert sorted(slices) == sorted(f"scope {e['scope']}" for e in ends)    # one per instance that ended


def test_a_scope_whose_entry_starts_the_failing_task_gets_no_end(tmp_path, monkeypatch) -> None:
    """The task submitted just before a scope is entered starts (and fails) while the scope's
    "begin" record is being written: the error leaves before the scope's body, so it has neither a
    "begin" nor an "end" record, in every mode; the scope around it ends."""
    cp = ir.compile(pl.parse(_ENTERING), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    err, rec, _ = _compare(cp, lambda good: _args(int(not good), None if good else 16 * 3 + 5), monkeypatch)
    assert "task 6 (kernel 'quot'" in err
    assert [(e["event"], e["scope_id"], e["scope"]) for e in rec.scope_events[-2:]] == \
        [("end", 4, "main/scope@16/scope@20"), ("end", 1, "main/scope@16")]
    assert [s.scope_id for s in rec.scopes] == list(range(6))
    assert 5 not in {e["scope_id"] for e in rec.scope_events}


def test_a_one_at_a_time_run_stops_its_schedule_at_the_failed_task(tmp_path, monkeypatch) -> None:
    """Task 9 reads rows 60:76 of 64 while the inner scope is open and 13 more tasks follow it in
    that scope: the run that executes each task when it starts simulates nothing after the failure
    (no task starts after task 9, though task 22 was submitted and ready when the scopes ended),
    and its scopes end with the rings of that moment, as the run with deferred tasks records them."""
    cp = ir.compile(pl.parse(_OUT_OF_BOUNDS), output_dir=tmp_path, dump_passes=False, skip_ptoas=True)
    err, rec, _ = _compare(cp, lambda good: [torch.randn(64, 64, generator=torch.Generator().manual_seed(1)),
                                             torch.zeros(64, 64), torch.zeros(64, 64), torch.zeros(64, 64)],
                           monkeypatch, modes=("one at a time", "deferred"))
    assert "task 9 (kernel 'rows'" in err and "out of bounds" in err
    assert rec.tasks[22].submit_cycle is not None and rec.tasks[22].start_cycle is None
    ends = [(e["scope_id"], e["cycle"], e["tasks_submitted"], e["tasks_retired"], e["task_window"])
            for e in rec.scope_events if e["event"] == "end"]
    assert ends == [(2, 8280, 23, 9, {"used": 14, "capacity": 16384, "peak": 15}),
                    (1, 8280, 23, 9, {"used": 0, "capacity": 16384, "peak": 4})]
