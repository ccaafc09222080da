"""The host-level allreduce example at the start of docs/distributed.md "Collectives" runs as
written (4 ranks, checked by the block's own assert against torch), and the mistake the text
after it describes (`pld.allreduce` of a plain host parameter) gives the quoted located error."""

import importlib
import re
from pathlib import Path

import pytest

from pypto.core.errors import ParserTypeError

DOC = Path(__file__).resolve().parents[3] / "docs" / "distributed.md"
QUOTED = "argument 'src' must be a window-bound pld.DistributedTensor"


def _section() -> str:
    return DOC.read_text(encoding="utf-8").split("## Collectives\n", 1)[1]


def _first_block() -> str:
    return re.search(r"```python\n(.*?)```", _section(), re.S).group(1)


def _import(tmp_path: Path, monkeypatch, name: str, code: str):
    (tmp_path / f"{name}.py").write_text(code, encoding="utf-8")   # the parser reads the source file
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(name)


def test_host_allreduce_example_runs_as_written(tmp_path, monkeypatch):
    code = _first_block()
    assert "pld.allreduce(data)" in code and "device_ids=[0, 1, 2, 3]" in code
    mod = _import(tmp_path, monkeypatch, "dist_doc_host_allreduce", code)   # runs it; its assert checks ys
    assert mod.ys.shape == (4, mod.R, mod.C)


def test_allreduce_of_a_plain_host_parameter_gives_the_documented_error(tmp_path, monkeypatch):
    assert QUOTED in " ".join(_section().split())
    code = _first_block().replace("pld.allreduce(data)", "pld.allreduce(xs)")
    with pytest.raises(ParserTypeError) as ei:
        _import(tmp_path, monkeypatch, "dist_doc_plain_allreduce", code)
    assert QUOTED in ei.value.message
    line = next(i + 1 for i, ln in enumerate(code.splitlines()) if "pld.allreduce(xs)" in ln)
    assert Path(ei.value.span.filename).name == "dist_doc_plain_allreduce.py" and ei.value.span.begin_line == line
