"""The memory map (SPEC §11): boxes, live ranges, conflicts, capacity, refusals, HTML and PNG."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from memory_map_cases import ALLOCATED, compile_block_sum, dump_name, plant_blk_at

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType
from pypto.tools.memory_map import MemoryMapError, main, memory_map
from pypto.tools.memory_map.page import CONFLICT_COLOR, PALETTE

VEC_910B = 184 * 1024


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return compile_block_sum(tmp_path_factory.mktemp("mm") / "build")


def _boxes(mm):
    (k,) = mm.kernels
    (lane,) = k.lanes
    return k, lane, {b.names[0]: b for b in lane.boxes}


def test_boxes_addresses_and_live_ranges_of_a_build(build: Path) -> None:
    mm = memory_map(build)
    assert mm.dump.path == build / "passes_dump" / ALLOCATED
    assert mm.dump.backend is BackendType.Ascend910B and str(build / "compiled_meta.json") in mm.dump.backend_source
    k, lane, boxes = _boxes(mm)
    assert (k.name, k.func_type, lane.space.name) == ("block_sum", "InCore", "Vec")
    # one box per tile value: the carried sum (init, iter arg and return var), the block, and
    # nxt, computed in place in the carried buffer
    assert sorted(b.names for b in lane.boxes) == [("acc0", "acc", "total"), ("blk",), ("nxt",)]
    got = {n: (b.buffer, b.addr, b.size, b.op, k.rows[b.first_row].label, k.rows[b.last_row].label)
           for n, b in boxes.items()}
    assert got == {
        "acc0": (0, 0, 4096, "tile.load", "acc0 = tile.load", "y_1 = tile.store"),
        "blk": (1, 4096, 4096, "tile.load", "blk = tile.load", "nxt = tile.add"),
        "nxt": (0, 0, 4096, "tile.add", "nxt = tile.add", "yield"),
    }
    assert (boxes["blk"].shape, boxes["blk"].dtype) == (("16", "64"), "FP32")
    text = (build / "passes_dump" / ALLOCATED).read_text().splitlines()
    assert text[boxes["blk"].line - 1].strip().startswith("blk: pl.Tile")
    assert (lane.capacity, lane.high_water, lane.full) == (VEC_910B, 8192, False)
    # the in-place result shares the carried buffer by design: not a conflict
    assert mm.conflicts == []
    # the kernel's dump lines: from its decorator to its return
    assert text[k.first_line - 1].strip() == "@pl.function(type=pl.FunctionType.InCore)"
    assert text[k.last_line - 1].strip() == "return y_1"


def test_passes_dump_folder_later_pass_and_backend_choice(build: Path) -> None:
    mm = memory_map(build / "passes_dump", "DeriveCallDirections")
    assert mm.dump.pass_name == "DeriveCallDirections"
    assert _boxes(mm)[1].high_water == 8192
    mm = memory_map(build / "passes_dump" / ALLOCATED, backend=BackendType.Ascend950)
    assert _boxes(mm)[1].capacity == 240 * 1024 and mm.dump.backend_source == "-b"
    mm = memory_map(build / "passes_dump" / ALLOCATED)   # a dump file: its build's meta
    assert mm.dump.backend is BackendType.Ascend910B


def test_dump_before_address_allocation_is_refused(build: Path, tmp_path: Path, capsys) -> None:
    dump = build / "passes_dump" / dump_name("MemoryReuse")
    with pytest.raises(MemoryMapError, match=r"a dump from before address allocation \(after MemoryReuse\): "
                       r"tile 'acc0' of kernel 'block_sum' has a buffer but no address yet \(addr=-1\)\. "
                       r"The memory map draws buffers at their addresses, which AllocateMemoryAddr assigns") as e:
        memory_map(build, "MemoryReuse")
    assert e.value.span.filename == str(dump)
    assert dump.read_text().splitlines()[e.value.span.begin_line - 1].strip().startswith("acc0: pl.Tile")
    with pytest.raises(MemoryMapError, match=r"tile 'acc0' of kernel 'block_sum' has no MemRef \(buffer\)"):
        memory_map(build, "LegalizeTileCast")
    out = tmp_path / "m.html"
    assert main([str(build), "-p", "InitMemRef", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{dump_name('InitMemRef')}:" in err and "a dump from before address allocation (after InitMemRef)" in err
    assert not out.exists()


@pl.jit
def tensor_add(a: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, a)
    return c


def test_tensor_level_dump_without_tiles_is_refused(tmp_path: Path) -> None:
    a = torch.randn(16, 64)
    ir.compile(tensor_add.specialize(a, torch.empty(16, 64)), output_dir=tmp_path / "b", skip_ptoas=True)
    with pytest.raises(MemoryMapError, match=r"no kernel of this dump \(after OutlineIncoreScopes\) has tiles, so "
                       r"there is no on-chip memory to draw: a tensor-level program has tiles only from "
                       r"ConvertTensorToTileOps on"):
        memory_map(tmp_path / "b", "OutlineIncoreScopes")
    # one [16, 64] FP32 tile: the sum is computed in place over the loaded `a`
    assert [k.lanes[0].high_water for k in memory_map(tmp_path / "b").kernels] == [16 * 64 * 4]


def test_inputs_that_are_not_dumps(build: Path, tmp_path: Path) -> None:
    with pytest.raises(MemoryMapError, match="no such file or folder"):
        memory_map(tmp_path / "nope")
    with pytest.raises(MemoryMapError, match="neither a pass dump file, a passes_dump/ folder nor a build folder"):
        memory_map(tmp_path)
    with pytest.raises(MemoryMapError, match=r"no dump after pass 'Nope' in .*; it has dumps after: InlineFunctions, "):
        memory_map(build, "Nope")
    with pytest.raises(MemoryMapError, match="-p MemoryReuse selects a dump inside a folder"):
        memory_map(build / "passes_dump" / ALLOCATED, "MemoryReuse")
    quiet = tmp_path / "quiet"
    ir.compile(pl.parse((build / "passes_dump" / "00_frontend.py").read_text()), output_dir=quiet,
               dump_passes=False, skip_ptoas=True)
    with pytest.raises(MemoryMapError, match="has no passes_dump/ .*dump_passes=False"):
        memory_map(quiet)
    dist = tmp_path / "dist"     # a distributed build's kernels are in its chip programs' builds
    (dist / "next_levels" / "chip").mkdir(parents=True)
    (dist / "distributed_meta.json").write_text("{}")
    with pytest.raises(MemoryMapError, match=r"is a distributed build: .*next_levels/<program>/ \(chip\); pass"):
        memory_map(dist)


def test_planted_overlap_is_a_listed_red_conflict(build: Path, tmp_path: Path) -> None:
    dump = plant_blk_at(build, tmp_path / "passes_dump", 2048)
    mm = memory_map(dump)
    _, lane, boxes = _boxes(mm)
    pairs = sorted((c.a.names[0], c.b.names[0], c.lo, c.hi) for c in lane.conflicts)
    # blk now covers [2048, 6144): it shares [2048, 4096) with the carried sum for its whole life
    # and with nxt at the add that reads blk and writes nxt
    assert pairs == [("acc0", "blk", 2048, 4096), ("blk", "nxt", 2048, 4096)]
    rows = {(c.a.names[0], c.b.names[0]): (c.first_row, c.last_row) for c in lane.conflicts}
    assert rows[("acc0", "blk")] == (boxes["blk"].first_row, boxes["blk"].last_row)
    assert rows[("blk", "nxt")] == (boxes["nxt"].first_row,) * 2
    page = mm.html()
    assert len(re.findall(r'<rect class="overlap"[^>]*fill="' + CONFLICT_COLOR, page)) == 2
    assert len(re.findall(r'<rect class="tile conflict"', page)) == 3
    listed = re.findall(r'<li class="conflict"[^>]*>([^<]*)</li>', page)
    assert len(listed) == 2 and all("share bytes [2048, 4096) while both are live" in t for t in listed)
    assert any("&#x27;acc0&#x27; (buffer 0, [0, 4096)" in t and "&#x27;blk&#x27; (buffer 1, [2048, 6144)" in t
               for t in listed)


def test_cli_writes_the_page_and_lists_conflicts(build: Path, tmp_path: Path) -> None:
    plant_blk_at(build, tmp_path / "passes_dump", 2048)
    out = tmp_path / "map.html"
    r = subprocess.run([sys.executable, "-m", "pypto.tools.memory_map", str(tmp_path / "passes_dump"), "-o", str(out)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"wrote {out} (1 kernel(s), 2 conflict(s))",
        "conflict: acc0 and blk share Vec bytes [2048, 4096)",
        "conflict: blk and nxt share Vec bytes [2048, 4096)",
    ]
    assert out.read_text() == memory_map(tmp_path / "passes_dump").html()
    r = subprocess.run([sys.executable, "-m", "pypto.tools.memory_map", str(tmp_path / "passes_dump"), "-b", "Nope"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and "invalid choice: 'Nope'" in r.stderr
    assert main([str(tmp_path / "passes_dump"), "-o", str(tmp_path / "no" / "such" / "map.html")]) == 2


@pytest.mark.parametrize("end, full", [(int(0.95 * VEC_910B), False), (int(0.95 * VEC_910B) + 1, True)])
def test_lane_is_red_from_95_percent(build: Path, tmp_path: Path, end: int, full: bool) -> None:
    mm = memory_map(plant_blk_at(build, tmp_path / "passes_dump", end - 4096))
    _, lane, _ = _boxes(mm)
    assert (lane.high_water, lane.full) == (end, full)
    page = mm.html()
    assert ('<span class="usage full">' in page) is full
    assert f"high-water {end} B of {VEC_910B} B (184 KiB) = {100 * end / VEC_910B:.1f} %" in page


def test_page_is_self_contained_with_details_on_hover(build: Path) -> None:
    mm = memory_map(build)
    page = mm.html()
    # no network: no external scripts, styles, images or fonts (the SVG namespace is only a name)
    assert not re.search(r"""(src|href)\s*=\s*["']|@import|url\(""", page)
    assert set(re.findall(r"https?://[^\s\"']+", page)) == {"http://www.w3.org/2000/svg"}
    assert len(re.findall(r'<rect class="tile"', page)) == 3
    (tip,) = re.findall(r'<rect class="tile" [^>]*><title>(blk[^<]*)</title>', page)
    assert tip.splitlines() == [
        "blk", "Vec buffer 1", "pl.Tile[[16, 64], pl.FP32]", f"made by tile.load (line {_boxes(mm)[2]['blk'].line})",
        "address [4096, 8192)", "size 4096 B", f"live: statements 5-6 (lines {_boxes(mm)[2]['blk'].line}-"
        f"{_boxes(mm)[2]['nxt'].line})"]
    assert "No conflicts" in page
    # the IR source beside the lanes
    assert "pl.tile.add(acc, blk)" in page and '<pre class="source" id="source-0">' in page


