"""The memory map as one self-contained HTML page: inline CSS, SVG and JavaScript, no network (SPEC §11).

Layout: a list of conflicts at the top, then a card per kernel with a lane (an SVG) per memory
space — address left to right, statements top to bottom, one `rect.tile` per tile value, one
`rect.overlap` (red) per conflict — and the kernel's lines of the dump beside the lanes. Hovering a
tile shows its details and marks its lines in the source. The page records, once its script ran,
`data-tiles` (boxes drawn) and `data-js-errors` (uncaught script errors) on `<body>`. A link to
`page.html#tile=<key>` (`TileBox.key`, e.g. `block_sum.1`) opens the page with that tile hovered.
"""

from __future__ import annotations

from html import escape

from .model import Conflict, KernelMap, Lane, TileBox

__all__ = ["render_html", "PALETTE", "CONFLICT_COLOR", "format_bytes", "axis_extent"]

# Box fills, by buffer id (no reds: red is kept for conflicts and full lanes).
PALETTE = ("#4e79a7", "#59a14f", "#f28e2b", "#76b7b2", "#edc948", "#b07aa1", "#9c755f", "#8cd17d")
CONFLICT_COLOR = "#d00000"

ROW_H = 18        # px per statement row
LANE_W = 300      # px of address axis
LEFT = 46         # px for row labels (dump line numbers)
TOP = 24          # px for the address axis


def format_bytes(n: int) -> str:
    """`n` bytes as text: `512 B`, `4 KiB`, `1.5 KiB`."""
    if n < 1024 or n % 256:
        return f"{n} B"
    k = n / 1024
    return f"{k:g} KiB"


def _tip(b: TileBox, km: KernelMap) -> str:
    r0, r1 = km.rows[b.first_row], km.rows[b.last_row]
    return (f"{', '.join(b.names)}\n{b.space.name} buffer {b.buffer}\n"
            f"pl.Tile[[{', '.join(b.shape)}], pl.{b.dtype}]\nmade by {b.op}" + (f" (line {b.line})" if b.line else "")
            + f"\naddress [{b.addr}, {b.end_addr})\nsize {b.size} B\n"
            f"live: statements {r0.number}-{r1.number} (lines {r0.line}-{r1.line})")


