"""Calibration against physics (issue 14 items 3-4): the chip's DDR bandwidth is shared by all tasks
in flight (`bandwidth.DdrChannel`), and no simulated run is faster than the chip's peaks
(`benchmarks/roofline.py` on small shapes)."""

from __future__ import annotations

import importlib.util
import json
import random
from pathlib import Path

import pytest
import torch

from pypto import ir
from pypto.backend.soc import BackendType, get_soc
from pypto.runtime import RunConfig
from pypto.runtime.sim.bandwidth import DdrChannel
from pypto.runtime.sim.cost_model import CONSTANTS, const, peak_ddr_bytes_per_cycle, peak_flops_per_cycle

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "roofline.py"


@pytest.fixture(scope="module")
def roofline():
    spec = importlib.util.spec_from_file_location("roofline_bench", _BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def test_a_task_the_chip_can_feed_does_not_wait() -> None:
    ch = DdrChannel(100)
    assert ch.reserve(0, 100, 8000) == 0        # 80 B/cycle of 100
    assert ch.reserve(0, 50, 0) == 0            # no DDR traffic: never waits


def test_a_task_gets_what_earlier_tasks_left_and_runs_longer() -> None:
    ch = DdrChannel(100)
    assert ch.reserve(0, 100, 8000) == 0
    # 20 B/cycle are left over [0, 100): 2000 bytes; the other 6000 at its own 80 B/cycle from 100
    assert ch.reserve(0, 100, 8000) == 75
    # a third one (80 B/cycle asked) starting at 150 gets the 20 B/cycle left over [150, 175): 500
    # bytes, then the other 300 at 80 B/cycle in ceil(300 / 80) = 4 cycles: it ends at 179, not 160
    assert ch.reserve(150, 10, 800) == 19


def test_granted_bandwidth_never_exceeds_the_chip() -> None:
    rng = random.Random(7)
    ch = DdrChannel(const("ddr_bytes_per_cycle"))
    ends = []
    for _ in range(300):
        start, cycles, nbytes = rng.randrange(0, 20000), rng.randrange(1, 5000), rng.randrange(0, 400000)
        wait = ch.reserve(start, cycles, nbytes)
        assert wait >= 0
        ends.append(start + cycles + wait)
    assert all(u <= ch.capacity + 1e-6 for u in ch.used)
    assert ch.used[-1] == 0                     # nothing is granted after the last task ends
    assert ch.times[-1] <= max(ends)


def test_peaks_follow_from_the_cost_model() -> None:
    soc = get_soc(BackendType.Ascend910B)
    assert peak_flops_per_cycle(soc) == 24 * 16 * 16 * 16 * 2
    assert peak_ddr_bytes_per_cycle(soc) == const("ddr_bytes_per_cycle")
    assert "estimate" in CONSTANTS["ddr_bytes_per_cycle"].source


def test_memory_bound_add_over_48_cores_is_limited_by_the_chip_bandwidth(roofline, tmp_path) -> None:
    res = roofline.run_add(48, 16, 4096, 512)       # checks the sum against torch
    # 48 cores at their own MTE rate would need far more than the chip has: tasks wait for DDR
    assert res["ddr_wait_cycles"] > 0
    assert 0.5 < res["bytes_fraction"] <= 1.0
    # the same run again (with the swimlane on) gives the same cycles, and its slices show the waits
    cp = ir.compile(roofline.add_program(48, 16, 4096, 512), output_dir=tmp_path, dump_passes=False,
                    skip_ptoas=True)
    a, b = torch.randn(768, 4096), torch.randn(768, 4096)
    cp(a, b, torch.zeros(768, 4096), config=RunConfig(enable_chip_swimlane=1))
    assert cp.last_run.makespan_cycles == res["cycles"]
    assert sum(t.ddr_wait_cycles for t in cp.tasks) == res["ddr_wait_cycles"]
    ev = json.loads((tmp_path / "dfx_outputs" / "swimlane.json").read_text())["traceEvents"]
    slices = [e for e in ev if e["ph"] == "X" and e.get("cat") == "task"]
    assert len(slices) == 48
    for e in slices:
        t = cp.tasks[e["args"]["task_id"]]
        assert e["args"].get("ddr_wait_cycles", 0) == t.ddr_wait_cycles
        assert t.end_cycle - t.start_cycle == t.cost.cycles + t.ddr_wait_cycles


def test_matmul_is_never_faster_than_the_cube_peak(roofline) -> None:
    res = roofline.run_matmul(2, 2, 256)            # checks the product against torch
    assert 0 < res["flops_fraction"] <= 1.0 and res["bytes_fraction"] <= 1.0


def test_tuned_matmul_beats_the_plain_one_and_never_the_peak(roofline) -> None:
    tuned = roofline.run_tuned_matmul(1, 2, 4096)   # checks the product against torch
    plain = roofline.run_matmul(1, 2, 4096, tn=256)
    assert 0 < plain["flops_fraction"] < tuned["flops_fraction"] <= 1.0
    assert tuned["bytes_fraction"] <= 1.0
    # the two tasks share the rows of A: L2 serves what the other read, so HBM sees less than the
    # cores moved
    assert tuned["bytes_per_cycle"] < tuned["moved_per_cycle"]


def _hint_files_named(caplog) -> list[Path]:
    """The files the compiler's hint summaries on the `pypto.diagnostics` logger point to."""
    return [Path(r.getMessage().rsplit(": see ", 1)[1]) for r in caplog.records
            if "performance hint(s)" in r.getMessage()]


def test_a_kept_build_holds_the_hints_the_summary_points_to(roofline, tmp_path, caplog) -> None:
    with caplog.at_level("WARNING", logger="pypto.diagnostics"):
        roofline.run_matmul(1, 1, 256, output_dir=tmp_path / "a")   # 256-byte rows: PH001 hints
    named = _hint_files_named(caplog)
    assert named == [tmp_path / "a" / "report" / "perf_hints.log"]
    assert "PH001" in named[0].read_text()


def test_a_throwaway_build_never_names_a_removed_hint_file(roofline, caplog) -> None:
    with caplog.at_level("WARNING", logger="pypto.diagnostics"):
        roofline.run_matmul(1, 1, 256)                               # built in a removed temporary folder
    assert all(p.is_file() for p in _hint_files_named(caplog))
