"""The code of docs/performance.md "Reading the simulated time" and "Splitting work across cores"
runs as written (on a smaller tensor): one task per row slice, the tasks overlap on separate cores."""

import re
from pathlib import Path

import torch

from pypto import ir
from pypto.runtime.sim.cost_model import cycles_to_us

DOC = Path(__file__).resolve().parents[2] / "docs" / "performance.md"


def _block(section: str) -> str:
    text = DOC.read_text().split(f"## {section}\n", 1)[1]
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def test_splitting_work_across_cores_runs_as_written(tmp_path, monkeypatch):
    code = _block("Splitting work across cores").replace("N, D, TASKS = 4096, 1024, 8", "N, D, TASKS = 256, 128, 4")
    (tmp_path / "split_doc.py").write_text("import pypto.language as pl\n" + code)   # the parser reads the source
    monkeypatch.syspath_prepend(str(tmp_path))
    import split_doc
    compiled = ir.compile(split_doc.RowOp, dump_passes=False, skip_ptoas=True)
    x, y = torch.randn(256, 128), torch.zeros(256, 128)
    compiled(x, y)
    torch.testing.assert_close(y, torch.exp(x))
    rec = compiled.last_run
    assert len(rec.tasks) == 4 and len({t.core for t in rec.tasks}) == 4
    assert max(t.start_cycle for t in rec.tasks) < min(t.end_cycle for t in rec.tasks)
    # the fields "Reading the simulated time" names
    read = _block("Reading the simulated time")
    for name in ("makespan_cycles", "orchestrator_cycles", "start_cycle", "end_cycle", "ddr_wait_cycles"):
        assert name in read
    assert rec.makespan_cycles >= max(t.end_cycle for t in rec.tasks) and rec.orchestrator_cycles == 4 * 360
    assert cycles_to_us(rec.makespan_cycles) > 0 and all(t.cost.pipe_cycles["vector"] > 0 for t in rec.tasks)
