"""Sanitizer mode (`RunConfig(sanitize=True)`, issue 6): each kind of finding is provoked and names
the kernel, the op and the user's source line."""

from __future__ import annotations

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.runtime import CompiledProgram, RunConfig
from pypto.runtime.sim import SanitizerError

SAN = RunConfig(sanitize=True)

HEADER = '''
import pypto.language as pl

@pl.program
class P:
'''

MAIN = '''
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        c1: pl.Tensor[[16, 32], pl.FP32] = self.k(a, c)
        return c1
'''


def vec(addr: int, mid: int) -> str:
    return f"pl.Tile[[16, 32], pl.FP32, pl.MemRef(pl.Mem.Vec, id={mid}, size=2048, addr={addr})]"


def lowered(body: str, name: str) -> tuple[CompiledProgram, str]:
    """A lowered program (addresses as written) whose kernel k(a, c) has `body`."""
    kernel = ("    @pl.function(type=pl.FunctionType.InCore)\n"
              "    def k(self, a: pl.Tensor[[32, 32], pl.FP32], c: pl.Out[pl.Tensor[[16, 32], pl.FP32]])"
              " -> pl.Tensor[[16, 32], pl.FP32]:\n"
              + "".join(f"        {line}\n" for line in body.strip().splitlines()))
    text = HEADER + kernel + MAIN
    return CompiledProgram(pl.parse(text, filename=name), "", None), text


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def run_findings(cp: CompiledProgram, *args):
    with pytest.raises(SanitizerError) as e:
        cp(*args, config=SAN)
    assert e.value.findings == cp.last_run.findings
    return e.value


def test_uninitialised_on_chip_read(tmp_path) -> None:
    cp, text = lowered(f"""
t: {vec(0, 0)} = pl.tile.load(a, [0, 0], [16, 32])
s: {vec(2048, 1)} = pl.tile.create([16, 32], dtype=pl.FP32, target_memory=pl.Mem.Vec)
u: {vec(4096, 2)} = pl.tile.add(t, s)
c1: pl.Tensor[[16, 32], pl.FP32] = pl.tile.store(u, [0, 0], c)
return c1
""", "uninit.py")
    a, c = torch.randn(32, 32), torch.zeros(16, 32)
    cp(a, c)   # without the sanitizer it runs on whatever the arena holds
    c.zero_()
    err = run_findings(cp, a, c)
    (f,) = err.findings
    assert f.kind == "uninitialized-read" and f.kernel == "k" and f.op == "tile.add" and f.task_id == 0
    assert f.span.filename == "uninit.py" and f.span.begin_line == line_of(text, "pl.tile.add")
    assert "'s'" in f.message and "Vec [2048, 4096)" in f.message
    text_out = str(err)
    assert "uninit.py:" in text_out and "[uninitialized-read]" in text_out and "pl.tile.add(t, s)" in text_out
    assert torch.equal(c, torch.zeros(16, 32))   # a failed run copies nothing back


def test_overlapping_live_buffers() -> None:
    # u is placed over t while t is still read afterwards: wrong numbers without the sanitizer
    cp, text = lowered(f"""
t: {vec(0, 0)} = pl.tile.load(a, [0, 0], [16, 32])
u: {vec(0, 1)} = pl.tile.adds(t, 1.0)
w: {vec(2048, 2)} = pl.tile.mul(t, u)
c1: pl.Tensor[[16, 32], pl.FP32] = pl.tile.store(w, [0, 0], c)
return c1
""", "overlap.py")
    a, c = torch.randn(32, 32), torch.zeros(16, 32)
    cp(a, c)
    t = a[:16]
    assert not torch.allclose(c, t * (t + 1))
    (f,) = run_findings(cp, a, torch.zeros(16, 32)).findings
    assert f.kind == "overlapping-live-buffers" and f.op == "tile.mul" and f.kernel == "k"
    assert f.span.begin_line == line_of(text, "pl.tile.mul")
    assert "'t'" in f.message and "'u'" in f.message and "tile.adds" in f.message
    assert f"overlap.py:{line_of(text, 'pl.tile.adds')}" in f.message


def test_ddr_access_out_of_bounds() -> None:
    cp, text = lowered(f"""
for i in pl.range(0, 3):
    t: {vec(0, 0)} = pl.tile.load(a, [i * 16, 0], [16, 32])
    c1: pl.Tensor[[16, 32], pl.FP32] = pl.tile.store(t, [0, 0], c)
return c
""", "oob.py")
    a, c = torch.randn(32, 32), torch.zeros(16, 32)
    (f,) = run_findings(cp, a, c).findings
    assert f.kind == "ddr-out-of-bounds" and f.op == "tile.load" and f.kernel == "k"
    assert f.span.begin_line == line_of(text, "pl.tile.load")
    assert "32:48" in f.message and "[32, 32]" in f.message


@pl.program
class TwoStage:
    @pl.function(type=pl.FunctionType.InCore)
    def produce(self, x: pl.Tensor[[16, 64], pl.FP32],
                y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])
        u = pl.mul(t, 3.0)
        y = pl.store(u, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def consume(self, x: pl.Tensor[[16, 64], pl.FP32],
                y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64])
        u = pl.add(t, 1.0)
        y = pl.store(u, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        tmp = pl.create_tensor([16, 64], dtype=pl.FP32)
        tmp = self.produce(x, tmp)
        y = self.consume(tmp, y)
        return y


def test_conflicting_tasks_nothing_orders(tmp_path) -> None:
    cp = ir.compile(TwoStage, output_dir=tmp_path, dump_passes=False)
    x, y = torch.randn(16, 64), torch.zeros(16, 64)
    cp(x, y, config=SAN)                        # region tracking orders them: nothing to report
    assert torch.equal(y, 3 * x + 1) and cp.last_run.findings == []
    with pytest.raises(SanitizerError) as e:
        cp(x, torch.zeros(16, 64), config=RunConfig(sanitize=True, auto_deps=False))
    (f,) = e.value.findings
    assert f.kind == "unordered-conflict" and f.kernel == "consume" and f.task_id == 1
    assert f.op == "tile.load" and f.span.filename == __file__
    assert "task 1 ('consume'" in f.message and "reads 'x' [0:16, 0:64]" in f.message
    assert "task 0 ('produce'" in f.message and "writes 'y' [0:16, 0:64] with tile.store" in f.message
    assert "(RAW)" in f.message


def test_correct_programs_are_clean_and_give_the_same_numbers(tmp_path) -> None:
    @pl.program
    class BlockSum:
        @pl.function(type=pl.FunctionType.InCore)
        def block_sum(self, x: pl.Tensor[[64, 32], pl.FP32],
                      y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            acc0 = pl.load(x, [0, 0], [16, 32])
            for i, (acc,) in pl.range(1, 4, init_values=(acc0,)):
                blk = pl.load(x, [i * 16, 0], [16, 32])
                nxt = pl.add(acc, blk)
                total = pl.yield_(nxt)
            y = pl.store(total, [0, 0], y)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 32], pl.FP32],
                 y: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            y = self.block_sum(x, y)
            return y

    cp = ir.compile(BlockSum, output_dir=tmp_path, dump_passes=False)
    x = torch.randn(64, 32)
    y1, y2 = torch.zeros(16, 32), torch.zeros(16, 32)
    cp(x, y1)
    cp(x, y2, config=SAN)
    assert torch.equal(y1, y2) and cp.last_run.findings == [] and cp.last_run.sanitize
    torch.testing.assert_close(y2, x.view(4, 16, 32).sum(0))
