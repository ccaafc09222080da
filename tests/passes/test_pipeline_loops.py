"""PipelineLoops: `pl.pipeline(..., stage=N)` gives the body's buffers N rotating copies
(issue 14 item 2): the IR it makes, the numbers (against torch), the capacity fallback with hint
PH009, and the parser / printer of `stage=`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import CompileError, ParserSyntaxError, ParserTypeError
from pypto.passes.base import PassContext
from pypto.passes.pipeline_loops import PipelineLoops

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "roofline.py"
R, C = 16, 128
KIB8 = R * C * 4


def _vec(i):
    return pl.MemRef(pl.Mem.Vec, id=i, size=KIB8, addr=-1)


B0, B1, B2 = (_vec(i) for i in range(3))
T = [R, C]


@pl.program
class Before:
    """After MemoryReuse: the carried sum lives in B0 (and is computed in place there), the loaded
    block in B1, private to the loop body."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[5 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        acc0: pl.Tile[T, pl.FP32, B0] = pl.tile.load(x, [0, 0], [R, C], target_memory=pl.Mem.Vec)
        for j, (acc,) in pl.pipeline(1, 5, 1, stage=2, init_values=(acc0,)):
            t: pl.Tile[T, pl.FP32, B1] = pl.tile.load(x, [j * R, 0], [R, C], target_memory=pl.Mem.Vec)
            s: pl.Tile[T, pl.FP32, B0] = pl.tile.add(acc, t)
            out: pl.Tile[T, pl.FP32, B0] = pl.yield_(s)
        y = pl.tile.store(out, [0, 0], y)
        return y


@pl.program
class Expected:
    """Two copies of the body per trip, the second with its own block buffer B2 (a new id); the
    carried B0 is shared. 4 iterations: two trips of two, nothing left over."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[5 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        acc0: pl.Tile[T, pl.FP32, B0] = pl.tile.load(x, [0, 0], [R, C], target_memory=pl.Mem.Vec)
        for j, (acc,) in pl.range(1, 5, 2, init_values=(acc0,)):
            t: pl.Tile[T, pl.FP32, B1] = pl.tile.load(x, [j * R, 0], [R, C], target_memory=pl.Mem.Vec)
            s: pl.Tile[T, pl.FP32, B0] = pl.tile.add(acc, t)
            j_s1: pl.Scalar[pl.INDEX] = j + 1
            t_s1: pl.Tile[T, pl.FP32, B2] = pl.tile.load(x, [j_s1 * R, 0], [R, C], target_memory=pl.Mem.Vec)
            s_s1: pl.Tile[T, pl.FP32, B0] = pl.tile.add(s, t_s1)
            out: pl.Tile[T, pl.FP32, B0] = pl.yield_(s_s1)
        y = pl.tile.store(out, [0, 0], y)
        return y


@pl.program
class BeforeOdd:
    """`Before` over 5 iterations with three stages: one trip of three, then two left over."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[6 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        acc0: pl.Tile[T, pl.FP32, B0] = pl.tile.load(x, [0, 0], [R, C], target_memory=pl.Mem.Vec)
        for j, (acc,) in pl.pipeline(1, 6, 1, stage=3, init_values=(acc0,)):
            t: pl.Tile[T, pl.FP32, B1] = pl.tile.load(x, [j * R, 0], [R, C], target_memory=pl.Mem.Vec)
            s: pl.Tile[T, pl.FP32, B0] = pl.tile.add(acc, t)
            out: pl.Tile[T, pl.FP32, B0] = pl.yield_(s)
        y = pl.tile.store(out, [0, 0], y)
        return y


