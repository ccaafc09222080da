"""Differential property: a generated program run on the simulator (after the whole pipeline,
with ROUNDTRIP verification) computes what the PyTorch reference of its *frontend* IR computes
(`pypto.debug.torch_codegen`). Silent wrong numbers are the bug class users hit most (SPEC §9).

A program the compiler rejects with a located CompileError is not a wrong number; it is skipped
here and counted, and the test requires that most programs do compile. `PYPTO_DIFF_EXAMPLES`
(default 60) sets how many programs Hypothesis draws. `check_program` is the property for one
program; `benchmarks/stress.py` runs it at scale.
"""

import os

import torch
from hypothesis import HealthCheck, given, settings
from test_roundtrip_property import programs

import pypto.language as pl
from pypto import ir
from pypto.core.errors import CompileError
from pypto.debug import torch_codegen

EXAMPLES = int(os.environ.get("PYPTO_DIFF_EXAMPLES", "60"))


def check_program(src: str) -> str:
    """Run generated program `src` on the simulator and against its torch reference.

    Returns "ran", or "rejected" when the compiler refuses it with a located CompileError (an
    unlocated one is re-raised). Raises AssertionError on different numbers.
    """
    prog = pl.parse(src)
    torch.manual_seed(0)
    a, b, n = torch.randn(16, 16), torch.randn(16, 16), 3
    ns: dict = {}
    exec(compile(torch_codegen(prog), "<reference>", "exec"), ns)  # noqa: S102
    ref = ns["run"](a.clone(), b.clone(), n)
    try:
        compiled = ir.compile(prog, dump_passes=False, verification_level=ir.VerificationLevel.ROUNDTRIP)
    except CompileError as e:
        if e.span is None or not e.span.is_known():
            raise
        return "rejected"
    got = compiled(a.clone(), b.clone(), n)
    torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-4, equal_nan=True)
    return "ran"


def test_simulator_matches_the_torch_reference_of_the_frontend():
    stats = {"ran": 0, "rejected": 0}

    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(programs())
    def check(src):
        stats[check_program(src)] += 1

    check()
    assert stats["ran"] >= 3 * stats["rejected"], stats  # most generated programs compile
