"""Before/Expected tests of ConvertToSSA, written in the DSL (Language Guide "SSA")."""

import pypto.language as pl
from pypto import ir
from pypto.passes.base import PassContext
from pypto.passes.convert_to_ssa import ConvertToSSA


def run(prog):
    return ConvertToSSA().run(prog, PassContext())


def test_straight_line_reassignment_matches_guide_ssa_form():
    @pl.program
    class Before:
        @pl.function
        def example(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            result: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
            result: pl.Tensor[[64], pl.FP32] = pl.add(result, 1.0)
            return result

    @pl.program
    class Expected:
        @pl.function
        def example(self, x: pl.Tensor[[64], pl.FP32]) -> pl.Tensor[[64], pl.FP32]:
            result_0: pl.Tensor[[64], pl.FP32] = pl.mul(x, 2.0)
            result_1: pl.Tensor[[64], pl.FP32] = pl.add(result_0, 1.0)
            return result_1

    assert not ir.structural_equal(Before, Expected)
    ir.assert_structural_equal(run(Before), Expected)
    ir.assert_structural_equal(run(Expected), Expected)


def test_loop_rebinding_becomes_loop_carried_value():
    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            acc = pl.load(x, [0, 0], [16, 16])
            for i in pl.range(1, 4):
                tmp = pl.load(x, [i * 16, 0], [16, 16])  # loop-local: never carried
                acc = pl.add(acc, tmp)
            y = pl.store(acc, [0, 0], y)
            return y

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            acc = pl.load(x, [0, 0], [16, 16])
            for i, (acc_it,) in pl.range(1, 4, init_values=(acc,)):
                tmp = pl.load(x, [i * 16, 0], [16, 16])
                acc_next = pl.add(acc_it, tmp)
                acc_out = pl.yield_(acc_next)
            y_1 = pl.store(acc_out, [0, 0], y)
            return y_1

    ir.assert_structural_equal(run(Before), Expected)


def test_if_assignment_becomes_if_result():
    @pl.program
    class Before:
        @pl.function
        def f(self, a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            r = pl.mul(a, 1.0)
            if n > 2:
                r = pl.add(r, 1.0)
            return r

    @pl.program
    class Expected:
        @pl.function
        def f(self, a: pl.Tensor[[64], pl.FP32], n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[64], pl.FP32]:
            r = pl.mul(a, 1.0)
            if n > 2:
                r1 = pl.add(r, 1.0)
                r2 = pl.yield_(r1)
            else:
                r2 = pl.yield_(r)
            return r2

    ir.assert_structural_equal(run(Before), Expected)


def test_a_reassigned_name_whose_value_does_not_flow_around_the_loop_is_not_carried():
    """`t` is assigned before the loop and re-assigned first thing in the body, and nothing after
    the loop reads it: each iteration's `t` is local (no iter arg), while `y` is carried."""
    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 16])
            y = pl.store(t, [0, 0], y)
            for i in pl.range(1, 4):
                t = pl.load(x, [i * 16, 0], [16, 16])
                y = pl.store(pl.add(t, 1.0), [i * 16, 0], y)
            return y

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 16])
            y_1 = pl.store(t, [0, 0], y)
            for i, (y_it,) in pl.range(1, 4, init_values=(y_1,)):
                t_1 = pl.load(x, [i * 16, 0], [16, 16])
                y_2 = pl.store(pl.add(t_1, 1.0), [i * 16, 0], y_it)
                y_out = pl.yield_(y_2)
            return y_out

    ir.assert_structural_equal(run(Before), Expected)


def test_a_reassigned_name_read_after_the_loop_or_before_its_update_is_carried():
    @pl.program
    class ReadAfter:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 16])
            for i in pl.range(1, 4):
                t = pl.load(x, [i * 16, 0], [16, 16])   # the last block is stored after the loop
            y = pl.store(t, [0, 0], y)
            return y

    @pl.program
    class ReadInOuterLoop:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32], y: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 16])
            for j in pl.range(2):
                y = pl.store(t, [j * 16, 0], y)          # reads the inner loop's last t next time round
                for i in pl.range(1, 4):
                    t = pl.load(x, [i * 16, 0], [16, 16])
            return y

    for prog in (ReadAfter, ReadInOuterLoop):
        inner = [s for s in _walk(run(prog).get_function("k").body) if isinstance(s, ir.ForStmt)][-1]
        assert [ia.name for ia in inner.iter_args] == ["t"], prog.name


def _walk(s):
    yield s
    for child in getattr(s, "stmts", ()):
        yield from _walk(child)
    body = getattr(s, "body", None)
    if body is not None:
        yield from _walk(body)


def test_a_tile_reused_by_name_in_a_later_region_inside_a_loop_compiles_and_runs():
    """The Python-style program of a user trial: `t` names a tile of the first pl.at region and
    again, fresh, in every iteration's region; it must not become a value leaving a region."""
    import torch

    @pl.program
    class Regions:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, 32], pl.FP32], y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [0, 0], [8, 32])
                y = pl.store(t, [0, 0], y)
            for i in pl.range(1, 4):
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(x, [i * 8, 0], [8, 32])
                    y = pl.store(pl.add(t, 1.0), [i * 8, 0], y)
            return y

    compiled = ir.compile(Regions, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    x, y = torch.randn(32, 32), torch.zeros(32, 32)
    compiled(x, y)
    want = x.clone()
    want[8:] += 1
    torch.testing.assert_close(y, want)


def test_a_tile_name_reused_after_a_loop_and_inside_ifs_is_not_carried():
    """Regions before, inside (also under an if) and after a loop each assign `t` before reading it:
    nothing reads a previous region's `t`, so no loop carries it and no if merges it."""
    import torch

    @pl.program
    class Reuse:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, 32], pl.FP32], n: pl.Scalar[pl.INDEX],
                 y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [0, 0], [8, 32])
                y = pl.store(t, [0, 0], y)
            for i in pl.range(1, 3):
                if i < n:
                    with pl.at(level=pl.Level.CORE_GROUP):
                        t = pl.load(x, [i * 8, 0], [8, 32])
                        y = pl.store(pl.add(t, 1.0), [i * 8, 0], y)
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [24, 0], [8, 32])
                y = pl.store(pl.mul(t, 2.0), [24, 0], y)
            return y

    compiled = ir.compile(Reuse, dump_passes=False, skip_ptoas=True,
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    x, y = torch.randn(32, 32), torch.zeros(32, 32)
    compiled(x, 2, y)
    want = torch.zeros(32, 32)
    want[:8], want[8:16], want[24:] = x[:8], x[8:16] + 1, 2 * x[24:]
    torch.testing.assert_close(y, want)