@pl.program
class ExpectedOdd:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[6 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        acc0: pl.Tile[T, pl.FP32, B0] = pl.tile.load(x, [0, 0], [R, C], target_memory=pl.Mem.Vec)
        for j, (acc,) in pl.range(1, 4, 3, init_values=(acc0,)):
            t: pl.Tile[T, pl.FP32, B1] = pl.tile.load(x, [j * R, 0], [R, C], target_memory=pl.Mem.Vec)
            s: pl.Tile[T, pl.FP32, B0] = pl.tile.add(acc, t)
            j_s1: pl.Scalar[pl.INDEX] = j + 1
            t_s1: pl.Tile[T, pl.FP32, B2] = pl.tile.load(x, [j_s1 * R, 0], [R, C], target_memory=pl.Mem.Vec)
            s_s1: pl.Tile[T, pl.FP32, B0] = pl.tile.add(s, t_s1)
            j_s2: pl.Scalar[pl.INDEX] = j + 2
            t_s2: pl.Tile[T, pl.FP32, _vec(3)] = pl.tile.load(x, [j_s2 * R, 0], [R, C], target_memory=pl.Mem.Vec)
            s_s2: pl.Tile[T, pl.FP32, B0] = pl.tile.add(s_s1, t_s2)
            out_main: pl.Tile[T, pl.FP32, B0] = pl.yield_(s_s2)
        for j_r, (acc_r,) in pl.range(4, 6, 1, init_values=(out_main,)):
            t_r: pl.Tile[T, pl.FP32, B1] = pl.tile.load(x, [j_r * R, 0], [R, C], target_memory=pl.Mem.Vec)
            s_r: pl.Tile[T, pl.FP32, B0] = pl.tile.add(acc_r, t_r)
            out: pl.Tile[T, pl.FP32, B0] = pl.yield_(s_r)
        y = pl.tile.store(out, [0, 0], y)
        return y


def test_the_body_is_copied_per_stage_with_its_private_buffers_renumbered():
    ir.assert_structural_equal(PipelineLoops().run(Before, PassContext()), Expected)


def test_iterations_left_over_run_in_a_plain_loop_on_the_first_buffer_set():
    ir.assert_structural_equal(PipelineLoops().run(BeforeOdd, PassContext()), ExpectedOdd)


def _sum_rows_program(n: int, stage: int, rows: int = R, cols: int = C):
    @pl.program
    class SumBlocks:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[n * rows, cols], pl.FP32],
              y: pl.Out[pl.Tensor[[rows, cols], pl.FP32]]) -> pl.Tensor[[rows, cols], pl.FP32]:
            acc0 = pl.load(x, [0, 0], [rows, cols])
            for j, (acc,) in pl.pipeline(1, n, stage=stage, init_values=(acc0,)):
                t = pl.load(x, [j * rows, 0], [rows, cols])
                e = pl.exp(t)
                out = pl.yield_(pl.add(acc, e))
            y = pl.store(out, [0, 0], y)
            return y

    return SumBlocks


@pytest.mark.parametrize("n, stage", [(5, 2), (6, 2), (7, 3), (2, 4), (1, 2)])
def test_numbers_are_those_of_the_loop_as_written(tmp_path, n, stage):
    x = torch.randn(n * R, C)
    ref = x[:R] + torch.exp(x[R:]).reshape(n - 1, R, C).sum(0) if n > 1 else x[:R].clone()
    got = {}
    for s in (1, stage):
        cp = ir.compile(_sum_rows_program(n, s), output_dir=tmp_path / f"s{s}", dump_passes=False, skip_ptoas=True)
        y = torch.zeros(R, C)
        cp(x, y)
        torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)
        got[s] = y
    assert torch.equal(got[1], got[stage])   # the same ops in the same order: bit-identical


