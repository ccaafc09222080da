"""Reliability at scale (issue 13): every property and fuzz suite of tests/properties at N× its CI size.

    python benchmarks/stress.py [--scale 20] [--suites parser-fuzz,tile,...] [--offset 0]
                                [--timeout 120] [--show 3] [--progress N] [--report DIR]

Each suite's generator and its property for one program are imported from its test module (the
same code CI runs), and called here program by program, so the counts are of generated programs:

| suite | CI size (env var) | one program is |
|---|---|---|
| parser-fuzz | 21 seeds × 100 (`PYPTO_FUZZ_SEEDS`) | a mutant of a valid program, parsed |
| mutant-compile | 200 (`PYPTO_MUTANT_PROGRAMS`) | a mutant that parses, compiled and run |
| roundtrip | 150 (`PYPTO_ROUNDTRIP_EXAMPLES`) | a Hypothesis program, print → parse |
| differential | 60 (`PYPTO_DIFF_EXAMPLES`) | a Hypothesis program, simulator vs torch |
| tile | 80 (`PYPTO_TILE_PROGRAMS`) | a vector kernel, simulator vs torch |
| cube | 40 (`PYPTO_CUBE_PROGRAMS`) | a cube kernel, simulator vs torch (exact) |
| access | 40 (`PYPTO_ACCESS_PROGRAMS`) | a multi-task program on both chips: numbers, regions, order |

Seeded suites run seeds `offset .. offset + N × CI size` (the first CI-size seeds are CI's own);
the Hypothesis suites draw N × their CI examples from Hypothesis seed `offset`.

Per suite it prints: programs tried, `ok` (the property held), `rejected` (a located PyPTOError
the property allows, e.g. a mutant the parser refuses), failures (wrong numbers, a failed
property, or a located PyPTOError where the property expects none) and internal errors (anything
else raised: not a PyPTOError, or a PyPTOError without a source location). A program running over
`--timeout` seconds (e.g. a mutant whose loop bound became 100000) is stopped and counted under
timeouts, neither a failure nor an internal error, and reported like them. The first `--show`
failures / internal errors / timeouts per suite are printed with their program; `--report DIR`
writes each to DIR/<suite>-<label>.txt as it happens. Exit status 1 when any suite has a failure
or an internal error.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "properties"), str(ROOT / "tests")]

from pypto.core.errors import PyPTOError  # noqa: E402

# One program: (label for the report, source text or None, the check returning its outcome).
Case = tuple[str, "Callable[[], str | None]", "Callable[[], str]"]


@dataclass
class Tally:
    """Counts of one suite, with the details of its failures and internal errors."""

    name: str
    programs: int = 0
    ok: int = 0
    rejected: int = 0
    failures: int = 0
    internal: int = 0
    timeouts: int = 0
    seconds: float = 0.0
    details: list[tuple[str, str, str]] = field(default_factory=list)  # (kind, label, text)


class _Timeout(BaseException):
    """A program ran over --timeout seconds (BaseException: the check cannot swallow it)."""


def _on_alarm(signum, frame):  # type: ignore[no-untyped-def]
    raise _Timeout


def located(e: BaseException) -> bool:
    """A PyPTOError with a known source location (SPEC §2.4)."""
    return isinstance(e, PyPTOError) and e.span is not None and e.span.is_known()


def run_case(tally: Tally, label: str, source: Callable[[], str | None], check: Callable[[], str],
             timeout: int, report: Path | None = None) -> None:
    """Run one program's check and count its outcome (module docstring); a failure or internal
    error is kept in `tally.details` and written to `report` at once."""
    tally.programs += 1
    signal.alarm(timeout)
    try:
        outcome = check()
    except _Timeout:
        kind, text = "timeout", f"timeout: over {timeout} s"
    except AssertionError as e:
        kind, text = "failure", f"AssertionError: {e}"
    except Exception as e:  # noqa: BLE001 - classifying every exception is the point
        kind = "failure" if located(e) else "internal"
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-6))
    else:
        kind, text = ("rejected" if outcome == "rejected" else "ok"), ""
    finally:
        signal.alarm(0)
    if kind == "ok":
        tally.ok += 1
    elif kind == "rejected":
        tally.rejected += 1
    else:
        if kind == "failure":
            tally.failures += 1
        elif kind == "internal":
            tally.internal += 1
        else:
            tally.timeouts += 1
        try:
            src = source() or ""
        except Exception as e:  # noqa: BLE001 - the generator itself failed
            src = f"<source unavailable: {e!r}>"
        tally.details.append((kind, label, f"{text}\n--- program ---\n{src}"))
        if report is not None:
            report.mkdir(parents=True, exist_ok=True)
            (report / f"{tally.name}-{label}.txt").write_text(f"{kind}\n{tally.details[-1][2]}\n")


# ---- the suites: each yields its cases, calling the test modules' own generators and checks ----

def parser_fuzz(n: int, offset: int) -> Iterator[Case]:
    import test_parser_fuzz as m

    seeds = n * m.SEEDS
    for seed in range(offset, offset + seeds):
        for k, src in enumerate(m.mutants(seed)):
            yield f"seed{seed}-{k}", (lambda s=src: s), (lambda s=src: m.check_mutant(s))


def mutant_compile(n: int, offset: int) -> Iterator[Case]:
    import test_mutant_compile as m

    for seed in range(offset, offset + n * m.PROGRAMS):
        yield f"seed{seed}", (lambda s=seed: m.mutant(s)), (lambda s=seed: m.check_mutant_compiles(s))


def _hypothesis(check: Callable[[str], str], examples: int, offset: int) -> Iterator[Case]:
    """Draw `examples` programs from test_roundtrip_property.programs() (no shrinking: the check
    never raises into Hypothesis); each is handed out as a case."""
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from test_roundtrip_property import programs

    drawn: list[str] = []

    @seed(offset)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(programs())
    def draw(src: str) -> None:
        drawn.append(src)

    draw()
    for k, src in enumerate(drawn):
        yield f"example{k}", (lambda s=src: s), (lambda s=src: check(s))


def roundtrip(n: int, offset: int) -> Iterator[Case]:
    import test_roundtrip_property as m

    return _hypothesis(m.check_round_trip, n * m.EXAMPLES, offset)


def differential(n: int, offset: int) -> Iterator[Case]:
    import test_differential as m

    return _hypothesis(m.check_program, n * m.EXAMPLES, offset)


def tile(n: int, offset: int) -> Iterator[Case]:
    import random

    import test_tile_differential as m

    for s in range(offset, offset + n * m.PROGRAMS):
        yield f"seed{s}", (lambda s=s: m.gen(random.Random(s))), (lambda s=s: m.check_tile_program(s))


def cube(n: int, offset: int) -> Iterator[Case]:
    import random

    import test_tile_differential as m

    for s in range(offset, offset + n * m.CUBE_PROGRAMS):
        yield (f"seed{s}", (lambda s=s: m.CubeGen(random.Random(s)).program()),
               (lambda s=s: m.check_cube_program(s)))


def access(n: int, offset: int) -> Iterator[Case]:
    import random

    import pytest
    import test_access_differential as m

    rec = m.Recorder()

    def check(s: int) -> str:
        m.check_access_program(s, rec)
        return "ok"

    patch = pytest.MonkeyPatch()
    rec.wrap(patch)   # the op wrappers stay only while this suite runs
    try:
        for s in range(offset, offset + n * m.PROGRAMS):
            yield (f"seed{s}", (lambda s=s: m.Gen(random.Random(s)).program()),
                   (lambda s=s: check(s)))
    finally:
        patch.undo()


SUITES: dict[str, Callable[[int, int], Iterator[Case]]] = {
    "parser-fuzz": parser_fuzz, "mutant-compile": mutant_compile, "roundtrip": roundtrip,
    "differential": differential, "tile": tile, "cube": cube, "access": access,
}


_COLUMNS = ("programs", "ok", "rejected", "failures", "internal", "timeouts")


def table(tallies: list[Tally]) -> str:
    """The per-suite counts and their total, as a text table."""
    def row(name: str, values: list[float]) -> str:
        return f"{name:<16}" + "".join(f"{v:>10}" for v in values[:-1]) + f"{values[-1]:>9.0f}"

    head = f"{'suite':<16}" + "".join(f"{c:>10}" for c in _COLUMNS) + f"{'seconds':>9}"
    lines = [head, "-" * len(head)]
    for t in tallies:
        lines.append(row(t.name, [getattr(t, c) for c in _COLUMNS] + [t.seconds]))
    totals = [sum(getattr(t, c) for t in tallies) for c in (*_COLUMNS, "seconds")]
    return "\n".join(lines + ["-" * len(head), row("total", totals)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=int, default=20, help="multiple of each suite's CI size (default 20)")
    ap.add_argument("--suites", default=",".join(SUITES), help=f"comma-separated, of {', '.join(SUITES)}")
    ap.add_argument("--offset", type=int, default=0, help="first seed (Hypothesis: its seed)")
    ap.add_argument("--timeout", type=int, default=120, help="seconds one program may take")
    ap.add_argument("--show", type=int, default=3, help="failures / internal errors printed per suite")
    ap.add_argument("--progress", type=int, default=0, help="print a count to stderr every N programs")
    ap.add_argument("--report", type=Path, help="folder for every failure / internal error")
    args = ap.parse_args(argv)
    names = [s.strip() for s in args.suites.split(",") if s.strip()]
    unknown = [s for s in names if s not in SUITES]
    if unknown:
        ap.error(f"unknown suite(s) {', '.join(unknown)}; choose from {', '.join(SUITES)}")
    warnings.simplefilter("ignore")   # mutants warn (unused Out parameters, odd literals) by design
    signal.signal(signal.SIGALRM, _on_alarm)
    build = tempfile.mkdtemp(prefix="pypto-stress-")
    os.environ["PYPTO_PROG_BUILD_DIR"] = build
    tallies = []
    try:
        for name in names:
            tally = Tally(name)
            start = time.perf_counter()
            for label, source, check in SUITES[name](args.scale, args.offset):
                run_case(tally, label, source, check, args.timeout, args.report)
                if tally.programs % 50 == 0:
                    shutil.rmtree(build, ignore_errors=True)   # keep the build folder small
                if args.progress and tally.programs % args.progress == 0:
                    print(f"  {name}: {tally.programs} programs ({tally.failures} failures, {tally.internal} "
                          f"internal errors)", file=sys.stderr, flush=True)
            tally.seconds = time.perf_counter() - start
            tallies.append(tally)
            print(f"{name}: {tally.programs} programs, {tally.failures} failures, {tally.internal} internal "
                  f"errors, {tally.timeouts} timeouts ({tally.seconds:.0f} s)", flush=True)
            for kind, label, text in tally.details[:args.show]:
                print(f"--- {name} {label}: {kind}\n{text}", flush=True)
    finally:
        shutil.rmtree(build, ignore_errors=True)
    print()
    print(table(tallies))
    return 1 if any(t.failures or t.internal for t in tallies) else 0


if __name__ == "__main__":
    sys.exit(main())
