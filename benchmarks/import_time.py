"""Import time of pypto after torch, as a ratio to `import torch` measured in the same run (issue 14 item 6).

    python benchmarks/import_time.py [--reps N]

Each line is the median over `--reps` fresh interpreters (subprocesses) of the process CPU time
and the wall time of one import statement, run after `import torch` (pypto needs torch, so that
is the baseline every user pays first). Columns:

- `cpu ms`, `wall ms`: the statement's own cost;
- `x torch`: its CPU time over that of `import torch` in the same run;
- `gc'd cpu ms`: the same statement when `gc.collect()` ran after `import torch`. Without it the
  first few tens of thousands of objects allocated after torch's import trigger one full
  collection of torch's heap (about 0.1 s here), which lands in whatever runs next; this column
  is pypto's own cost.

Cached bytecode matters: with `PYTHONDONTWRITEBYTECODE=1` and no `__pycache__`, every run
compiles pypto's sources again; the header says which case was measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

STATEMENTS = (
    ("import pypto", "import pypto"),
    ("import pypto.language as pl", "import pypto.language as pl"),
    ("+ ir.compile, pypto.runtime", "import pypto.language as pl\nfrom pypto import ir\nir.compile\nimport pypto.runtime"),
)
_PROBE = """
import time
{pre}
c0, w0 = time.process_time(), time.perf_counter()
{stmt}
print(time.process_time() - c0, time.perf_counter() - w0)
"""


def _median(pre: str, stmt: str, reps: int) -> tuple[float, float]:
    """Median (cpu ms, wall ms) of `stmt` after `pre`, over `reps` fresh interpreters."""
    cpu, wall = [], []
    for _ in range(reps):
        out = subprocess.run([sys.executable, "-c", _PROBE.format(pre=pre, stmt=stmt)], capture_output=True,
                             text=True, check=True).stdout.split()
        cpu.append(float(out[0]) * 1e3)
        wall.append(float(out[1]) * 1e3)
    return statistics.median(cpu), statistics.median(wall)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    cached = "off (sources compiled each run)" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "on"
    print(f"# import time, median of {args.reps} fresh interpreters; bytecode cache {cached}")
    t_cpu, t_wall = _median("", "import torch", args.reps)
    print(f"{'statement':32} {'cpu ms':>8} {'wall ms':>8} {'x torch':>8} {'gcd cpu ms':>10}")
    print(f"{'import torch (baseline)':32} {t_cpu:8.0f} {t_wall:8.0f} {1:8.2f} {'':>10}")
    for label, stmt in STATEMENTS:
        cpu, wall = _median("import torch", stmt, args.reps)
        gcd, _ = _median("import torch, gc\ngc.collect()", stmt, args.reps)
        print(f"{label:32} {cpu:8.0f} {wall:8.0f} {cpu / t_cpu:8.2f} {gcd:10.0f}")


if __name__ == "__main__":
    main()
