"""Programs and dumps shared by the memory map tests (imported by name: tests/tools is on sys.path)."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

from pypto import ir

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"



def dump_name(pass_name: str) -> str:
    """The Default pipeline's dump file after `pass_name` (`NN_after_<pass>.py`, NN its position)."""
    from pypto.passes.pipeline import DEFAULT_PIPELINE

    return f"{[p.name for p in DEFAULT_PIPELINE].index(pass_name) + 1:02d}_after_{pass_name}.py"


ALLOCATED = dump_name("AllocateMemoryAddr")


def compile_block_sum(out: Path) -> Path:
    """Compile examples/loop_accumulate.py's BlockSum into build folder `out` (pass dumps on);
    returns `out`. Its kernel carries a sum (acc0 -> acc -> total, with nxt computed in place in
    the carried buffer) and loads a block per iteration: after AllocateMemoryAddr buffer 0 is at
    [0, 4096) and `blk` (buffer 1) at [4096, 8192) of Vec."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    from loop_accumulate import BlockSum

    ir.compile(BlockSum, output_dir=out, skip_ptoas=True)
    return out


def plant_blk_at(build: Path, dest: Path, addr: int) -> Path:
    """A copy of `build`'s passes_dump/ in `dest` whose allocated dump puts `blk` at `addr`
    (by editing its MemRef, as a buggy allocator would); returns the edited dump file."""
    shutil.copytree(build / "passes_dump", dest)
    dump = dest / ALLOCATED
    text = dump.read_text(encoding="utf-8")
    new, n = re.subn(r"(blk: pl\.Tile\[.*?id=1, size=4096, addr=)4096\)", rf"\g<1>{addr})", text)
    assert n == 1, "the dump no longer has blk at 4096: update the test case"
    dump.write_text(new, encoding="utf-8")
    return dump
