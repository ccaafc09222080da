"""The diagnostics catalogue (pypto.core.diagnostics) against its users and its documentation:
every code is documented in docs/tools.md "## Diagnostics" with its name, the hint tables of the
compile-time and run-time logs are its hint rows of that phase, and a DiagnosticWarning rebuilt
from its text (pickling, pytest-xdist) keeps its code and name."""

import pickle
from pathlib import Path

from pypto.compiler import WARNING_CODES
from pypto.core.diagnostics import CATALOGUE, Diagnostic, DiagnosticWarning, diagnostic_options
from pypto.core.span import Span
from pypto.runtime.run_hints import RUN_HINT_CODES
from pypto.tools.perf_hints import HINT_CODES

DOC = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def _section() -> str:
    text = DOC.read_text()
    start = text.index("\n## Diagnostics\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def test_every_code_is_documented_with_its_name_and_meaning():
    sec = _section()
    for code, info in CATALOGUE.items():
        assert f"| {code} " in sec and info.name in sec, code
        if info.kind == "warning":
            assert f"**{code} {info.name}**" in sec, code   # a paragraph of its own


def test_the_logs_list_the_catalogues_codes_of_their_phase():
    by = {(i.kind, i.phase): [c for c, j in CATALOGUE.items() if (j.kind, j.phase) == (i.kind, i.phase)]
          for i in CATALOGUE.values()}
    assert list(WARNING_CODES) == by[("warning", "compile")]
    assert list(HINT_CODES) == by[("hint", "compile")]
    assert list(RUN_HINT_CODES) == by[("hint", "run")]


def test_names_and_codes_both_disable():
    for code, info in CATALOGUE.items():
        assert diagnostic_options(disabled=[info.name]).disabled == {code}
        assert not diagnostic_options(disabled=code).enabled(code)
    assert not diagnostic_options("run").enabled("W001") and diagnostic_options("run").enabled("PH004")
    assert not diagnostic_options("none").runs("compile") and not diagnostic_options("none").runs("run")


def test_a_warning_rebuilt_from_its_text_keeps_code_and_name():
    w = DiagnosticWarning(Diagnostic("W002", "k", "the value of 'acc' ...", Span("k.py", 3, 5)))
    assert str(w) == "W002 UnusedControlFlowResult: in 'k': the value of 'acc' ..."
    assert (w.code, w.name, w.function, w.span.begin_line) == ("W002", "UnusedControlFlowResult", "k", 3)
    again = pickle.loads(pickle.dumps(w))
    assert str(again) == str(w) and (again.code, again.span) == ("W002", w.span)
    rebuilt = DiagnosticWarning(*w.args)   # what pytest-xdist does with a warning from a worker
    assert str(rebuilt) == str(w) and (rebuilt.code, rebuilt.name, rebuilt.span) == ("W002", "UnusedControlFlowResult", None)
