"""Programs and dumps shared by the memory map tests (imported by name: tests/tools is on sys.path)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pypto.language as pl
from pypto import ir

# One carried sum (acc0 -> acc -> total, with nxt computed in place in the carried buffer) and a
# block loaded per iteration: after AllocateMemoryAddr, buffer 0 at [0, 4096), `blk` (buffer 1) at
# [4096, 8192) in Vec.
BLOCK_SUM_SRC = '''
import pypto.language as pl

@pl.program
class BlockSum:
    @pl.function(type=pl.FunctionType.InCore)
    def block_sum(self, x: pl.Tensor[[128, 64], pl.FP32],
                  y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        acc0: pl.Tile[[16, 64], pl.FP32] = pl.load(x, [0, 0], [16, 64])
        for i, (acc,) in pl.range(1, 8, init_values=(acc0,)):
            blk: pl.Tile[[16, 64], pl.FP32] = pl.load(x, [i * 16, 0], [16, 64])
            nxt: pl.Tile[[16, 64], pl.FP32] = pl.add(acc, blk)
            total: pl.Tile[[16, 64], pl.FP32] = pl.yield_(nxt)
        y = pl.store(total, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[128, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        y = self.block_sum(x, y)
        return y
'''

ALLOCATED = "18_after_AllocateMemoryAddr.py"


def compile_block_sum(out: Path) -> Path:
    """Compile BLOCK_SUM_SRC into build folder `out` (pass dumps on); returns `out`."""
    ir.compile(pl.parse(BLOCK_SUM_SRC), output_dir=out, skip_ptoas=True)
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