def test_stages_that_do_not_fit_fall_back_with_a_hint(tmp_path):
    # [96, 128] FP32 blocks of 48 KiB: the carried sum and, per stage, the loaded block (its exp
    # is computed in place): three stages need 4 x 48 = 192 KiB of the 184 KiB Vec of Ascend910B,
    # two need 144 KiB
    prog = _sum_rows_program(5, 3, rows=96, cols=128)
    cp = ir.compile(prog, output_dir=tmp_path, skip_ptoas=True)
    log = (tmp_path / "report" / "perf_hints.log").read_text()
    assert ("in 'k': pl.pipeline(stage=3) needs 3 copies of the loop body's buffers, which do not fit on "
            "Ascend910B (Vec: 98304 B planned + 2 x 49152 B for the extra stages = 196608 B, over its 188416 B); "
            "using stage=2: use "
            "smaller tiles to keep 3 stages") in log
    (line,) = [ln for ln in log.splitlines() if ln.startswith("PH009 ")]
    assert "test_pipeline_loops.py:" in line
    dump = next((tmp_path / "passes_dump").glob("*_after_PipelineLoops.py")).read_text()
    assert "t_s1" in dump and "t_s2" not in dump          # two copies of the body, not three
    x = torch.randn(5 * 96, 128)
    y = torch.zeros(96, 128)
    cp(x, y)
    torch.testing.assert_close(y, x[:96] + torch.exp(x[96:]).reshape(4, 96, 128).sum(0), rtol=1e-5, atol=1e-5)



def test_the_hint_names_only_the_memory_spaces_that_overflow(tmp_path):
    # the roofline benchmark's tuned matmul with 64-deep L0 steps: its outer pipelined loop holds
    # two copies of the inner loop's 32 KiB Right tile, and a second stage of them (64 KiB more)
    # overflows Right's 64 KiB; its Left and Mat copies would fit and are not named
    spec = importlib.util.spec_from_file_location("roofline_bench", _BENCH)
    roofline = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(roofline)  # type: ignore[union-attr]
    ir.compile(roofline.tuned_matmul_program(1, 1, 1024, tk0=64), output_dir=tmp_path, dump_passes=False,
               skip_ptoas=True)
    (line,) = [ln for ln in (tmp_path / "report" / "perf_hints.log").read_text().splitlines()
               if ln.startswith("PH009 ")]
    assert line.endswith(
        "in 'mm_tuned': pl.pipeline(stage=2) needs 2 copies of the loop body's buffers, which do not fit on "
        "Ascend910B (Right: 65536 B planned + 65536 B for the extra stage = 131072 B, over its 65536 B); using "
        "no software pipelining (a plain loop): use smaller tiles to keep 2 stages")

def test_no_stage_fits_leaves_a_plain_loop(tmp_path):
    prog = _sum_rows_program(3, 2, rows=128, cols=128)    # 64 KiB blocks: 192 KiB for two stages
    cp = ir.compile(prog, output_dir=tmp_path, skip_ptoas=True)
    assert "using no software pipelining (a plain loop)" in (tmp_path / "report" / "perf_hints.log").read_text()
    dump = next((tmp_path / "passes_dump").glob("*_after_PipelineLoops.py")).read_text()
    assert "pl.range(1, 3, 1, init_values" in dump and "_s1" not in dump
    x = torch.randn(3 * 128, 128)
    y = torch.zeros(128, 128)
    cp(x, y)
    torch.testing.assert_close(y, x[:128] + torch.exp(x[128:256]) + torch.exp(x[256:]), rtol=1e-5, atol=1e-5)


def test_stage_is_parsed_printed_and_checked():
    prog = _sum_rows_program(4, 3)
    text = ir.python_print(prog)
    assert "pl.pipeline(1, 4, 1, stage=3, init_values=(acc0,))" in text
    ir.assert_structural_equal(ir.parse_program(text) if hasattr(ir, "parse_program") else pl.parse(text), prog)
    with pytest.raises(ParserTypeError, match="pl.pipeline's stage must be a constant integer >= 1"):
        _sum_rows_program(4, 0)


