"""Compile-time diagnostics (SPEC §12; docs/tools.md "Diagnostics"): the warnings W001 UnusedVariable,
W002 UnusedControlFlowResult, W003 OutParamWriteDropped and W004 OutParamNeverWritten issued as
located `DiagnosticWarning`s and collected in `report/diagnostics.log`; `diagnostic_phase=`,
`disabled_diagnostics=` and `verification_level=` checking on `ir.compile`."""

import re
import warnings
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.diagnostics import CATALOGUE, DiagnosticWarning, diagnostic_options

HERE = str(Path(__file__).resolve())
T = pl.Tensor[[16, 128], pl.FP32]


def line_of(marker: str) -> int:
    hits = [i for i, line in enumerate(Path(HERE).read_text().splitlines(), start=1) if line.endswith(f"# {marker}")]
    assert len(hits) == 1, hits
    return hits[0]


def compile_warnings(program, out, **kw) -> list[DiagnosticWarning]:
    """Compile, returning the DiagnosticWarnings issued (other warnings are ignored)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ir.compile(program, output_dir=out, dump_passes=False, skip_ptoas=True, **kw)
    return [w for w in caught if issubclass(w.category, DiagnosticWarning)]


def log_lines(out: Path) -> list[str]:
    return [s for s in (out / "report" / "diagnostics.log").read_text().splitlines() if not s.startswith("#")]


@pl.program
class Clean:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: T, n: pl.Scalar[pl.INDEX], y: pl.Out[T]) -> T:
        t = pl.load(x, [0, 0], [16, 128])
        acc = t
        for i in pl.range(4):
            acc = pl.add(acc, t)
        if n > 2:
            r = pl.mul(acc, 2.0)
        else:
            r = acc
        _spare = pl.exp(t)            # a leading underscore: kept on purpose
        y = pl.store(r, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: T, n: pl.Scalar[pl.INDEX], y: pl.Out[T]) -> T:
        y = self.k(x, n, y)
        return y


@pl.program
class Sloppy:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: T, n: pl.Scalar[pl.INDEX], y: pl.Out[T]) -> T:
        t = pl.load(x, [0, 0], [16, 128])
        u = pl.exp(t)  # MARK-W001
        acc = t
        for i in pl.range(4):  # MARK-W002-FOR
            acc = pl.add(acc, t)
        if n > 2:  # MARK-W002-IF
            r = pl.yield_(pl.mul(t, 2.0))
        else:
            r = pl.yield_(t)
        y2 = pl.store(t, [0, 0], y)  # MARK-W003
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: T, n: pl.Scalar[pl.INDEX], y: pl.Out[T]) -> T:
        y = self.k(x, n, y)
        return y


def test_a_clean_program_has_no_warnings_and_runs(tmp_path):
    assert compile_warnings(Clean, tmp_path / "b") == []
    assert log_lines(tmp_path / "b") == ["no warnings"]
    head = (tmp_path / "b" / "report" / "diagnostics.log").read_text().splitlines()
    assert head[0] == "# Compile-time warnings for program 'Clean'"
    assert head[2] == "# diagnostic_phase='all', disabled_diagnostics=[]"
    cp = ir.compile(Clean, output_dir=tmp_path / "c", dump_passes=False, skip_ptoas=True)
    x, y = torch.randn(16, 128), torch.zeros(16, 128)
    cp(x, 3, y)
    torch.testing.assert_close(y, x * 5 * 2)


def test_each_warning_has_its_code_name_message_and_the_users_line(tmp_path):
    ws = compile_warnings(Sloppy, tmp_path / "b")
    got = [(w.message.code, w.message.name, w.filename, w.lineno) for w in ws]
    assert got == [("W001", "UnusedVariable", HERE, line_of("MARK-W001")),
                   ("W002", "UnusedControlFlowResult", HERE, line_of("MARK-W002-FOR")),
                   ("W002", "UnusedControlFlowResult", HERE, line_of("MARK-W002-IF")),
                   ("W003", "OutParamWriteDropped", HERE, line_of("MARK-W003"))]
    assert all(isinstance(w.message, UserWarning) for w in ws)   # a UserWarning subclass
    w1, w2f, w2i, w3 = (str(w.message) for w in ws)
    assert w1 == ("W001 UnusedVariable: in 'k': 'u' is assigned a value that is never used; use it or remove the "
                  "assignment (a name starting with '_' marks a value kept on purpose)")
    assert w2f.startswith("W002 UnusedControlFlowResult: in 'k': the value of 'acc' after this 'for' is never used; "
                          "use it, drop it, or name it '_acc' when only the iterations need it")
    assert "the value of 'r' after this 'if' is never used" in w2i
    assert w3.startswith("W003 OutParamWriteDropped: in 'k': the write into Out parameter 'y' by 'tile.store' is "
                         "not part of the value 'k' returns for 'y'")
    assert ws[0].message.span.begin_line == line_of("MARK-W001") and ws[0].message.function == "k"
    lines = log_lines(tmp_path / "b")
    assert len(lines) == 4
    assert re.fullmatch(rf"W001 {re.escape(HERE)}:{line_of('MARK-W001')}:\d+: in 'k': 'u' is assigned .*", lines[0])
    assert lines[3].startswith(f"W003 {HERE}:{line_of('MARK-W003')}:")


def test_w003_a_write_started_from_an_older_version(tmp_path):
    @pl.program
    class Restart:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[32, 128], pl.FP32], y: pl.Out[pl.Tensor[[32, 128], pl.FP32]]) -> pl.Tensor[[32, 128], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 128])
            y1 = pl.store(t, [0, 0], y)  # MARK-RESTART
            y2 = pl.store(t, [16, 0], y)
            return y2

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, 128], pl.FP32], y: pl.Out[pl.Tensor[[32, 128], pl.FP32]]) -> pl.Tensor[[32, 128], pl.FP32]:
            y = self.k(x, y)
            return y

    ws = compile_warnings(Restart, tmp_path / "b")
    assert [(w.message.code, w.lineno) for w in ws] == [("W003", line_of("MARK-RESTART"))]


def test_w003_not_for_threaded_writes_or_functions_that_return_nothing(tmp_path):
    @pl.program
    class Threaded:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[32, 128], pl.FP32], y: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
            for i in pl.range(2):
                t = pl.load(x, [i * 16, 0], [16, 128])
                y = pl.store(t, [i * 16, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, 128], pl.FP32], y: pl.Out[pl.Tensor[[32, 128], pl.FP32]]):
            self.k(x, y)

    assert compile_warnings(Threaded, tmp_path / "b") == []
    # writes through views of an Out parameter: tests/language/test_jit_usage.py (no DiagnosticWarning)


def test_w004_out_parameter_never_written(tmp_path):
    @pl.program
    class Forgot:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: T, y: pl.Out[T]) -> T:  # MARK-W004
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: T, y: pl.Out[T]) -> T:
            y = self.k(x, y)
            return y

    ws = compile_warnings(Forgot, tmp_path / "b")
    assert [(w.message.code, w.message.name, w.lineno) for w in ws] == [("W004", "OutParamNeverWritten", line_of("MARK-W004"))]
    assert str(ws[0].message).startswith("W004 OutParamNeverWritten: in 'k': Out parameter 'y' of 'k' is never written")


def test_disabled_diagnostics_by_code_or_name(tmp_path):
    ws = compile_warnings(Sloppy, tmp_path / "a", disabled_diagnostics={"W001", "OutParamWriteDropped"})
    assert [w.message.code for w in ws] == ["W002", "W002"]
    assert [s.split()[0] for s in log_lines(tmp_path / "a")] == ["W002", "W002"]
    assert "disabled_diagnostics=['W001', 'W003']" in (tmp_path / "a" / "report" / "diagnostics.log").read_text()
    ws = compile_warnings(Sloppy, tmp_path / "b", disabled_diagnostics="UnusedControlFlowResult")
    assert [w.message.code for w in ws] == ["W001", "W003"]


@pytest.mark.parametrize("phase", ["none", "run"])
def test_phases_without_compile_emit_no_compile_diagnostics(tmp_path, phase):
    assert compile_warnings(Sloppy, tmp_path / "b", diagnostic_phase=phase) == []
    note = f"not checked: diagnostic_phase='{phase}' leaves out the compile phase"
    assert log_lines(tmp_path / "b") == [note]
    hints = (tmp_path / "b" / "report" / "perf_hints.log").read_text().splitlines()
    assert hints[-1] == note


def test_compile_phase_emits_compile_diagnostics(tmp_path):
    assert len(compile_warnings(Sloppy, tmp_path / "b", diagnostic_phase="compile")) == 4


@pytest.mark.parametrize("kw,message", [
    (dict(diagnostic_phase="sometimes"),
     "unknown diagnostic_phase 'sometimes'; allowed: 'none', 'compile', 'run', 'all'"),
    (dict(diagnostic_phase=1), "unknown diagnostic_phase 1; allowed: 'none', 'compile', 'run', 'all'"),
    (dict(disabled_diagnostics={"W999"}),
     "unknown diagnostic 'W999' in disabled_diagnostics; allowed codes and names: W001 (UnusedVariable), "),
    (dict(disabled_diagnostics=["UnusedVar"]), "unknown diagnostic 'UnusedVar' in disabled_diagnostics"),
    (dict(disabled_diagnostics=5), "disabled_diagnostics must be a code or name or a set of them, got 5"),
    (dict(verification_level="paranoid"),
     "unknown verification_level 'paranoid'; allowed: ir.VerificationLevel.NONE, ir.VerificationLevel.BASIC, "
     "ir.VerificationLevel.ROUNDTRIP"),
    (dict(verification_level=2), "unknown verification_level 2"),
    (dict(backend_type="Ascend310"),
     "unknown backend_type 'Ascend310'; allowed: BackendType.Ascend910B, BackendType.Ascend950 "
     "(from pypto.backend import BackendType), or their names as strings"),
    (dict(backend_type=950), "unknown backend_type 950"),
])
def test_unknown_option_values_are_value_errors_before_anything_is_written(tmp_path, kw, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        ir.compile(Clean, output_dir=tmp_path / "b", **kw)
    assert not (tmp_path / "b").exists()


def test_backend_type_by_name(tmp_path):
    """Like verification_level, backend_type may be given by its name (it was a bare KeyError)."""
    from pypto.backend import BackendType

    assert ir.compile(Clean, output_dir=tmp_path / "b", backend_type="Ascend950").backend_type is BackendType.Ascend950


def test_every_code_is_listed_in_the_allowed_values():
    with pytest.raises(ValueError) as e:
        diagnostic_options(disabled=["nope"])
    assert all(f"{c} ({i.name})" in str(e.value) for c, i in CATALOGUE.items())


def test_verification_level_by_name(tmp_path, monkeypatch):
    from pypto.passes import manager as manager_mod

    calls = []
    real = manager_mod.verify_roundtrip
    monkeypatch.setattr(manager_mod, "verify_roundtrip", lambda p, n, r: calls.append(n) or real(p, n, r))
    ir.compile(Clean, output_dir=tmp_path / "b", dump_passes=False, verification_level="roundtrip")
    assert calls and calls[0] == "InlineFunctions"


def test_w002_spares_a_while_loops_counter_but_not_its_other_results(tmp_path):
    @pl.program
    class Counted:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: T, n: pl.Scalar[pl.INDEX], y: pl.Out[T]) -> T:
            t = pl.load(x, [0, 0], [16, 128])
            i = 0
            s = t
            lost = t
            while i < n:  # MARK-W002-WHILE
                s = pl.add(s, t)
                lost = pl.mul(lost, 2.0)
                i = i + 1
            y = pl.store(s, [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: T, n: pl.Scalar[pl.INDEX], y: pl.Out[T]) -> T:
            y = self.k(x, n, y)
            return y

    ws = compile_warnings(Counted, tmp_path / "b")
    assert [(w.message.code, w.lineno) for w in ws] == [("W002", line_of("MARK-W002-WHILE"))]
    assert "the value of 'lost' after this 'while' is never used" in str(ws[0].message)


def test_break_and_continue_flags_are_not_reported_as_unused_results(tmp_path):
    """CtrlFlowTransform's break / continue flags are the compiler's, not the user's: a loop with
    `break` (any step) or `continue` gets no W002 about them (language guide, Control Flow)."""

    @pl.program
    class Escapes:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: T, n: pl.Scalar[pl.INDEX], y: pl.Out[T]) -> T:
            t = pl.load(x, [0, 0], [16, 128])
            acc = t
            for i in pl.range(8):
                if i > n:
                    break
                acc = pl.add(acc, t)
            for j in pl.range(7, -1, -1):
                if j == n:
                    continue
                if j < 2:
                    break
                acc = pl.mul(acc, 2.0)
            y = pl.store(acc, [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: T, n: pl.Scalar[pl.INDEX], y: pl.Out[T]) -> T:
            y = self.k(x, n, y)
            return y

    assert [str(w.message) for w in compile_warnings(Escapes, tmp_path / "e")] == []
