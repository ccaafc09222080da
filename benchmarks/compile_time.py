"""Compile time per example and per pass, and IR size, as tables (issue 5).

    python benchmarks/compile_time.py [--reps N] [--backend Ascend910B|Ascend950|both]

Every `examples/*.py` is run once with `ir.compile` wrapped, to capture the Programs it compiles
(a `@pl.jit` example compiles its specialisation). Each Program is then compiled `--reps` times
(no pass dumps, no ptoas) and the median is reported:

- table 1, per example: total ms, passes ms, codegen ms (PTO + orchestration + config + reports),
  IR nodes (statements + expressions) before and after the pipeline, printed lines after it, and
  bytes of generated `.pto`;
- table 2, per pass: ms of each pass for each example (first backend).

Timings come from the build's `report/compile_time.json`, which `ir.compile` writes.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import pypto.compiler as compile_mod  # noqa: E402
import pypto.language as pl  # noqa: E402
from pypto import ir  # noqa: E402
from pypto.backend import BackendType  # noqa: E402


class _Count(ir.IRVisitor):
    def __init__(self) -> None:
        self.n = 0

    def visit_stmt(self, s):  # type: ignore[no-untyped-def]
        self.n += 1
        super().visit_stmt(s)

    def visit_expr(self, e):  # type: ignore[no-untyped-def]
        self.n += 1
        super().visit_expr(e)


def ir_nodes(program: ir.Program) -> int:
    """Statements + expressions of every function of `program`."""
    c = _Count()
    c.visit_program(program)
    return c.n


def capture_programs(example: str) -> list[ir.Program]:
    """The Programs `examples/<example>.py` compiles when its main() runs."""
    seen: list[ir.Program] = []
    real = compile_mod.compile

    def capture(program, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(program)
        return real(program, *args, **kwargs)

    compile_mod.compile, ir_compile = capture, ir.compile
    ir.compile = capture  # type: ignore[attr-defined]
    try:
        mod = importlib.import_module(example)
        for v in vars(mod).values():
            if isinstance(v, pl.JITFunction):
                v._cache.clear()
        mod.main()
    finally:
        compile_mod.compile = real
        ir.compile = ir_compile  # type: ignore[attr-defined]
    return seen


def measure(program: ir.Program, backend: BackendType, reps: int, tmp: Path) -> dict:
    """Median timings of `reps` compiles, plus IR and artifact sizes."""
    runs = []
    compiled = None
    for r in range(reps):
        out = tmp / f"{program.name}_{backend.name}_{r}"
        compiled = compile_mod.compile(program, output_dir=out, dump_passes=False, backend_type=backend,
                                       skip_ptoas=True)
        runs.append(json.loads((out / "report" / "compile_time.json").read_text()))
    per_pass: dict[str, float] = {}
    for name, _ in runs[0]["per_pass_ms"]:
        per_pass[name] = statistics.median(sum(ms for n, ms in run["per_pass_ms"] if n == name) for run in runs)
    out = Path(compiled.output_dir)  # type: ignore[union-attr]
    return {
        "total": statistics.median(r["total_ms"] for r in runs),
        "passes": statistics.median(r["passes_ms"] for r in runs),
        "codegen": statistics.median(r["codegen_ms"] for r in runs),
        "per_pass": per_pass,
        "nodes_in": ir_nodes(program),
        "nodes_out": ir_nodes(compiled.program),  # type: ignore[union-attr]
        "lines_out": len(compiled.program.as_python().splitlines()),  # type: ignore[union-attr]
        "pto_bytes": sum(p.stat().st_size for p in (out / "kernels").rglob("*.pto")),
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="compiles per program (median reported)")
    ap.add_argument("--backend", default="both", choices=["Ascend910B", "Ascend950", "both"])
    ns = ap.parse_args(argv)
    backends = list(BackendType) if ns.backend == "both" else [BackendType[ns.backend]]
    examples = sorted(p.stem for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
    rows = []
    with tempfile.TemporaryDirectory() as d:
        import os

        os.environ["PYPTO_PROG_BUILD_DIR"] = d
        for ex in examples:
            for program in capture_programs(ex):
                for b in backends:
                    rows.append((ex, program.name, b, measure(program, b, ns.reps, Path(d))))
    head = f"{'example':<16} {'program':<22} {'backend':<11} {'total ms':>9} {'passes ms':>10} " \
           f"{'codegen ms':>11} {'IR nodes in->out':>17} {'lines':>6} {'.pto B':>7}"
    print(f"Compile time, median of {ns.reps} compiles (no dumps, no ptoas)\n")
    print(head)
    print("-" * len(head))
    for ex, name, b, m in rows:
        print(f"{ex:<16} {name:<22} {b.name:<11} {m['total']:>9.1f} {m['passes']:>10.1f} {m['codegen']:>11.1f} "
              f"{str(m['nodes_in']) + ' -> ' + str(m['nodes_out']):>17} {m['lines_out']:>6} {m['pto_bytes']:>7}")
    total = sum(m["total"] for *_, m in rows)
    print(f"\n{len(rows)} compiles, {total:.1f} ms in all; codegen is "
          f"{100 * sum(m['codegen'] for *_, m in rows) / total:.0f}% of the time\n")
    first = [(ex, name, m) for ex, name, b, m in rows if b is backends[0]]
    passes = list(first[0][2]["per_pass"]) if first else []
    cols = [name[:12] for _, name, _ in first]
    print(f"Per-pass ms on {backends[0].name}\n")
    print(f"{'pass':<24}" + "".join(f"{c:>13}" for c in cols))
    for p in passes:
        print(f"{p:<24}" + "".join(f"{m['per_pass'].get(p, 0.0):>13.2f}" for _, _, m in first))


if __name__ == "__main__":
    main()
