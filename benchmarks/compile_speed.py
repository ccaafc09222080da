"""`ir.compile` speed of two tile programs against issue 14's targets (item 6), and of two
tensor-level programs.

    python benchmarks/compile_speed.py [--reps N] [--passes K] [--profile [--top K]]

Side by side in one run: the tile softmax of `examples/softmax.py` and a 256^3 FP16 matmul in
128 x 128 tiles (FP32 accumulation, one kernel call per output tile; defined below, in the style of
`examples/matmul.py`); then two tensor-level programs, where the compiler places the data itself
(TileTensorBlocks chooses the block shape by lowering candidate blocks): the row softmax of
`examples/tensor_softmax.py` ([2048, 1024] FP32) and the RMSNorm + matmul of
`examples/tensor_rmsnorm_matmul.py` (dynamic rows, a column-blocked RMSNorm region and a K-looped
matmul region). Each is compiled `--reps` times with what a user gets by default except the
two things that are not the compiler's own work: no pass dumps (`dump_passes=False`) and no ptoas
(`skip_ptoas=True`). Verification stays at its default (BASIC) and every diagnostic runs.

Printed per program: the median CPU time of one compile (`time.process_time`: the machine may be
shared, so this is the figure judged) and the median wall time, against the targets of the issue:
within 1.5x of upstream's C++ pipeline, 9 ms for the softmax and 15 ms for the matmul (upstream:
about 6 and 10 ms here). Then the median split of the build's `report/compile_time.json`: passes,
of which verification, code generation, and the reports and metadata written after it; and, per
program, the `--passes` passes that take longest (median `per_pass_ms`).

`--profile` adds, per program, the top `--top` functions of a cProfile of `--reps` compiles
(by own CPU time), to see where the time goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import logging
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

from _tiled_matmul import tiled_matmul  # noqa: E402  (benchmarks/, the script's folder)

from pypto import ir  # noqa: E402

N_MM, T = 256, 128

# Issue 14 item 6: upstream's C++ pipeline takes about 6 and 10 ms here; the targets are 1.5x that.
TARGET_MS = {"tile softmax 64x128": 9.0, "tile matmul 256^3": 15.0}
TENSOR_SOFTMAX, TENSOR_RMSNORM_MM = "tensor softmax", "tensor rmsnorm+mm"  # no target: printed only


MatmulTiles = tiled_matmul(N_MM, T)


def programs() -> dict[str, ir.Program]:
    """The two programs of the issue and the two tensor-level ones, by the name printed."""
    from softmax import RowSoftmax
    from tensor_rmsnorm_matmul import rmsnorm_matmul
    from tensor_softmax import softmax

    return {"tile softmax 64x128": RowSoftmax, "tile matmul 256^3": MatmulTiles,
            TENSOR_SOFTMAX: softmax.specialize(), TENSOR_RMSNORM_MM: rmsnorm_matmul.specialize()}


class _Compiler:
    """Compiles into fresh folders under one temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root, self.n = root, 0

    def __call__(self, program: ir.Program) -> Path:
        self.n += 1
        out = self.root / f"{program.name}_{self.n}"
        ir.compile(program, output_dir=out, dump_passes=False, skip_ptoas=True)
        return out