def _pixels(png: Path, color: str, tol: float = 0.02) -> int:
    import matplotlib.image as mpimg

    img = mpimg.imread(png)[..., :3]
    rgb = np.array([int(color[i:i + 2], 16) / 255 for i in (1, 3, 5)])
    return int((np.abs(img - rgb).max(axis=-1) < tol).sum())


def test_png_draws_boxes_and_red_conflicts(build: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    clean, planted = tmp_path / "clean.png", tmp_path / "planted.png"
    assert main([str(build), "-o", str(tmp_path / "c.html"), "--png", str(clean)]) == 0
    assert main([str(plant_blk_at(build, tmp_path / "passes_dump", 2048)), "-o", str(tmp_path / "p.html"),
                 "--png", str(planted)]) == 0
    assert _pixels(clean, PALETTE[0]) > 500 and _pixels(clean, PALETTE[1]) > 500   # buffers 0 and 1
    assert _pixels(clean, CONFLICT_COLOR) == 0
    assert _pixels(planted, CONFLICT_COLOR) > 500


def test_every_kernel_and_space_of_a_mixed_program(tmp_path: Path) -> None:
    from shared_programs import GROUPED_SRC

    ir.compile(pl.parse(GROUPED_SRC), output_dir=tmp_path / "b", skip_ptoas=True)
    mm = memory_map(tmp_path / "b")
    got = {k.name: [(lane.space.name, lane.high_water) for lane in k.lanes] for k in mm.kernels}
    usage = json.loads((tmp_path / "b" / "report" / "memory_usage.json").read_text())
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted((s, u["peak"]) for s, u in usage[k].items()) for k in got}
    assert set(got) == {"mm_aic", "exp_aiv"} and [s for s, _ in got["mm_aic"]] == ["Mat", "Left", "Right", "Acc"]