def test_a_pipelined_loop_needs_a_constant_step():
    @pl.program
    class DynStep:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[4 * R, C], pl.FP32], s: pl.Scalar[pl.INDEX],
              y: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]) -> pl.Tensor[[4 * R, C], pl.FP32]:
            for j, (yy,) in pl.pipeline(0, 4, s, stage=2, init_values=(y,)):
                t = pl.load(x, [j * R, 0], [R, C])
                y2 = pl.store(pl.exp(t), [j * R, 0], yy)
                out = pl.yield_(y2)
            return out

    with pytest.raises(CompileError, match="pl.pipeline needs a positive constant step"):
        ir.compile(DynStep, dump_passes=False, skip_ptoas=True)


@pl.program
class RunTimeBounds:
    """Bounds known at run time, a step of 2, three stages and an if in the body."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[8 * R, C], pl.FP32], lo: pl.Scalar[pl.INDEX], hi: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[8 * R, C], pl.FP32]]) -> pl.Tensor[[8 * R, C], pl.FP32]:
        for j, (yy,) in pl.pipeline(lo, hi, 2, stage=3, init_values=(y,)):
            t = pl.load(x, [j * R, 0], [R, C])
            if j < 3:
                u = pl.exp(t)
            else:
                u = pl.mul(t, t)
            y2 = pl.store(u, [j * R, 0], yy)
            out = pl.yield_(y2)
        return out


def test_run_time_bounds_split_into_groups_of_stages_and_the_rest(tmp_path):
    cp = ir.compile(RunTimeBounds, output_dir=tmp_path, skip_ptoas=True)
    dump = next((tmp_path / "passes_dump").glob("*_after_PipelineLoops.py")).read_text()
    heads = [ln.strip() for ln in dump.splitlines() if " in pl." in ln]
    main = "pl.max(lo + (((hi - lo) + 1) // 2 // 3) * 6, lo)"
    assert [h.replace("(((((hi - lo) + 1) // 2) // 3) * 6)", "(((hi - lo) + 1) // 2 // 3) * 6") for h in heads] == [
        f"for j, (yy,) in pl.range(lo, {main}, 6, init_values=(y,)):",
        f"for j_r, (yy_r,) in pl.range({main}, hi, 2, init_values=(out_main,)):"]
    for lo, hi in ((0, 8), (1, 8), (5, 2), (3, 3), (0, 7), (2, 5), (0, 13), (1, 14)):
        x = torch.randn(8 * R, C) if hi <= 8 else torch.randn(8 * R, C)
        hi = min(hi, 8)
        y = torch.zeros(8 * R, C)
        cp(x, lo, hi, y)
        ref = torch.zeros(8 * R, C)
        for j in range(lo, hi, 2):
            t = x[j * R:(j + 1) * R]
            ref[j * R:(j + 1) * R] = torch.exp(t) if j < 3 else t * t
        torch.testing.assert_close(y, ref, rtol=1e-5, atol=1e-5)


def test_a_matmul_k_loop_gives_bit_identical_results(tmp_path):
    """The cube path: L1 loads, L0 moves and matmul_acc into the carried accumulator, two stages."""
    tm = tk = tn = 64
    k = 512

    def prog(stage):
        @pl.program
        class MM:
            @pl.function(type=pl.FunctionType.InCore)
            def mm(self, a: pl.Tensor[[tm, k], pl.FP16], b: pl.Tensor[[k, tn], pl.FP16],
                   c: pl.Out[pl.Tensor[[tm, tn], pl.FP32]]) -> pl.Tensor[[tm, tn], pl.FP32]:
                a0 = pl.load(a, [0, 0], [tm, tk], target_memory=pl.Mem.Mat)
                b0 = pl.load(b, [0, 0], [tk, tn], target_memory=pl.Mem.Mat)
                acc0 = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left), pl.move(b0, target_memory=pl.Mem.Right))
                for kk, (acc,) in pl.pipeline(tk, k, tk, stage=stage, init_values=(acc0,)):
                    ak = pl.load(a, [0, kk], [tm, tk], target_memory=pl.Mem.Mat)
                    bk = pl.load(b, [kk, 0], [tk, tn], target_memory=pl.Mem.Mat)
                    nacc = pl.matmul_acc(acc, pl.move(ak, target_memory=pl.Mem.Left),
                                         pl.move(bk, target_memory=pl.Mem.Right))
                    out = pl.yield_(nacc)
                c = pl.store(out, [0, 0], c)
                return c

        return MM

    a, b = torch.randn(tm, k).half(), torch.randn(k, tn).half()
    got = {}
    for stage in (1, 2):
        cp = ir.compile(prog(stage), output_dir=tmp_path / f"s{stage}", skip_ptoas=True)
        c = torch.zeros(tm, tn)
        cp(a, b, c)
        torch.testing.assert_close(c, a.float() @ b.float(), rtol=1e-3, atol=1e-2)
        got[stage] = c
    dump = next((tmp_path / "s2" / "passes_dump").glob("*_after_PipelineLoops.py")).read_text()
    assert "ak_s1" in dump and "pl.Mem.Left" in dump
    assert torch.equal(got[1], got[2])


@pl.program
class OrchestrationPipeline:
    """A `pl.pipeline` loop in an Orchestration function: it submits tasks, no buffers to rotate."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [0, 0], [R, C])
        y = pl.store(pl.exp(t), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[4 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]) -> pl.Tensor[[4 * R, C], pl.FP32]:
        for i in pl.pipeline(0, 4 * R, R, stage=2):
            sy = pl.slice(y, [R, C], [i, 0])
            sy = self.k(pl.slice(x, [R, C], [i, 0]), sy)
        return y


