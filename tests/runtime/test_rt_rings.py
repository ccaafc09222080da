"""Ring sizing (SPEC §12, issue 12 item 4): RunConfig.ring_task_window / ring_heap / ring_dep_pool,
their validation and environment-variable precedence, and the simulator honouring them — a full
ring stalls the orchestrator (simulated time grows, numbers do not change)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from rings_programs import Chain, Gather, Many, ScopedTemps

from pypto import ir
from pypto.backend.soc import BackendType
from pypto.core.errors import RuntimeSimError
from pypto.runtime import RunConfig
from pypto.runtime.sim import SimDevice
from pypto.runtime.sim.cost_model import const
from pypto.runtime.sim.rings import RingSizes, ring_sizes

MiB = 1 << 20


# ---- configuration -------------------------------------------------------------------------------
def test_defaults_and_scalars_apply_to_every_depth(monkeypatch) -> None:
    for env in ("PTO2_RING_TASK_WINDOW", "PTO2_RING_HEAP", "PTO2_RING_DEP_POOL"):
        monkeypatch.delenv(env, raising=False)
    assert RunConfig().rings() == RingSizes((16384,) * 4, (256 * MiB,) * 4, (16384,) * 4)
    c = RunConfig(ring_task_window=8, ring_heap=[4096, 8192, 1024, 1 << 30], ring_dep_pool=5)
    assert c.ring_heap == [4096, 8192, 1024, 1 << 30]
    assert c.rings() == RingSizes((8,) * 4, (4096, 8192, 1024, 1 << 30), (5,) * 4)


@pytest.mark.parametrize("field, value, rule", [
    ("ring_task_window", 6, "a power of 2 >= 4"), ("ring_task_window", 2, "a power of 2 >= 4"),
    ("ring_task_window", True, "a power of 2 >= 4"), ("ring_task_window", [4, 8, 16], "a power of 2 >= 4"),
    ("ring_heap", 512, "a power of 2 >= 1024"), ("ring_heap", 3000, "a power of 2 >= 1024"),
    ("ring_heap", [1024, 2048, 4096, 5000], "a power of 2 >= 1024"),
    ("ring_dep_pool", 3, "an int >= 4"), ("ring_dep_pool", "16", "an int >= 4"), ("ring_dep_pool", 4.0, "an int >= 4"),
])
def test_bad_ring_sizes_are_rejected_naming_the_field(field, value, rule) -> None:
    with pytest.raises(ValueError) as e:
        RunConfig(**{field: value})
    msg = e.value.message    # an ArgumentValueError: str() starts with the location of the call
    assert msg.startswith(f"RunConfig.{field} must be {rule}") and f"got {value!r}" in msg
    assert "or a list of 4 such values (one per scope depth)" in msg


def test_precedence_run_config_then_environment_then_default(monkeypatch) -> None:
    monkeypatch.setenv("PTO2_RING_TASK_WINDOW", "64")
    monkeypatch.setenv("PTO2_RING_HEAP", "4096,8192,16384,32768")
    monkeypatch.delenv("PTO2_RING_DEP_POOL", raising=False)
    r = RunConfig().rings()
    assert r.task_window == (64,) * 4 and r.heap == (4096, 8192, 16384, 32768) and r.dep_pool == (16384,) * 4
    r = RunConfig(ring_task_window=4, ring_heap=2048).rings()
    assert r.task_window == (4,) * 4 and r.heap == (2048,) * 4
    assert ring_sizes().task_window == (64,) * 4      # what a run without a RunConfig uses
    monkeypatch.setenv("PTO2_RING_DEP_POOL", "two")
    with pytest.raises(ValueError, match=r"^environment variable PTO2_RING_DEP_POOL must be an int >= 4 .* got 'two'"):
        RunConfig().rings()
    monkeypatch.setenv("PTO2_RING_DEP_POOL", "12")
    monkeypatch.setenv("PTO2_RING_TASK_WINDOW", "100")
    with pytest.raises(ValueError, match=r"^environment variable PTO2_RING_TASK_WINDOW must be a power of 2"):
        RunConfig().rings()
    assert RunConfig(ring_task_window=16).rings().dep_pool == (12,) * 4   # the field wins, env fills the rest


# ---- the simulator honours them ------------------------------------------------------------------
@pytest.fixture(scope="module")
def many(tmp_path_factory):
    return ir.compile(Many, output_dir=tmp_path_factory.mktemp("many"), dump_passes=False)


def _run(cp, config, shape=(1024, 64)):
    x, y = torch.randn(*shape), torch.zeros(*shape)
    cp(x, y, config=config)
    return x, y, cp.last_run


def test_a_full_task_window_stalls_the_orchestrator(many, tmp_path) -> None:
    x0, y0, free = _run(many, RunConfig(ring_task_window=1024))
    x1, y1, small = _run(many, RunConfig(ring_task_window=4, enable_scope_stats=True, enable_chip_swimlane=1))
    assert torch.equal(y0, 2 * x0) and torch.equal(y1, 2 * x1)          # the numbers do not change
    assert not [e for e in free.orch_events if e.kind == "stall"]
    stalls = [e for e in small.orch_events if e.kind == "stall"]
    assert stalls and all(e.name == "stall: task window full" and e.end > e.start for e in stalls)
    assert small.makespan_cycles > free.makespan_cycles
    assert small.orchestrator_cycles > free.orchestrator_cycles
    assert free.ring_peaks["task_window"][0] > 4 and small.ring_peaks["task_window"][0] == 4
    # a task is submitted only once the task 4 before it has retired (its slot is free)
    submit = int(const("orch_submit"))
    tasks = small.tasks
    for k in range(4, len(tasks)):
        assert tasks[k].submit_cycle - submit >= tasks[k - 4].retire_cycle
    # retirement is in submission order
    assert all(a.retire_cycle <= b.retire_cycle for a, b in zip(tasks, tasks[1:]))
    # visible on the orchestrator track and in the scope statistics
    d = Path(many.output_dir) / "dfx_outputs"
    ev = json.loads((d / "swimlane.json").read_text())["traceEvents"]
    shown = [e for e in ev if e.get("cat") == "stall"]
    assert len(shown) == len(stalls) and all(e["pid"] == 0 and e["tid"] == 0 for e in shown)
    assert shown[0]["args"]["full"] == ["task_window"]
    recs = [json.loads(line) for line in (d / "scope_stats.jsonl").read_text().splitlines()]
    end = next(r for r in recs if r["event"] == "end" and r["scope"] == "main")
    assert end["task_window"]["capacity"] == 4 and end["task_window"]["peak"] == 4


def test_heap_is_freed_when_a_scope_ends_and_its_tasks_finish(tmp_path) -> None:
    cp = ir.compile(ScopedTemps, output_dir=tmp_path, dump_passes=False)
    x, y, free = _run(cp, RunConfig(), (128, 64))
    assert torch.equal(y, 4 * x) and free.ring_peaks["heap"][1] > 4096
    x, y, tight = _run(cp, RunConfig(ring_heap=[MiB, 4096, 4096, 4096], enable_scope_stats=True), (128, 64))
    assert torch.equal(y, 4 * x)
    stalls = [e for e in tight.orch_events if e.kind == "stall"]
    assert len(stalls) == 7 and {e.name for e in stalls} == {"stall: heap full"}   # every scope but the first
    assert tight.ring_peaks["heap"] == [0, 4096, 0, 0]
    assert tight.makespan_cycles > free.makespan_cycles
    # each scope's temporary waits for the previous scope's last task
    scopes = [r for r in tight.scope_events if r["scope"].startswith("main/scope@")]
    ends = [r for r in scopes if r["event"] == "end"]
    assert len(ends) == 8 and all(r["depth"] == 1 and r["heap"]["peak"] == 4096 for r in ends)


def test_a_full_dependency_pool_stalls_too(tmp_path) -> None:
    """A chain of 17 tasks, each waiting for one or two earlier ones: the orchestrator runs ahead
    of the chain until the pool of dependency entries is full."""
    cp = ir.compile(Chain, output_dir=tmp_path, dump_passes=False)
    x0, y0, free = _run(cp, RunConfig(), (16, 64))
    x1, y1, tight = _run(cp, RunConfig(ring_dep_pool=4), (16, 64))
    assert torch.equal(y0, x0 * 2 ** 17) and torch.equal(y1, x1 * 2 ** 17)
    assert free.ring_peaks["dep_pool"][0] > 4 and tight.ring_peaks["dep_pool"][0] == 4
    assert {e.name for e in tight.orch_events if e.kind == "stall"} == {"stall: dep pool full"}
    assert tight.orchestrator_cycles > free.orchestrator_cycles
    assert tight.makespan_cycles == free.makespan_cycles      # the chain, not the orchestrator, bounds it


def test_a_need_larger_than_the_ring_names_the_field(tmp_path) -> None:
    cp = ir.compile(Gather, output_dir=tmp_path, dump_passes=False)
    x, y, rec = _run(cp, RunConfig(ring_dep_pool=8), (128, 64))
    assert torch.equal(y, 4 * x) and rec.ring_peaks["dep_pool"][0] == 8
    with pytest.raises(RuntimeSimError, match=r"task 8 \('twice_all'\) needs 8 dependency entries in flight on the "
                                              r"ring of scope depth 0, but RunConfig.ring_dep_pool gives it 4; "
                                              r"raise ring_dep_pool"):
        _run(cp, RunConfig(ring_dep_pool=4), (128, 64))
    with pytest.raises(RuntimeSimError, match=r"tensor \[128, 64\] created at line \d+ needs 32768 bytes of tensors "
                                              r"in flight .* RunConfig.ring_heap gives it 16384; raise ring_heap"):
        _run(cp, RunConfig(ring_heap=16384), (128, 64))


def test_heap_held_by_open_scopes_is_an_error_not_a_hang() -> None:
    # the entry's tensor stays until the run ends, so a second one could never fit
    dev = SimDevice(BackendType.Ascend910B)
    dev.begin_run("p", "main", rings=ring_sizes(heap=32768))
    dev.push_scope("main")
    dev.created(torch.zeros(128, 64))
    with pytest.raises(RuntimeSimError, match=r"needs 4096 bytes of tensors in flight on the ring of scope depth 0, "
                                              r"but 32768 of its 32768 are held by scopes still open"):
        dev.created(torch.zeros(16, 64))
