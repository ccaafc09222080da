from pypto.core.errors import ParserError, UndefinedVariableError, register_source
from pypto.core.span import Span


def test_error_renders_file_line_col_source_and_caret():
    register_source("kern.py", "x = 1\ny = pl.add(zz, 1.0)\n")
    err = UndefinedVariableError("Undefined variable 'zz'", Span("kern.py", 2, 12, 2, 14))
    text = str(err)
    lines = text.splitlines()
    assert lines[0] == "kern.py:2:12: error: Undefined variable 'zz'"
    assert lines[1].strip() == "y = pl.add(zz, 1.0)"
    assert lines[2].index("^") == lines[1].index("zz")
    assert lines[2].count("^") == 2
    assert isinstance(err, ParserError) and err.message == "Undefined variable 'zz'"


def test_error_without_span_is_plain_message():
    assert str(ParserError("boom")) == "boom"
