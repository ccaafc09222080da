"""benchmarks/stress.py (issue 13, "Reliability at scale"): how it classifies one program's outcome,
and that each suite hands out scale × its CI size programs from the test modules' own generators."""

import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import stress  # noqa: E402

from pypto.core.errors import CompileError, ParserError, RuntimeSimError  # noqa: E402
from pypto.core.span import Span  # noqa: E402


def _raise(e: BaseException):  # type: ignore[no-untyped-def]
    def check() -> str:
        raise e
    return check


def test_outcomes_are_counted_by_kind(tmp_path: Path) -> None:
    def wrong() -> str:
        raise AssertionError("Tensor-likes are not close!")

    def slow() -> str:
        time.sleep(5)
        return "ran"

    cases = {
        "ran": lambda: "ran",
        "refused": lambda: "rejected",
        "numbers": wrong,
        "located": _raise(CompileError("does not fit", Span("k.py", 3, 5))),
        "unlocated": _raise(RuntimeSimError("argument 'd' is [64, 32], expected [4, 32]")),
        "unknown-span": _raise(ParserError("bad", Span.unknown())),
        "bug": _raise(KeyError("x")),
        "slow": slow,
    }
    tally = stress.Tally("s")
    old = signal.signal(signal.SIGALRM, stress._on_alarm)
    try:
        for label, check in cases.items():
            stress.run_case(tally, label, lambda label=label: f"src of {label}", check, 1, tmp_path)
    finally:
        signal.signal(signal.SIGALRM, old)
    assert (tally.programs, tally.ok, tally.rejected, tally.failures, tally.internal, tally.timeouts) == (8, 1, 1, 2, 3, 1)
    assert [(k, label) for k, label, _ in tally.details] == [
        ("failure", "numbers"), ("failure", "located"), ("internal", "unlocated"),
        ("internal", "unknown-span"), ("internal", "bug"), ("timeout", "slow")]
    text = (tmp_path / "s-unlocated.txt").read_text()
    assert text.startswith("internal\n") and "expected [4, 32]" in text and text.rstrip().endswith("src of unlocated")
    assert "total" in stress.table([tally]).splitlines()[-1]


@pytest.mark.parametrize(("suite", "module", "size"), [
    ("parser-fuzz", "test_parser_fuzz", lambda m: m.SEEDS * m.CASES_PER_SEED),
    ("mutant-compile", "test_mutant_compile", lambda m: m.PROGRAMS),
    ("tile", "test_tile_differential", lambda m: m.PROGRAMS),
    ("cube", "test_tile_differential", lambda m: m.CUBE_PROGRAMS),
    ("access", "test_access_differential", lambda m: m.PROGRAMS),
])
def test_a_seeded_suite_hands_out_scale_times_its_ci_size(suite: str, module: str, size) -> None:  # type: ignore[no-untyped-def]
    m = __import__(module)
    labels = [label for label, _, _ in stress.SUITES[suite](2, 5)]
    assert len(labels) == len(set(labels)) == 2 * size(m)
