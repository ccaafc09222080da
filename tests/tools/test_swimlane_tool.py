"""`python -m pypto.tools.swimlane` (SPEC §12, issue 12 item 3): a swimlane trace as one
self-contained HTML timeline, a row per core, hover text per task."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import RunConfig
from pypto.tools.swimlane import find_trace, main, render_html

ROWS = 16


@pl.program
class Blocks:
    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, x: pl.Tensor[[ROWS, 64], pl.FP32],
              y: pl.Out[pl.Tensor[[ROWS, 64], pl.FP32]]) -> pl.Tensor[[ROWS, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [ROWS, 64])
        y = pl.store(pl.add(t, t), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[256, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[256, 64], pl.FP32]]) -> pl.Tensor[[256, 64], pl.FP32]:
        for i in pl.range(0, 256, ROWS):
            xs = pl.slice(x, [ROWS, 64], [i, 0])
            ys = pl.slice(y, [ROWS, 64], [i, 0])
            ys = self.twice(xs, ys)
        return y


class _Page(HTMLParser):
    """Collects rects (class, fill, hover text), row labels and external references."""

    def __init__(self) -> None:
        super().__init__()
        self.rects: list[dict] = []
        self.labels: list[str] = []
        self.external: list[str] = []
        self._in: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for k in ("src", "href"):
            if k in a:
                self.external.append(a[k])
        if tag == "rect":
            self.rects.append({"class": a.get("class", ""), "fill": a.get("fill"), "title": ""})
        elif tag == "title" and self.rects:
            self._in = "title"
        elif tag == "text" and a.get("class") == "lab":
            self._in = "label"

    def handle_endtag(self, tag):
        self._in = None if tag in ("title", "text") else self._in

    def handle_data(self, data):
        if self._in == "title":
            self.rects[-1]["title"] += data
        elif self._in == "label":
            self.labels.append(data)


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("blocks")
    cp = ir.compile(Blocks, output_dir=out, dump_passes=False)
    x, y = torch.randn(256, 64), torch.zeros(256, 64)
    cp(x, y, config=RunConfig(enable_chip_swimlane=4, ring_task_window=4))
    assert torch.equal(y, 2 * x)
    return cp, out


def test_page_has_a_row_per_core_a_box_per_task_and_hover_details(build, tmp_path) -> None:
    cp, out = build
    target = tmp_path / "t.html"
    assert main([str(out), "-o", str(target)]) == 0
    text = target.read_text()
    page = _Page()
    page.feed(text)
    rec = cp.last_run
    busy = {t.core for t in cp.tasks}
    cores = [c for c in [f"AIC{i}" for i in range(rec.num_aic)] + [f"AIV{i}" for i in range(rec.num_aiv)]
             if c in busy]    # idle cores are not drawn (the page says how many)
    counters = [lab for lab in page.labels if " (max" in lab]
    rows = [lab for lab in page.labels[2:] if lab not in counters]
    assert page.labels[:2] == ["orchestrator", "scheduler"] and [r for r in rows if " " not in r] == cores
    assert f"({rec.num_aic + rec.num_aiv - len(busy)} idle core tracks not drawn: <code>--idle</code> draws them)" in text
    from pypto.runtime.sim.cost_model import cycles_to_us
    assert f"makespan_us: {cycles_to_us(rec.makespan_cycles):.3f} " in text   # microseconds, rounded
    # each busy core is followed by its pipe rows (level >= 2)
    for core in busy:
        i = rows.index(core)
        assert rows[i + 1:i + 4] == [f"{core} MTE2", f"{core} VECTOR", f"{core} MTE3"]
    assert {r.split()[0] for r in rows if " " in r} == busy
    assert {lab.split(" (max")[0] for lab in counters} == {"ready tasks", "tasks in flight"}
    assert page.labels[-len(counters):] == counters
    tasks = [r for r in page.rects if r["class"] == "s task"]
    assert len(tasks) == len(cp.tasks) == 16
    for r in tasks:
        tid = int(re.search(r"task_id: (\d+)", r["title"]).group(1))
        t = cp.tasks[tid]
        assert r["title"].startswith("twice\n") and f"core: {t.core}" in r["title"]
        assert f"cycles: {t.cycles}" in r["title"] and "pipe_cycles: {" in r["title"]
    stalls = [r for r in page.rects if r["class"] == "s stall"]
    assert len(stalls) == len([e for e in rec.orch_events if e.kind == "stall"]) > 0
    assert all(r["fill"] == "#d62728" and "task window full" in r["title"] for r in stalls)
    assert len([r for r in page.rects if r["class"] == "tick dispatch"]) == 16
    # self-contained: nothing fetched from anywhere
    assert page.external == [] and "url(" not in text and "@import" not in text


def test_op_hover_text_gives_its_cycles_after_the_launch(build, tmp_path) -> None:
    """A user trial compared the pipe rows with docs/performance.md's table ("cycles after the
    launch") by converting microseconds at 1.8 GHz; an op's hover text now says its cycles after
    its task's launch, from the trace's `start_after_launch` and `cycles`."""
    cp, out = build
    target = tmp_path / "ops.html"
    assert main([str(out), "-o", str(target)]) == 0
    page = _Page()
    page.feed(target.read_text())
    ops = [r for r in page.rects if r["class"] == "s pipe"]
    assert len(ops) == sum(len(t.pipe_ops) for t in cp.tasks) == 48
    for r in ops:
        t = cp.tasks[int(re.search(r"task_id: (\d+)", r["title"]).group(1))]
        start, cycles = (int(re.search(rf"\n{k}: (\d+)", r["title"]).group(1)) for k in ("start_after_launch", "cycles"))
        assert f"\ncycles {start}-{start + cycles} after the task's launch\n" in r["title"]
        name = r["title"].split("\n")[0]
        assert (name, start, start + cycles) in {(t.executor.site_names[o.site], o.start, o.end) for o in t.pipe_ops}
    first = next(r["title"] for r in ops if r["title"].startswith("tile.load"))
    assert "\ncycles 0-" in first


def test_idle_draws_every_core(build, tmp_path) -> None:
    """The trial's 72-core chip: the pipe rows of a busy core used to sit below every idle core;
    `--idle` keeps the old page (a row per core, idle ones included)."""
    cp, out = build
    target = tmp_path / "idle.html"
    assert main([str(out), "-o", str(target), "--idle"]) == 0
    page = _Page()
    page.feed(target.read_text())
    rec = cp.last_run
    cores = [f"AIC{i}" for i in range(rec.num_aic)] + [f"AIV{i}" for i in range(rec.num_aiv)]
    assert [lab for lab in page.labels[2:] if " " not in lab] == cores
    assert "idle core tracks not drawn" not in target.read_text()


def test_inputs_a_trace_a_dfx_folder_or_a_build_folder(build, tmp_path) -> None:
    _, out = build
    trace = out / "dfx_outputs" / "swimlane.json"
    assert find_trace(out) == find_trace(out / "dfx_outputs") == find_trace(trace) == trace
    assert main([str(trace)]) == 0                      # default: swimlane.html next to the trace
    default = out / "dfx_outputs" / "swimlane.html"
    assert default.read_text() == render_html(json.loads(trace.read_text()), "Blocks swimlane")


def test_missing_trace_is_a_clear_error(tmp_path, capsys) -> None:
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: no swimlane trace at {tmp_path}") and "enable_chip_swimlane=1..4" in err


def test_a_distributed_build_names_its_ranks_traces(build, tmp_path, capsys) -> None:
    # the layout a distributed run writes (runtime/dist/rank.py): dfx_outputs/rank<r>/d<k>/swimlane.json
    _, out = build
    trace = (out / "dfx_outputs" / "swimlane.json").read_text()
    for r in (0, 1):
        d = tmp_path / "dfx_outputs" / f"rank{r}" / "d0"
        d.mkdir(parents=True)
        (d / "swimlane.json").write_text(trace)
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: no single swimlane trace at {tmp_path}: it is a distributed build")
    assert f"{tmp_path / 'dfx_outputs' / 'rank0' / 'd0'}, {tmp_path / 'dfx_outputs' / 'rank1' / 'd0'}" in err
    assert main([str(tmp_path / "dfx_outputs" / "rank1" / "d0")]) == 0   # one of them renders


def test_runs_as_a_module(build, tmp_path) -> None:
    _, out = build
    target = tmp_path / "m.html"
    res = subprocess.run([sys.executable, "-m", "pypto.tools.swimlane", str(out), "-o", str(target)],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path(ir.__file__).parents[2])})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(target) and target.read_text().startswith("<!DOCTYPE html>")


def _chromium() -> str | None:
    import shutil
    return next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)


@pytest.mark.skipif(_chromium() is None, reason="no headless chromium on this machine")
def test_page_loads_in_a_browser_without_errors_and_zooms(build, tmp_path) -> None:
    _, out = build
    target = tmp_path / "b.html"
    assert main([str(out), "-o", str(target)]) == 0

    def rendered(window: str, zoom: str) -> str:
        res = subprocess.run([_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
                              "--v=0", f"--window-size={window}", "--dump-dom", target.as_uri() + zoom],
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr[-2000:]
        assert "CONSOLE" not in res.stderr, res.stderr[-2000:]
        return res.stdout

    def lanes_width(page: str) -> float:
        return float(re.search(r'<svg id="lanes"[^>]* width="([\d.]+)"', page).group(1))

    # a window wider than the page: zoom 8 is 8 x the base width (the script ran)
    wide = rendered("2000,900", "#zoom=8")
    assert lanes_width(wide) == 8 * 1420
    assert 'id="plot" transform="scale(8,1)"' in wide
    # a 1000-pixel window: zoom 1 fits the run into what the labels leave (no horizontal scroll)
    narrow = lanes_width(rendered("1000,900", ""))
    assert 600 < narrow < 1000 - 130
    dom = wide   # the page as the browser left it
    cp, _ = build
    busy = {t.core for t in cp.tasks}
    labels = re.findall(r'<text class="lab"[^>]*>([^<]*)</text>', dom)
    assert {lab for lab in labels if re.fullmatch(r"AI[CV]\d+", lab)} == busy   # only the cores that ran
