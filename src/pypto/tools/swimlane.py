"""Render a swimlane trace as one self-contained HTML timeline (SPEC §12 runtime DFX).

    python -m pypto.tools.swimlane <swimlane.json | dfx_outputs dir | build dir> [-o out.html]

For people who cannot open Perfetto (https://ui.perfetto.dev) offline: the page has no external
resources (inline SVG, CSS and a few lines of JavaScript). Each track of the trace is a row — the
AICPU's orchestrator (and scheduler, from swimlane level 3) first, then one row per AI core that
ran a task, in track order (idle cores are left out, so the pipe rows of a busy core are not
pushed below 72 empty rows; `--idle` draws them too), each busy core followed (from level 2) by a
row per pipe it used; each slice ("X" event) is a box over its time span, coloured by
kernel (orchestrator stalls red, waits grey); hovering a box shows its name, start, duration and
arguments (task id, cycles, pipe cycles, dependencies, scope, ...; an op on a pipe track also its
cycles after the task's launch, e.g. `cycles 724-868 after the task's launch`). Instants (dispatch / finish)
are thin ticks, async scheduler phases boxes on the scheduler row, counters ("tasks in flight",
"ready tasks") step lines in rows of their own. At zoom 1 the whole run fits the window's
width; a slider widens the timeline (zoom; also `page.html#zoom=8`), the page then scrolls
horizontally. Flow arrows are not drawn (the task's `deps`
are in its hover text).

Input: a trace-event JSON file, a `dfx_outputs/` folder holding `swimlane.json`, or a build folder
holding `dfx_outputs/swimlane.json`. Output: `-o` or `swimlane.html` next to the trace.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

__all__ = ["find_trace", "render_html", "main"]

_ROW, _GAP, _LABEL, _WIDTH = 18, 4, 130, 1400
_CORES_PID = 1   # the process of the AI-core tracks (`runtime.dfx.swimlane.CHIP_PID`)


def _shown(v: object) -> str:
    """A header value as a reader wants it: floats (microseconds) to 3 decimals, the rest as is."""
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def find_trace(path: str | Path) -> Path:
    """The trace file `path` names: the file itself, `<dir>/swimlane.json` or
    `<dir>/dfx_outputs/swimlane.json`; for a distributed build, its merged trace of every rank
    (`swimlane_merged.json`, written with `enable_chip_swimlane=1`).

    Raises:
        FileNotFoundError: nothing there, with what was looked for and how to produce it; for a
            distributed build (traces in `dfx_outputs/rank<r>/d<k>/`), naming those folders.
    """
    p = Path(path)
    for cand in (p, p / "swimlane.json", p / "dfx_outputs" / "swimlane.json"):
        if cand.is_file():
            return cand
    for cand in (p / "swimlane_merged.json", p / "dfx_outputs" / "swimlane_merged.json"):
        if cand.is_file():   # a distributed build's call: every rank on one timeline
            return cand
    ranks = sorted(q.parent for base in (p, p / "dfx_outputs") if base.is_dir()
                   for q in base.glob("rank*/d*/swimlane.json"))
    if ranks:   # a distributed build: one trace per rank and dispatch (docs/distributed.md)
        shown = ", ".join(str(r) for r in ranks[:4]) + (f" and {len(ranks) - 4} more" if len(ranks) > 4 else "")
        raise FileNotFoundError(f"no single swimlane trace at {p}: it is a distributed build, whose ranks "
                                f"write one trace per dispatch in dfx_outputs/rank<r>/d<k>/ (and the merged "
                                f"swimlane_merged.json only with enable_chip_swimlane=1); pass one of those "
                                f"folders: {shown}")
    raise FileNotFoundError(f"no swimlane trace at {p}: expected a trace-event JSON file, a dfx_outputs/ "
                            f"folder with swimlane.json, or a build folder with dfx_outputs/swimlane.json "
                            f"(run the program with RunConfig(enable_chip_swimlane=1..4) to write one)")


def _color(name: str) -> str:
    h = int(hashlib.md5(name.encode()).hexdigest()[:6], 16)
    return f"hsl({h % 360},55%,{55 + (h >> 9) % 15}%)"


_FIXED = {"stall": "#d62728", "wait": "#9e9e9e", "submit": "#7f7f7f", "scope": "rgba(31,119,180,0.18)",
          "sched": "rgba(255,127,14,0.55)"}


def _tip(e: dict[str, Any], end: float | None = None) -> str:
    lines = [str(e.get("name", ""))]
    ts = float(e.get("ts", 0.0))
    lines.append(f"start {ts:.3f} us" + (f", duration {float(e['dur']):.3f} us" if "dur" in e else "")
                 + (f", until {end:.3f} us" if end is not None else ""))
    args = e.get("args") or {}
    if "start_after_launch" in args and "cycles" in args:   # an op on a pipe track (level 2)
        start = args["start_after_launch"]
        lines.append(f"cycles {start}-{start + args['cycles']} after the task's launch")
    for k, v in (e.get("args") or {}).items():
        lines.append(f"{k}: {json.dumps(v) if not isinstance(v, str) else v}")
    return html.escape("\n".join(lines))


def render_html(doc: dict[str, Any], title: str = "swimlane", idle: bool = False) -> str:
    """The HTML page of trace-event document `doc` (a dict with "traceEvents"); AI-core tracks
    without any event (idle cores) get a row only with `idle=True`."""
    events = doc.get("traceEvents", doc if isinstance(doc, list) else [])
    names: dict[tuple[int, int], str] = {}
    procs: dict[int, str] = {}
    order: dict[tuple[int, int], int] = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_sort_index":
            order[(e["pid"], e["tid"])] = e["args"]["sort_index"]
    timed = [e for e in events if e.get("ph") in ("X", "i", "b", "e", "C")]
    for e in timed:
        if e["ph"] != "C":
            names.setdefault((e["pid"], e.get("tid", 0)), f"{procs.get(e['pid'], e['pid'])} {e.get('tid', 0)}")
    counters = sorted({e["name"] for e in timed if e["ph"] == "C"})
    used = {(e["pid"], e.get("tid", 0)) for e in timed if e["ph"] != "C"}
    drop = set() if idle else {k for k in names if k[0] == _CORES_PID and k not in used}
    names = {k: v for k, v in names.items() if k not in drop}
    seen = Counter(names.values())   # a track name in several processes (the ranks of a merged trace)
    names = {k: f"{procs[k[0]]}: {v}" if seen[v] > 1 and k[0] in procs else v for k, v in names.items()}
    label_w = max([_LABEL] + [7 * len(v) + 10 for v in names.values()])   # 11px monospace: about 7px a letter
    hidden = len(drop)
    end = max([float(e.get("ts", 0)) + float(e.get("dur", 0)) for e in timed] or [1.0]) or 1.0
    keys = sorted(names, key=lambda k: (k[0], order.get(k, k[1]), k[1]))
    rows = {k: i for i, k in enumerate(keys)}
    nrows = len(keys) + len(counters)
    height = nrows * (_ROW + _GAP) + 30

    def x(ts: float) -> str:
        return f"{ts / end * _WIDTH:.2f}"

    def w(dur: float) -> str:
        return f"{max(dur / end * _WIDTH, 0.5):.2f}"

    def y(row: int) -> int:
        return 20 + row * (_ROW + _GAP)

    out: list[str] = []
    labels: list[str] = []
    for k, i in rows.items():
        labels.append(f'<text class="lab" x="4" y="{y(i) + _ROW - 5}">{html.escape(names[k])}</text>')
        out.append(f'<line class="grid" x1="0" x2="{_WIDTH}" y1="{y(i) + _ROW}" y2="{y(i) + _ROW}"/>')
    begins: dict[tuple, dict[str, Any]] = {}
    for e in timed:
        ph, key = e["ph"], (e["pid"], e.get("tid", 0))
        if ph == "X":
            cat = e.get("cat", "")
            fill = _FIXED.get(cat) or _color(str(e.get("name", "")))
            out.append(f'<rect class="s {html.escape(cat)}" x="{x(float(e["ts"]))}" y="{y(rows[key]) + 1}" '
                       f'width="{w(float(e.get("dur", 0)))}" height="{_ROW - 2}" fill="{fill}">'
                       f'<title>{_tip(e)}</title></rect>')
        elif ph == "i":
            out.append(f'<rect class="tick {html.escape(e.get("cat", ""))}" x="{x(float(e["ts"]))}" '
                       f'y="{y(rows[key])}" width="1" height="{_ROW}"><title>{_tip(e)}</title></rect>')
        elif ph == "b":
            begins[(key, e.get("name"), e.get("id"))] = e
        elif ph == "e":
            b = begins.pop((key, e.get("name"), e.get("id")), None)
            if b is not None:
                t0, t1 = float(b["ts"]), float(e["ts"])
                out.append(f'<rect class="s sched" x="{x(t0)}" y="{y(rows[key]) + 4}" width="{w(t1 - t0)}" '
                           f'height="{_ROW - 8}" fill="{_FIXED["sched"]}"><title>{_tip(b, t1)}</title></rect>')
    for ci, name in enumerate(counters):
        row = len(keys) + ci
        pts = sorted((float(e["ts"]), sum(float(v) for v in e.get("args", {}).values()))
                     for e in timed if e["ph"] == "C" and e["name"] == name)
        top = max([v for _, v in pts] or [1.0]) or 1.0
        path, last = [], 0.0
        for ts, v in pts:
            path.append(f"{x(ts)},{y(row) + _ROW - last / top * (_ROW - 2):.2f}")
            path.append(f"{x(ts)},{y(row) + _ROW - v / top * (_ROW - 2):.2f}")
            last = v
        labels.append(f'<text class="lab" x="4" y="{y(row) + _ROW - 5}">{html.escape(name)} (max {top:g})</text>')
        out.append(f'<polyline class="ctr" points="{" ".join(path)}"><title>{html.escape(name)}: max {top:g}'
                   f'</title></polyline>')
    axis = []
    for k in range(10):     # time axis (texts stay unscaled when zooming: the script moves them)
        ts = end * k / 10
        axis.append(f'<text class="axis" x="{x(ts)}" data-x="{x(ts)}" y="12">{ts:.2f} us</text>')
    meta = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    info = html.escape(", ".join(f"{k}: {_shown(v)}" for k, v in meta.items()))
    if hidden:
        info += f" ({hidden} idle core tracks not drawn: <code>--idle</code> draws them)"
    label_svg = (f'<svg id="labels" xmlns="http://www.w3.org/2000/svg" width="{label_w}" height="{height}">'
                 f'{"".join(labels)}</svg>')
    svg = (f'<svg id="lanes" xmlns="http://www.w3.org/2000/svg" width="{_WIDTH + 20}" height="{height}">'
           f'<g id="plot">{"".join(out)}</g>{"".join(axis)}</svg>')
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font: 13px sans-serif; margin: 8px; }}
#row {{ display: flex; }} #wrap {{ overflow-x: auto; border: 1px solid #ccc; flex: 1; }}
#plot * {{ vector-effect: non-scaling-stroke; }}
.lab {{ font: 11px monospace; }} .axis {{ font: 10px sans-serif; fill: #555; }}
.grid {{ stroke: #eee; }} .tick {{ fill: #000; opacity: 0.6; }}
.ctr {{ fill: none; stroke: #1f77b4; stroke-width: 1; }}
.s:hover {{ stroke: #000; stroke-width: 1; }}
</style></head><body>
<h3>{html.escape(title)}</h3><p>{info}</p>
<p>zoom <input id="zoom" type="range" min="1" max="40" value="1"> (hover a box for its details)</p>
<div id="row">{label_svg}<div id="wrap">{svg}</div></div>
<script>
const svg = document.getElementById('lanes'), base = svg.width.baseVal.value;
const slider = document.getElementById('zoom'), wrap = document.getElementById('wrap');
function setZoom(z) {{   // zoom 1 fits the whole run into the window's width
  const s = z * Math.min(1, Math.max(0.2, (wrap.clientWidth - 2) / base));
  svg.setAttribute('width', base * s);
  document.getElementById('plot').setAttribute('transform', 'scale(' + s + ',1)');
  for (const t of svg.querySelectorAll('text.axis')) t.setAttribute('x', Number(t.dataset.x) * s);
}}
slider.addEventListener('input', e => setZoom(Number(e.target.value)));
window.addEventListener('resize', () => setZoom(Number(slider.value)));
const m = location.hash.match(/zoom=([0-9]+)/);   // e.g. swimlane.html#zoom=8
if (m) slider.value = m[1];
setZoom(Number(slider.value));
</script>
</body></html>
"""


def main(argv: list[str] | None = None) -> int:
    """Command line entry point; returns the exit status (2: no trace found or unreadable)."""
    ap = argparse.ArgumentParser(prog="python -m pypto.tools.swimlane", description=__doc__.splitlines()[0])
    ap.add_argument("trace", help="swimlane.json, a dfx_outputs folder or a build folder")
    ap.add_argument("-o", "--output", help="HTML file to write (default: swimlane.html next to the trace)")
    ap.add_argument("--idle", action="store_true", help="also draw a row for each core that ran no task")
    ns = ap.parse_args(argv)
    try:
        trace = find_trace(ns.trace)
        doc = json.loads(trace.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(ns.output) if ns.output else trace.with_suffix(".html")
    meta = doc.get("otherData", {}) if isinstance(doc, dict) else {}
    title = f"{meta.get('program', trace.stem)} swimlane" if meta else trace.stem
    out.write_text(render_html(doc, title, idle=ns.idle), encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
