"""PassManager: runs a pass list with instruments — IR dumps and verification (SPEC §5).

With a dump directory it writes `00_frontend.py` before the first pass and `NN_after_<Pass>.py`
after each pass: printed IR that `pl.loads` re-parses.
"""

from __future__ import annotations

import enum
import os
import time
from collections.abc import Callable
from pathlib import Path

from ..ir.function import Program
from ..ir.printer import python_print
from .base import Pass, PassContext
from .verifier import VerifiedFunctions, verify_basic, verify_roundtrip

__all__ = ["PassManager", "VerificationLevel"]


class VerificationLevel(enum.Enum):
    """How much checking runs after every pass: NONE, BASIC (default) or ROUNDTRIP."""

    NONE = 0
    BASIC = 1
    ROUNDTRIP = 2

    @staticmethod
    def from_env(default: VerificationLevel | None = None) -> VerificationLevel:
        """`$PYPTO_VERIFY_LEVEL` (none/basic/roundtrip, any case) or `default` (BASIC)."""
        raw = os.environ.get("PYPTO_VERIFY_LEVEL")
        if raw:
            try:
                return VerificationLevel[raw.strip().upper()]
            except KeyError:
                raise ValueError(f"PYPTO_VERIFY_LEVEL={raw!r} is not one of none, basic, roundtrip") from None
        return default or VerificationLevel.BASIC


class PassManager:
    """Runs `passes` in order. `timings` holds (pass name, milliseconds) of the last run and
    `verify_ms` the milliseconds its verification took (not part of `timings`).

    `observers` maps a pass name to callbacks that receive the program right after that pass (an
    analysis that needs a particular stage, e.g. the compile-time warnings after ConvertToSSA).
    `reparse` is the DSL parser ROUNDTRIP verification prints and re-parses with
    (`parse_text(text, filename=...)`; the compile driver passes it in).

    Raises:
        ValueError: ROUNDTRIP verification without `reparse`.
    """

    def __init__(self, passes: list[Pass], verification: VerificationLevel = VerificationLevel.BASIC,
                 dump_dir: str | Path | None = None,
                 observers: dict[str, Callable[[Program], None]] | None = None,
                 reparse: Callable[..., Program] | None = None) -> None:
        if verification is VerificationLevel.ROUNDTRIP and reparse is None:
            raise ValueError("ROUNDTRIP verification re-parses the printed IR: pass reparse= (the DSL "
                             "parser, pypto.language.parser.entry.parse_text)")
        self.reparse = reparse
        self.passes = passes
        self.verification = verification
        self.dump_dir = Path(dump_dir) if dump_dir is not None else None
        self.observers = dict(observers or {})
        self.timings: list[tuple[str, float]] = []
        self.verify_ms = 0.0

    def _dump(self, name: str, program: Program) -> None:
        if self.dump_dir is not None:
            self.dump_dir.mkdir(parents=True, exist_ok=True)
            (self.dump_dir / name).write_text(python_print(program), encoding="utf-8")

    def run(self, program: Program, ctx: PassContext | None = None) -> Program:
        ctx = ctx or PassContext()
        self.timings = []
        self.verify_ms = 0.0
        verified = VerifiedFunctions()  # BASIC re-walks only the functions a pass changed
        self._dump("00_frontend.py", program)
        for i, p in enumerate(self.passes, start=1):
            t0 = time.perf_counter()
            program = p.run(program, ctx)
            t1 = time.perf_counter()
            self.timings.append((p.name, (t1 - t0) * 1e3))
            if self.verification is not VerificationLevel.NONE:
                verify_basic(program, p.name, memo=verified)
            if self.verification is VerificationLevel.ROUNDTRIP:
                verify_roundtrip(program, p.name, self.reparse)  # type: ignore[arg-type]
            self.verify_ms += (time.perf_counter() - t1) * 1e3
            self._dump(f"{i:02d}_after_{p.name}.py", program)
            if p.name in self.observers:
                self.observers[p.name](program)
        return program
