"""Every distributed example (`examples/distributed/*.py`) runs as a script, checks itself against
torch and prints only PASS lines (issue 10 item 7). The small sizes (`PYPTO_EXAMPLE_SMALL=1`)
keep the rank processes' work short; the programs and the rank counts are the examples' own."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "examples" / "distributed"
EXAMPLES = sorted(p.stem for p in FOLDER.glob("*.py") if not p.name.startswith("_"))


def test_every_example_of_the_issue_is_present():
    assert {"hello_rank", "window_round_trip", "barrier", "ring_shift", "dynamic_ranks", "allreduce_ops",
            "allgather_gemm", "tp_mlp"} <= set(EXAMPLES)


@pytest.mark.parametrize("name", EXAMPLES)
def test_distributed_example_runs_and_passes(name, tmp_path):
    env = dict(os.environ, PYPTO_EXAMPLE_SMALL="1")
    r = subprocess.run([sys.executable, str(FOLDER / f"{name}.py")], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith(("PASS", "FAIL"))]
    assert lines and all(ln.startswith("PASS") for ln in lines), r.stdout