def measure(progs: dict[str, ir.Program], reps: int, compile_one: _Compiler) -> dict[str, dict[str, float]]:
    """Per program, medians over `reps` compiles (after 3 warm-up compiles; the programs take turns,
    so all see the same load): CPU and wall ms, the stages of `report/compile_time.json` in ms, and
    under "per_pass" the median ms of each pass."""
    for program in progs.values():
        for _ in range(3):
            compile_one(program)
    cpu: dict[str, list[float]] = {n: [] for n in progs}
    wall: dict[str, list[float]] = {n: [] for n in progs}
    reports: dict[str, list[dict]] = {n: [] for n in progs}
    for _ in range(reps):
        for name, program in progs.items():
            c0, w0 = time.process_time(), time.perf_counter()
            out = compile_one(program)
            cpu[name].append(time.process_time() - c0)
            wall[name].append(time.perf_counter() - w0)
            reports[name].append(json.loads((out / "report" / "compile_time.json").read_text()))
    res = {}
    for name in progs:
        res[name] = {"cpu": statistics.median(cpu[name]) * 1e3, "wall": statistics.median(wall[name]) * 1e3}
        for key in ("passes_ms", "verify_ms", "codegen_ms", "reports_ms", "total_ms"):
            res[name][key] = statistics.median(r.get(key, 0.0) for r in reports[name])
        per_pass: dict[str, list[float]] = {}
        for r in reports[name]:
            for pass_name, ms in r.get("per_pass_ms", []):
                per_pass.setdefault(pass_name, []).append(ms)
        res[name]["per_pass"] = {k: statistics.median(v) for k, v in per_pass.items()}  # type: ignore[assignment]
    return res


def profile(program: ir.Program, reps: int, compile_one: _Compiler, top: int) -> str:
    """The `top` functions by own CPU time over `reps` compiles."""
    prof = cProfile.Profile(time.process_time)  # CPU time: a shared machine preempts us
    prof.enable()
    for _ in range(reps):
        compile_one(program)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(top)
    text = buf.getvalue()
    return text[text.index("   ncalls"):] if "   ncalls" in text else text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30, help="compiles per program (median reported)")
    ap.add_argument("--passes", type=int, default=4, help="slowest passes shown per program")
    ap.add_argument("--profile", action="store_true", help="also print the top of a cProfile")
    ap.add_argument("--top", type=int, default=25, help="functions shown by --profile")
    ns = ap.parse_args(argv)
    # the matmul's compile logs a one-line perf-hint summary each time: still made, not printed
    hints = logging.getLogger("pypto.diagnostics")
    hints.addHandler(logging.NullHandler())
    hints.propagate = False
    with tempfile.TemporaryDirectory() as d:
        compile_one = _Compiler(Path(d))
        progs = programs()
        rows = list(measure(progs, ns.reps, compile_one).items())
        print(f"ir.compile, median of {ns.reps} compiles (dump_passes=False, skip_ptoas=True; "
              f"BASIC verification, all diagnostics)\n")
        head = f"{'program':<22} {'CPU ms':>7} {'wall ms':>8} {'target':>7}  {'':<6}  " \
               f"{'passes':>7} {'(verify)':>9} {'codegen':>8} {'reports':>8}"
        print(head)
        print("-" * len(head))
        met = True
        for name, m in rows:
            target = TARGET_MS.get(name)
            ok = target is None or m["cpu"] <= target
            met &= ok
            verdict = "" if target is None else "MET" if ok else "MISSED"
            print(f"{name:<22} {m['cpu']:>7.2f} {m['wall']:>8.2f} {'-' if target is None else target:>7}  "
                  f"{verdict:<6}  {m['passes_ms']:>7.2f} {m['verify_ms']:>9.2f} "
                  f"{m['codegen_ms']:>8.2f} {m['reports_ms']:>8.2f}")
        print("\nCPU ms is judged (the machine may be shared); passes..reports are wall ms from "
              "report/compile_time.json.")
        if ns.passes > 0:
            print(f"\nslowest {ns.passes} passes per program (median wall ms of per_pass_ms):")
            for name, m in rows:
                slow = sorted(m["per_pass"].items(), key=lambda kv: -kv[1])[:ns.passes]  # type: ignore[union-attr]
                print(f"  {name:<22} " + ", ".join(f"{p} {ms:.2f}" for p, ms in slow))
        if ns.profile:
            for name, program in progs.items():
                print(f"\ncProfile of {ns.reps} compiles of the {name}, by own time:\n")
                print(profile(program, ns.reps, compile_one, ns.top))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