def test_a_pipeline_with_nothing_to_rotate_says_so_and_runs_as_written(tmp_path, caplog):
    with caplog.at_level("WARNING", logger="pypto.diagnostics"):
        cp = ir.compile(OrchestrationPipeline, output_dir=tmp_path, skip_ptoas=True)
    (line,) = [ln for ln in (tmp_path / "report" / "perf_hints.log").read_text().splitlines()
               if ln.startswith("PH009 ")]
    src_line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                    if "for i in pl.pipeline(0, 4 * R, R, stage=2):" in text)
    assert f"test_pipeline_loops.py:{src_line}:" in line
    assert line.endswith(
        "in 'main': pl.pipeline(stage=2) has no buffers to rotate and runs as a plain loop: an Orchestration "
        "function's loop submits tasks and binds no on-chip buffers; put the pl.pipeline loop over blocks "
        "inside the InCore kernel")
    # the console's one summary line names the hint and its line
    (msg,) = [r.getMessage() for r in caplog.records if "performance hint(s)" in r.getMessage()]
    assert f"(PH009 at test_pipeline_loops.py:{src_line})" in msg
    x, y = torch.randn(4 * R, C), torch.zeros(4 * R, C)
    cp(x, y)
    torch.testing.assert_close(y, torch.exp(x), rtol=1e-6, atol=1e-6)


def test_stage_and_loop_keywords_are_checked_with_clear_messages():
    with pytest.raises(ParserTypeError, match="pl.pipeline's stage must be a constant integer >= 1"):
        @pl.program
        class StrStage:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[4 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]
                  ) -> pl.Tensor[[4 * R, C], pl.FP32]:
                for j, (yy,) in pl.pipeline(0, 4, 1, stage="2", init_values=(y,)):
                    y2 = pl.store(pl.exp(pl.load(x, [j * R, 0], [R, C])), [j * R, 0], yy)
                    out = pl.yield_(y2)
                return out
    with pytest.raises(ParserSyntaxError, match="unexpected keyword 'stages': did you mean 'stage'\\?"):
        @pl.program
        class Misspelt:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[4 * R, C], pl.FP32], y: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]
                  ) -> pl.Tensor[[4 * R, C], pl.FP32]:
                for j, (yy,) in pl.pipeline(0, 4, 1, stages=2, init_values=(y,)):
                    y2 = pl.store(pl.exp(pl.load(x, [j * R, 0], [R, C])), [j * R, 0], yy)
                    out = pl.yield_(y2)
                return out
