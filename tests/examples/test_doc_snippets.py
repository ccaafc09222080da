"""The code blocks of docs/language.md's "Scopes and tasks", "SPMD" and "Directives" sections are the examples'
marked regions (which `test_examples` runs), so the documented code is code that runs."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _marked(path: Path, tag: str) -> str:
    m = re.search(rf"# --- doc: {tag} ---\n(.*?)# --- end doc ---\n", path.read_text(), re.S)
    assert m, f"{path.name} has no doc region '{tag}'"
    return m.group(1).rstrip("\n")


def _section_code(title: str) -> str:
    doc = (ROOT / "docs" / "language.md").read_text()
    section = doc.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```python\n(.*?)\n```", section, re.S).group(1)


@pytest.mark.parametrize("title, example, tag", [
    ("Scopes and tasks", "scopes_and_tasks.py", "scopes-and-tasks"),
    ("SPMD", "spmd.py", "spmd"),
    ("Directives", "directives.py", "directives"),
])
def test_doc_section_shows_the_example_that_runs(title, example, tag):
    assert _section_code(title) == _marked(ROOT / "examples" / example, tag)
