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


@pl.program
class RowsAt:
    @pl.function(type=pl.FunctionType.InCore)
    def rows(self, x: pl.Tensor[[48, 64], pl.FP32], r: pl.Scalar[pl.INDEX], s: pl.Scalar[pl.FP32],
             y: pl.Out[pl.Tensor[[48, 64], pl.FP32]], n: pl.Scalar[pl.INDEX], m: pl.Scalar[pl.INDEX],
             q: pl.Scalar[pl.INDEX]) -> pl.Tensor[[48, 64], pl.FP32]:
        t = pl.load(x, [r, 0], [16, 64])     # r = 48 in the last task: rows 48:64 of 48
        y = pl.store(pl.mul(t, s), [r, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[48, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[48, 64], pl.FP32]]) -> pl.Tensor[[48, 64], pl.FP32]:
        for k in pl.range(4):
            y = self.rows(x, k * 16, 0.3333333333333333, y, 48, 2, 3)
        return y


def _source_line(needle: str) -> tuple[int, int]:
    """(line, column) of the first line of this file holding `needle`."""
    with open(__file__) as f:
        for i, line in enumerate(f, 1):
            if needle in line:
                return i, line.index(needle) + 1
    raise AssertionError(needle)


_OOB = ("load region [48:64, 0:64] is out of bounds of the tensor of shape [48, 64] "
        "(dimension 0: 48:64 not within 0:48)")


def test_a_task_fault_names_the_calling_line_and_the_scalar_arguments(tmp_path) -> None:
    """The same out-of-bounds load of the last task, with and without the sanitizer: both name the
    orchestration line that called the kernel and the call's scalar arguments by parameter name
    (at most four, each repr cut to 16 characters; the tensors are left out)."""
    from pypto.core.errors import RuntimeSimError

    cp = ir.compile(RowsAt, output_dir=tmp_path, dump_passes=False)
    load, col = _source_line("pl.load(x, [r, 0], [16, 64])")
    call, _ = _source_line("y = self.rows(x, k * 16, 0.3333333333333333, y, 48, 2, 3)")
    called = f"called at test_rt_sanitizer.py:{call} with r=48, s=0.33333333333..., n=48, m=2, ..."
    x = torch.randn(48, 64)
    with pytest.raises(RuntimeSimError) as e:
        cp(x, torch.zeros(48, 64))
    assert type(e.value) is RuntimeSimError
    assert str(e.value).splitlines()[0] == (
        f"{__file__}:{load}:{col}: error: task 3 (kernel 'rows' on AIV3, {called}): "
        f"tile.load failed in kernel 'rows': {_OOB}")
    err = run_findings(cp, x, torch.zeros(48, 64))
    (f,) = err.findings
    assert (f.kind, f.task_id, f.called) == ("ddr-out-of-bounds", 3, called)
    assert str(err).splitlines()[:2] == [
        "sanitizer found 1 problem:",
        f"{__file__}:{load}:{col}: sanitizer: [ddr-out-of-bounds] (kernel 'rows', tile.load, "
        f"task 3, {called}) {_OOB}"]


def test_call_site_forms(tmp_path) -> None:
    """`Task.call_site` (the text both name): the line alone for a kernel of tensors, the scalars
    alone when the line is unknown, bools and floats as Python writes them, long reprs cut."""
    from dataclasses import replace

    cp = ir.compile(TwoStage, output_dir=tmp_path, dump_passes=False)
    cp(torch.randn(16, 64), torch.zeros(16, 64))
    t = cp.last_run.tasks[0]
    call, _ = _source_line("tmp = self.produce(x, tmp)")
    at = f"called at test_rt_sanitizer.py:{call}"
    assert t.kernel == "produce" and t.call_site() == at
    assert replace(t, span=None).call_site() == ""
    assert replace(t, span=None, args=(t.args[0], True)).call_site() == "called with y=True"
    assert replace(t, args=(7, -2.5)).call_site() == f"{at} with x=7, y=-2.5"
    assert replace(t, args=(t.args[0], 10 ** 20)).call_site() == f"{at} with y=1000000000000..."
