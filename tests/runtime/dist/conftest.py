"""Distributed tests spawn rank processes: every test must leave no `pypto_*` segment in /dev/shm
and no rank process behind."""

import multiprocessing as mp
import os

import pytest


def _segments() -> set[str]:
    """This process's segments (names carry the creating pid; other test workers run alongside)."""
    mine = f"pypto_{os.getpid()}_"
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith(mine)}
    except FileNotFoundError:   # no /dev/shm on this platform
        return set()


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: starts fresh Python interpreters (spawned ranks, a Ctrl-C'd script); "
                                       "deselect with -m 'not slow'")


@pytest.fixture(autouse=True)
def no_leftovers():
    before = _segments()
    yield
    assert _segments() - before == set(), "a test left pypto_* segments in /dev/shm"
    left = [p for p in mp.active_children() if p.name.startswith("pypto-rank")]
    assert left == [], f"a test left rank processes running: {left}"
