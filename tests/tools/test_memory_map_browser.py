"""The memory map page in a real headless browser (Debian's chromium; `.ci/run` installs it).

Skipped only where no chromium-like browser is on PATH. The page must load without any console
message (it logs nothing by design, so any message is an error), run its script (`data-js-errors`
and `data-tiles` on <body>), draw a box per tile and label its lanes; a screenshot must show the
box colours, and the red of a conflict exactly when one was planted.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from memory_map_cases import compile_block_sum, plant_blk_at

from pypto.tools.memory_map import memory_map
from pypto.tools.memory_map.page import CONFLICT_COLOR, PALETTE

BROWSER = next((b for b in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
                if shutil.which(b)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no headless browser (chromium) on PATH")


def _browse(page: Path, tmp: Path, *mode: str, url_suffix: str = "") -> tuple[str, list[str]]:
    """Run the browser on `page` with `mode` flags; (stdout, the console messages it logged)."""
    profile = tmp / f"profile-{len(list(tmp.glob('profile-*')))}"
    r = subprocess.run(
        [BROWSER, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={profile}",
         "--enable-logging=stderr", "--v=0", *mode, page.resolve().as_uri() + url_suffix],
        capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, [line for line in r.stderr.splitlines() if ":CONSOLE" in line]


def _dom(page: Path, tmp: Path) -> str:
    dom, console = _browse(page, tmp, "--dump-dom")
    assert console == [], console
    return dom


def _screenshot(page: Path, tmp: Path) -> np.ndarray:
    import matplotlib.image as mpimg

    png = tmp / (page.stem + ".png")
    _, console = _browse(page, tmp, f"--screenshot={png}", "--window-size=1280,900", "--hide-scrollbars")
    assert console == [], console
    return mpimg.imread(png)[..., :3]


def _count(img: np.ndarray, color: str) -> int:
    rgb = np.array([int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return int((np.abs(img - rgb).max(axis=-1) < 0.02).sum())


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("mm_browser")
    build = compile_block_sum(tmp / "build")
    out = {"build": build}
    for name, src in (("clean", build), ("planted", plant_blk_at(build, tmp / "passes_dump", 2048))):
        out[name] = tmp / f"{name}.html"
        out[name].write_text(memory_map(src).html(), encoding="utf-8")
    return out


def test_harness_sees_console_errors(tmp_path: Path) -> None:
    """The check below can fail: a page whose script throws is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><script>undefinedFunction();</script></body></html>")
    _, console = _browse(bad, tmp_path, "--dump-dom")
    assert any("Uncaught ReferenceError: undefinedFunction is not defined" in line for line in console)


def test_page_loads_and_draws_a_box_per_tile(pages: dict[str, Path], tmp_path: Path) -> None:
    dom = _dom(pages["clean"], tmp_path)
    body = re.search(r"<body([^>]*)>", dom).group(1)
    assert 'data-js-errors="0"' in body and 'data-tiles="3"' in body   # the script ran to its end
    assert len(re.findall(r'<rect class="tile"', dom)) == 3
    assert re.search(r'<figure class="lane" data-space="Vec"><figcaption><span class="space">Vec</span>', dom)
    assert '<h2>block_sum <small>InCore</small></h2>' in dom and "No conflicts" in dom


def test_planted_overlap_is_red_and_listed_in_the_browser(pages: dict[str, Path], tmp_path: Path) -> None:
    dom = _dom(pages["planted"], tmp_path)
    assert 'data-js-errors="0"' in dom and 'data-tiles="3"' in dom
    assert len(re.findall(r'<li class="conflict"', dom)) == 2 and "2 conflicts:" in dom
    assert len(re.findall(r'<rect class="overlap"', dom)) == 2


def test_screenshot_shows_boxes_and_red_only_for_conflicts(pages: dict[str, Path], tmp_path: Path) -> None:
    clean, planted = _screenshot(pages["clean"], tmp_path), _screenshot(pages["planted"], tmp_path)
    # buffer 0 (the carried sum, nxt) and buffer 1 (blk) in their colours
    assert _count(clean, PALETTE[0]) > 1000 and _count(clean, PALETTE[1]) > 1000
    assert _count(clean, CONFLICT_COLOR) == 0
    assert _count(planted, CONFLICT_COLOR) > 1000


def test_a_tile_link_opens_the_page_with_the_tile_hovered(pages: dict[str, Path], tmp_path: Path) -> None:
    """`#tile=<key>` runs the hover code: the tip shows the tile's details and its lines are marked."""
    blk = next(b for lane in memory_map(pages["build"]).kernels[0].lanes for b in lane.boxes if b.names[0] == "blk")
    link = pages["planted"].with_name("linked.html")
    shutil.copy(pages["planted"], link)
    dom, console = _browse(link, tmp_path, "--dump-dom", url_suffix=f"#tile={blk.key}")
    assert console == [], console
    tip = re.search(r'<div id="tip"[^>]*style="([^"]*)"[^>]*>([^<]*)</div>', dom)
    assert "display: block" in tip.group(1)
    assert tip.group(2).splitlines()[:2] == ["blk", "Vec buffer 1"] and "address [2048, 6144)" in tip.group(2)
    made = re.findall(r'<span class="ln live made" data-line="(\d+)">', dom)
    live = re.findall(r'<span class="ln live" data-line="(\d+)">', dom)
    assert made == [str(blk.line)] and live == [str(blk.line + 1)]   # made at its load, last read by the add
    assert re.search(r'<rect class="tile conflict hover" data-key="' + re.escape(blk.key), dom)
