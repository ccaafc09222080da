"""Python's garbage collector during simulator runs (`runtime/sim/host_gc.py`, issue 14 item 5):
the youngest generation is collected every `YOUNG_THRESHOLD` allocations while a run is in
progress, and the process's own setting comes back when the last run ends — also when a run fails,
when runs nest or overlap in threads, and when the caller disabled collection or set a higher
threshold (both left alone); reference cycles the caller or a run drops are still collected."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest
import torch
from shared_programs import load_example

from pypto import ir
from pypto.core.errors import RuntimeSimError
from pypto.runtime import RunConfig
from pypto.runtime.sim import SimDevice, host_gc
from pypto.runtime.sim.host_gc import YOUNG_THRESHOLD, fewer_collections


@pytest.fixture
def thresholds():
    """The test's process thresholds, restored afterwards whatever the test set."""
    old = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    host_gc._STATE[2] = 0      # no objects moved by earlier tests' runs
    yield
    gc.set_threshold(*old)


def test_raised_inside_restored_after(thresholds) -> None:
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        with fewer_collections():       # nested: still raised, not restored by the inner exit
            pass
        assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
    assert gc.get_threshold() == (700, 10, 10)


def test_restored_when_the_block_raises(thresholds) -> None:
    with pytest.raises(KeyError):
        with fewer_collections():
            raise KeyError("x")
    assert gc.get_threshold() == (700, 10, 10)


@pytest.mark.parametrize("setting", [(0, 10, 10), (500_000, 5, 5)])
def test_callers_disabled_or_higher_setting_left_alone(thresholds, setting) -> None:
    gc.set_threshold(*setting)
    with fewer_collections():
        assert gc.get_threshold() == setting
    assert gc.get_threshold() == setting


def test_a_setting_changed_during_the_run_is_kept(thresholds) -> None:
    with fewer_collections():
        gc.set_threshold(1234, 10, 10)
    assert gc.get_threshold() == (1234, 10, 10)


def test_overlapping_runs_in_threads_restore_once_the_last_ends(thresholds) -> None:
    entered, release = threading.Event(), threading.Event()
    seen = []

    def other() -> None:
        with fewer_collections():
            entered.set()
            release.wait(10)
            seen.append(gc.get_threshold()[0])

    with fewer_collections():
        t = threading.Thread(target=other)
        t.start()
        assert entered.wait(10)
    assert gc.get_threshold()[0] == YOUNG_THRESHOLD   # the other thread's run is still going
    release.set()
    t.join(10)
    assert seen == [YOUNG_THRESHOLD]
    assert gc.get_threshold() == (700, 10, 10)


def _matmul():
    mod = load_example("matmul")
    return ir.compile(mod.Matmul, dump_passes=False)


def test_simulator_runs_use_it(thresholds, monkeypatch) -> None:
    """A real run sees the raised threshold; a failing run restores the setting too."""
    seen = []
    real_run = SimDevice._run

    def spying(self, *a, **k):
        seen.append(gc.get_threshold()[0])
        return real_run(self, *a, **k)

    monkeypatch.setattr(SimDevice, "_run", spying)
    cp = _matmul()
    a, b = torch.randn(64, 64).half(), torch.randn(64, 64).half()
    c = torch.zeros(64, 64)
    cp.run_on(None, [a, b, c], RunConfig(sim_replay=False))
    torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-3)
    assert seen == [YOUNG_THRESHOLD]
    assert gc.get_threshold() == (700, 10, 10)

    def failing(self, *a, **k):
        raise RuntimeSimError("planted")

    monkeypatch.setattr(SimDevice, "_run", failing)
    with pytest.raises(RuntimeSimError, match="planted"):
        cp.run_on(None, [a, b, c], RunConfig(sim_replay=False))
    assert gc.get_threshold() == (700, 10, 10)


def _young_collections() -> int:
    return gc.get_stats()[0]["collections"]


def test_what_the_run_leaves_goes_to_the_oldest_generation_unscanned(thresholds) -> None:
    """The objects a run keeps are not left for the next young collection to scan: when the
    setting comes back, they are in the oldest generation (the young counts start again), and
    the next few hundred allocations trigger no collection."""
    with fewer_collections():
        kept = [[i] for i in range(5000)]
        assert gc.get_count()[0] >= 4000    # (no young collection since the block began)
        before = _young_collections()
    more = [[i] for i in range(500)]
    assert _young_collections() == before and gc.get_count()[0] < 700
    assert len(kept) == 5000 and len(more) == 500


def test_objects_the_caller_froze_stay_frozen(thresholds) -> None:
    """A caller with frozen objects keeps them frozen: the run's survivors are then collected as
    usual (a young collection soon after the run)."""
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with fewer_collections():
            kept = [[i] for i in range(5000)]
            before = _young_collections()
        more = [[i] for i in range(500)]
        assert gc.get_freeze_count() == frozen and _young_collections() > before
        assert len(kept) == 5000 and len(more) == 500
    finally:
        gc.unfreeze()


class _Cycle:
    def __init__(self) -> None:
        self.me = self
        self.big = torch.zeros(1000)


def test_a_cycle_the_caller_dropped_between_runs_is_collected_by_the_next() -> None:
    """A loop of runs that drops a reference cycle (holding a tensor) between runs keeps none of
    them: the young garbage is collected when a run starts, not moved with the run's survivors to
    the oldest generation, where nothing would count it towards a full collection."""
    cp = _matmul()
    dev = SimDevice(cp.backend_type)
    a, b, c = torch.randn(64, 64).half(), torch.randn(64, 64).half(), torch.zeros(64, 64)
    refs = []
    for _ in range(3):
        x = _Cycle()
        refs.append(weakref.ref(x))
        del x
        cp.run_on(dev, [a, b, c], RunConfig(sim_replay=False))
    assert [r() for r in refs] == [None, None, None]


def test_cycles_dropped_during_runs_are_collected_once_the_runs_moved_enough(thresholds, monkeypatch) -> None:
    """What the runs move to the oldest generation unscanned is counted: past `FULL_AFTER`
    objects, a run ends with a full collection, which frees the cycles dropped during runs."""
    monkeypatch.setattr(host_gc, "FULL_AFTER", 1000)
    with fewer_collections():
        x = _Cycle()
        ref = weakref.ref(x)
        del x
        kept = [[i] for i in range(500)]
    assert ref() is not None    # moved with the run's survivors (500 < 1000)
    with fewer_collections():
        kept += [[i] for i in range(600)]
    assert ref() is None and len(kept) == 1100
