"""Test-wide settings: compiled builds go to a temporary folder, not ./build_output."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="session")
def _build_dir(tmp_path_factory: pytest.TempPathFactory):
    os.environ["PYPTO_PROG_BUILD_DIR"] = str(tmp_path_factory.mktemp("build_output"))
    yield


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    d = ROOT / "examples"
    if str(d) not in sys.path:
        sys.path.insert(0, str(d))
    return d
