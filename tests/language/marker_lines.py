"""Test helper: check that a PyPTO error points at the line of a test file that carries a marker
comment (`# MARK-...`), and renders as `file:line:col: error: ...` with that line and a caret."""

from pathlib import Path


def line_of(test_file: str, marker: str) -> int:
    """The one line of `test_file` that ends with the comment `# <marker>`."""
    hits = [i + 1 for i, line in enumerate(Path(test_file).read_text().splitlines()) if f"# {marker}" in line]
    assert len(hits) == 1, hits
    return hits[0]


def assert_at(err: Exception, test_file: str, marker: str) -> None:
    """`err` (a PyPTOError) is located at the one line of `test_file` marked `# <marker>`."""
    line = line_of(test_file, marker)
    span = err.span  # type: ignore[attr-defined]
    assert span is not None and Path(span.filename).resolve() == Path(test_file).resolve()
    assert span.begin_line == line, (span.begin_line, line)
    rendered = str(err)
    assert rendered.startswith(f"{span.filename}:{span.begin_line}:{span.begin_col}: error: ")
    assert marker in rendered and "^" in rendered
