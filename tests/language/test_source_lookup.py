"""Kernels must be parseable however their file is run: directly, via runpy, or under a profiler,
where `cls.__module__` ("__main__") does not name the defining file."""

import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_program_class_parses_when_run_through_runpy(capsys, examples_dir):
    runpy.run_path(str(ROOT / "examples" / "tile_add.py"), run_name="__main__")
    assert "PASS tile add" in capsys.readouterr().out
