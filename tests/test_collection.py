"""A plain `pytest` run collects every test folder: none is skipped by a `norecursedirs` pattern.

pytest's default `norecursedirs` holds "dist" and "build", so without the list in pyproject.toml
`python -m pytest` silently left out tests/runtime/dist (the tests of src/pypto/runtime/dist): they
ran only when named on the command line, and a test failing there looked like one that "passes in
the full suite".
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _test_folders() -> list[Path]:
    """Every folder under tests/ that holds a test module."""
    return sorted({p.parent for p in TESTS.rglob("test_*.py") if "__pycache__" not in p.parts})


def test_the_distributed_tests_are_a_test_folder() -> None:
    assert TESTS / "runtime" / "dist" in _test_folders()


def test_every_test_folder_is_collected(pytestconfig: pytest.Config) -> None:
    ignored = []
    for folder in _test_folders():
        # what pytest asks before it enters a folder: norecursedirs, collect_ignore, --ignore
        for d in [folder, *folder.relative_to(TESTS).parents]:
            path = d if d.is_absolute() else TESTS / d
            if path != TESTS and pytestconfig.hook.pytest_ignore_collect(collection_path=path, config=pytestconfig):
                ignored.append(f"{folder.relative_to(TESTS)} (at {path.relative_to(TESTS)})")
                break
    assert ignored == [], (f"pytest does not collect these test folders: {ignored}; norecursedirs is "
                           f"{pytestconfig.getini('norecursedirs')}")