def axis_extent(high_water: int) -> int:
    """The address axis' end: 4 equal steps of whole KiB (32 B below 4 KiB) reaching `high_water`."""
    unit = 1024 if high_water >= 4096 else 32
    return 4 * unit * max(1, -(-high_water // (4 * unit)))


def _axis(extent: int) -> str:
    parts = []
    for i in range(5):
        a = extent * i // 4
        x = LEFT + LANE_W * i / 4
        anchor = "start" if i == 0 else "end" if i == 4 else "middle"
        parts.append(f'<line class="tick" x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{TOP}"/>'
                     f'<text class="axis" x="{x:.1f}" y="{TOP - 7}" text-anchor="{anchor}">{format_bytes(a)}</text>')
    return "".join(parts)


def _lane_svg(lane: Lane, km: KernelMap, kid: int) -> str:
    extent = axis_extent(lane.high_water)
    scale = LANE_W / extent
    height = TOP + ROW_H * len(km.rows) + 4
    width = LEFT + LANE_W + 8
    out = [f'<svg class="lane-svg" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{lane.space.name} memory map">', _axis(extent)]
    for i, r in enumerate(km.rows):
        y = TOP + i * ROW_H
        out.append(f'<rect class="row{" odd" if i % 2 else ""}" x="{LEFT}" y="{y}" width="{LANE_W}" height="{ROW_H}"/>'
                   f'<text class="rowlabel" x="{LEFT - 4}" y="{y + ROW_H - 5}" text-anchor="end">'
                   f'<title>statement {r.number}: {escape(r.label)}</title>{r.line or ""}</text>')
    if lane.capacity is not None and lane.capacity <= extent:
        x = LEFT + lane.capacity * scale
        out.append(f'<line class="capacity" x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{height - 4}">'
                   f'<title>capacity {lane.capacity} B</title></line>')
    in_conflict = {id(b) for c in lane.conflicts for b in (c.a, c.b)}
    for b in lane.boxes:
        x = LEFT + b.addr * scale
        w = max(b.size * scale, 2.0)
        y = TOP + b.first_row * ROW_H + 2
        h = (b.last_row - b.first_row + 1) * ROW_H - 4
        cls = "tile conflict" if id(b) in in_conflict else "tile"
        fill = PALETTE[b.buffer % len(PALETTE)]
        data = (f'data-key="{b.key}" data-kernel="{kid}" data-line="{b.line}" '
                f'data-first="{km.rows[b.first_row].line}" data-last="{km.rows[b.last_row].line}"')
        out.append(f'<g class="tilegroup"><rect class="{cls}" {data} x="{x:.1f}" y="{y}" width="{w:.1f}" '
                   f'height="{h}" fill="{fill}"><title>{escape(_tip(b, km))}</title></rect>')
        if w > 40:
            out.append(f'<text class="tilelabel" x="{x + 4:.1f}" y="{y + 12}">{escape(b.names[0][: int(w / 7)])}</text>')
        out.append("</g>")
    for n, c in enumerate(lane.conflicts):
        x = LEFT + c.lo * scale
        y = TOP + c.first_row * ROW_H + 2
        out.append(f'<rect class="overlap" id="overlap-{kid}-{lane.space.name}-{n}" x="{x:.1f}" y="{y}" '
                   f'width="{max((c.hi - c.lo) * scale, 2.0):.1f}" height="{(c.last_row - c.first_row + 1) * ROW_H - 4}" '
                   f'fill="{CONFLICT_COLOR}"><title>{escape(_conflict_text(c, km))}</title></rect>')
    out.append("</svg>")
    return "".join(out)


def _usage(lane: Lane) -> str:
    if lane.capacity is None:
        return f'<span class="usage">high-water {lane.high_water} B</span>'
    pct = 100.0 * lane.high_water / lane.capacity
    cls = "usage full" if lane.full else "usage"
    bar = min(pct, 100.0)
    return (f'<span class="{cls}">high-water {lane.high_water} B of {lane.capacity} B '
            f'({format_bytes(lane.capacity)}) = {pct:.1f} %</span>'
            f'<span class="bar"><span class="fill{" full" if lane.full else ""}" style="width:{bar:.1f}%"></span></span>')


def _conflict_text(c: Conflict, km: KernelMap) -> str:
    r0, r1 = km.rows[c.first_row], km.rows[c.last_row]
    def one(b: TileBox) -> str:
        return f"'{b.names[0]}' (buffer {b.buffer}, [{b.addr}, {b.end_addr}), line {b.line})"
    return (f"{km.name}, {c.a.space.name}: {one(c.a)} and {one(c.b)} share bytes [{c.lo}, {c.hi}) "
            f"while both are live (statements {r0.number}-{r1.number}, lines {r0.line}-{r1.line})")


def _source(km: KernelMap, lines: list[str], kid: int) -> str:
    out = [f'<pre class="source" id="source-{kid}">']
    for n in range(km.first_line, km.last_line + 1):
        out.append(f'<span class="ln" data-line="{n}"><b>{n:>4}</b> {escape(lines[n - 1])}</span>')
    out.append("</pre>")
    return "".join(out)


def _card(km: KernelMap, lines: list[str], kid: int) -> str:
    lanes = "".join(
        f'<figure class="lane" data-space="{lane.space.name}"><figcaption><span class="space">{lane.space.name}</span> '
        f'{_usage(lane)}</figcaption>{_lane_svg(lane, km, kid)}</figure>' for lane in km.lanes)
    n = len(km.conflicts)
    badge = f' <span class="badge bad">{n} conflict{"s" if n != 1 else ""}</span>' if n else ""
    return (f'<section class="kernel" id="kernel-{kid}" data-name="{escape(km.name)}"><h2>{escape(km.name)} '
            f'<small>{km.func_type}</small>{badge}</h2><div class="cardbody"><div class="lanes">{lanes}</div>'
            f'{_source(km, lines, kid)}</div></section>')


_CSS = """
body{font:14px system-ui,sans-serif;margin:16px;color:#222;background:#fafafa}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:0 0 8px} small{color:#666;font-weight:normal}
.meta{color:#555;margin:0 0 12px}
.conflicts{border:2px solid #d00000;background:#fff0f0;padding:8px 12px;margin-bottom:16px}
.conflicts h2{color:#d00000} .conflicts li{cursor:pointer;margin:2px 0}
.ok{border:1px solid #59a14f;background:#f0fff0;padding:8px 12px;margin-bottom:16px}
.kernel{background:#fff;border:1px solid #ccc;border-radius:6px;padding:12px;margin-bottom:16px}
.cardbody{display:flex;gap:16px;align-items:flex-start;flex-wrap:wrap}
.lanes{display:flex;gap:12px;flex-wrap:wrap}
.lane{margin:0} figcaption{font-size:12px;margin-bottom:4px;max-width:354px}
.space{font-weight:bold;font-size:14px}
.usage.full{color:#d00000;font-weight:bold}
.bar{display:block;height:6px;background:#e4e4e4;margin-top:3px;width:300px;margin-left:46px}
.bar .fill{display:block;height:6px;background:#4e79a7} .bar .fill.full{background:#d00000}
.badge.bad{background:#d00000;color:#fff;border-radius:8px;padding:1px 8px;font-size:12px}
svg text{font:11px ui-monospace,monospace;fill:#444} .tilelabel{fill:#fff;pointer-events:none}
.row{fill:#fff} .row.odd{fill:#f3f3f3} .tick{stroke:#888}
.capacity{stroke:#d00000;stroke-width:2;stroke-dasharray:4 3}
.tile{stroke:#333;stroke-width:1;cursor:pointer} .tile.conflict{stroke:#d00000;stroke-width:3}
.tile.hover{stroke:#000;stroke-width:3}
.overlap{stroke:#700;stroke-width:1;cursor:pointer}
.overlap.flash{stroke:#000;stroke-width:4}
.source{font:12px ui-monospace,monospace;background:#f6f6f6;border:1px solid #ddd;padding:6px;margin:0;
  overflow:auto;max-height:80vh;flex:1;min-width:420px}
.ln{display:block} .ln b{color:#999;font-weight:normal} .ln.live{background:#fff3c4} .ln.made{background:#ffd966}
#tip{position:fixed;pointer-events:none;background:#222;color:#fff;font:12px ui-monospace,monospace;
  white-space:pre;padding:6px 8px;border-radius:4px;display:none;z-index:10}
"""

_ERRORS_JS = """
window.__mmErrors=0;
window.addEventListener('error',function(){window.__mmErrors++;
  document.body&&document.body.setAttribute('data-js-errors',String(window.__mmErrors));});
"""

_JS = """
(function(){
  var tip=document.getElementById('tip');
  function mark(t,on){
    var src=document.getElementById('source-'+t.getAttribute('data-kernel'));
    var first=+t.getAttribute('data-first'),last=+t.getAttribute('data-last'),made=+t.getAttribute('data-line');
    src.querySelectorAll('.ln').forEach(function(l){
      var n=+l.getAttribute('data-line');
      l.classList.toggle('live',on&&n>=first&&n<=last);
      l.classList.toggle('made',on&&n===made);});
    t.classList.toggle('hover',on);
  }
  function show(t,x,y){
    tip.textContent=t.querySelector('title').textContent;tip.style.display='block';
    tip.style.left=(x+14)+'px';tip.style.top=(y+14)+'px';mark(t,true);
  }
  document.querySelectorAll('rect.tile').forEach(function(t){
    t.addEventListener('mouseenter',function(e){show(t,e.clientX,e.clientY);});
    t.addEventListener('mousemove',function(e){tip.style.left=(e.clientX+14)+'px';tip.style.top=(e.clientY+14)+'px';});
    t.addEventListener('mouseleave',function(){tip.style.display='none';mark(t,false);});
  });
  var m=/^#tile=(.+)$/.exec(location.hash);
  if(m){
    var key=decodeURIComponent(m[1]);
    var t=Array.prototype.find.call(document.querySelectorAll('rect.tile'),function(r){
      return r.getAttribute('data-key')===key;});
    if(t){t.scrollIntoView({block:'center'});var r=t.getBoundingClientRect();show(t,r.right,r.top);}
  }
  document.querySelectorAll('.conflicts li').forEach(function(li){
    li.addEventListener('click',function(){
      var r=document.getElementById(li.getAttribute('data-target'));
      r.scrollIntoView({block:'center'});r.classList.add('flash');
      setTimeout(function(){r.classList.remove('flash');},1500);});
  });
  document.body.setAttribute('data-tiles',String(document.querySelectorAll('rect.tile').length));
  document.body.setAttribute('data-js-errors',String(window.__mmErrors));
})();
"""


def render_html(kernels: list[KernelMap], source_text: str, title: str, meta: str) -> str:
    """The page (module docstring) for `kernels` of a dump whose text is `source_text`.

    `title`: the program name; `meta`: one line saying which dump and which backend's capacities.
    """
    lines = source_text.splitlines()
    items = []
    for kid, km in enumerate(kernels):
        for lane in km.lanes:
            for n, c in enumerate(lane.conflicts):
                items.append(f'<li class="conflict" data-target="overlap-{kid}-{lane.space.name}-{n}">'
                             f'{escape(_conflict_text(c, km))}</li>')
    if items:
        head = (f'<section class="conflicts" id="conflicts"><h2>{len(items)} conflict{"s" if len(items) != 1 else ""}: '
                f'different buffers live at the same time on the same bytes</h2><ul>{"".join(items)}</ul></section>')
    else:
        head = ('<section class="ok" id="conflicts">No conflicts: no two different buffers that are live at '
                'the same time share bytes.</section>')
    cards = "".join(_card(km, lines, kid) for kid, km in enumerate(kernels))
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Memory map: {escape(title)}</title>'
            f'<style>{_CSS}</style><script>{_ERRORS_JS}</script></head><body>'
            f'<h1>Memory map: {escape(title)}</h1><p class="meta">{escape(meta)}. Address left to right, '
            f'statements top to bottom (row labels: dump line numbers); hover a tile for details.</p>'
            f'{head}{cards}<div id="tip"></div><script>{_JS}</script></body></html>\n')
