"""Explicit task dependencies (`deps=[...]`, SPEC §1) through the passes that rebuild calls or rename
variables: Before/Expected programs in the DSL, and the whole Default pipeline under ROUNDTRIP
verification."""

import torch

import pypto.language as pl
from pypto import ir
from pypto.passes.base import PassContext
from pypto.passes.convert_to_ssa import ConvertToSSA
from pypto.passes.flatten_call_expr import FlattenCallExpr
from pypto.passes.inline_functions import InlineFunctions
from pypto.passes.outline_incore_scopes import OutlineIncoreScopes

H = [16, 64]
S = [32, 64]


def run(p, prog):
    return p.run(prog, PassContext())


def test_convert_to_ssa_renames_deps_with_their_variables():
    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[H, pl.FP32], o: pl.InOut[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            o = pl.store(pl.add(pl.load(o, [0, 0], H), pl.load(a, [0, 0], H)), [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[H, pl.FP32], x: pl.InOut[pl.Tensor[H, pl.FP32]],
                 y: pl.InOut[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            x = self.k(a, x)
            y = self.k(a, y, deps=[x])
            for i in pl.range(2):
                x = self.k(a, x, deps=[x, y])
            with pl.at(level=pl.Level.CORE_GROUP, deps=[x]):
                y[:] = pl.add(a, 1.0)
            return y

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[H, pl.FP32], o: pl.InOut[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            o_1 = pl.store(pl.add(pl.load(o, [0, 0], H), pl.load(a, [0, 0], H)), [0, 0], o)
            return o_1

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[H, pl.FP32], x: pl.InOut[pl.Tensor[H, pl.FP32]],
                 y: pl.InOut[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            x_1 = self.k(a, x)
            y_1 = self.k(a, y, deps=[x_1])
            for i, (x_it,) in pl.range(2, init_values=(x_1,)):
                x_2 = self.k(a, x_it, deps=[x_it, y_1])
                x_out = pl.yield_(x_2)
            with pl.at(level=pl.Level.CORE_GROUP, deps=[x_out]):
                y_2 = pl.tensor.assemble(y_1, pl.add(a, 1.0), [0, 0])
            return y_2

    ir.assert_structural_equal(run(ConvertToSSA(), Before), Expected)


def test_inline_functions_puts_the_call_deps_on_every_task_of_the_spliced_body():
    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            t = pl.load(a, [0, 0], H)
            o = pl.store(t, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Inline)
        def twice(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]],
                  w: pl.Tensor[H, pl.FP32]) -> pl.Tensor[H, pl.FP32]:
            r = self.k(a, o, deps=[w])
            with pl.at(level=pl.Level.CORE_GROUP):
                r[:] = pl.add(r, 1.0)
            return r

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[S, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
            t0 = self.k(a[0:16], b[0:16])
            t1 = self.twice(a[0:16], b[16:32], a[0:16], deps=[t0])
            return b

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            t = pl.load(a, [0, 0], H)
            o = pl.store(t, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[S, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
            t0 = self.k(a[0:16], b[0:16])
            a_1 = a[0:16]  # arguments that are expressions are evaluated once, before the body
            o = b[16:32]
            w = a[0:16]
            r = self.k(a_1, o, deps=[w, t0])
            with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]):
                r[:] = pl.add(r, 1.0)
            t1 = r
            return b

    after = run(InlineFunctions(), Before)
    ir.assert_structural_equal(after, Expected)
    assert "self.k(a_1, o, deps=[w, t0])" in after.as_python()


def test_flatten_call_expr_names_a_view_in_deps():
    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            t = pl.load(a, [0, 0], H)
            o = pl.store(t, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[H, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, deps=[b[0:16]]):
                b[16:32] = pl.add(a, 1.0)
            t = self.k(a, b[0:16], deps=[b[16:32]])
            return b

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            t = pl.load(a, [0, 0], H)
            o = pl.store(t, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[H, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
            slice_0 = b[0:16]
            with pl.at(level=pl.Level.CORE_GROUP, deps=[slice_0]):
                add = pl.add(a, 1.0)
                b = pl.tensor.assemble(b, add, [16, 0])
            slice_1 = b[0:16]
            slice_2 = b[16:32]
            t = self.k(a, slice_1, deps=[slice_2])
            return b

    ir.assert_structural_equal(run(FlattenCallExpr(), Before), Expected)


def test_outlining_moves_region_deps_onto_the_call_and_exports_a_dependency():
    @pl.program
    class Before:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            t = pl.load(a, [0, 0], H)
            o = pl.store(t, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                c = pl.add(a, 1.0)  # used after the region only as a dependency
            with pl.at(level=pl.Level.CORE_GROUP, deps=[c]):
                o[:] = pl.mul(a, 2.0)
            return o

    @pl.program
    class Expected:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            t = pl.load(a, [0, 0], H)
            o = pl.store(t, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CORE_GROUP)
        def main_incore_0(self, a: pl.Tensor[H, pl.FP32], c_out: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            c = pl.add(a, 1.0)
            c_stored = pl.tensor.assemble(c_out, c, [0, 0])
            return c_stored

        @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CORE_GROUP)
        def main_incore_1(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            o = pl.tensor.assemble(o, pl.mul(a, 2.0), [0, 0])
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
            c_buf = pl.create_tensor(H, dtype=pl.FP32)
            c = self.main_incore_0(a, c_buf)
            o = self.main_incore_1(a, o, deps=[c])
            return o

    prog = run(FlattenCallExpr(), run(ConvertToSSA(), Before))
    expected = run(FlattenCallExpr(), run(ConvertToSSA(), Expected))
    ir.assert_structural_equal(run(OutlineIncoreScopes(), prog), expected)


@pl.program
class Stages:
    """Two producers of disjoint halves; consumers that may only start once a producer is done."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(a, [0, 0], H)
        o = pl.store(pl.mul(t, 2.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Inline)
    def scale_both(self, a: pl.Tensor[H, pl.FP32], x: pl.Out[pl.Tensor[H, pl.FP32]],
                   y: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        x = self.scale(a, x)
        y = self.scale(a, y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]],
             c: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        t0 = self.scale(a[0:16], b[0:16])
        with pl.at(level=pl.Level.CORE_GROUP, deps=[t0]):
            d = pl.add(a, 1.0)
        for i in pl.unroll(2):
            t0 = self.scale(a[16:32], b[16:32], deps=[t0, d])
        y = self.scale_both(a[0:16], c[0:16], c[16:32], deps=[b])
        return c


def test_default_pipeline_keeps_deps_under_roundtrip_verification(tmp_path):
    compiled = ir.compile(Stages, output_dir=tmp_path / "b",
                          verification_level=ir.VerificationLevel.ROUNDTRIP)
    text = compiled.program.as_python()
    main = text[text.index("def main("):]
    calls = [line.strip().split(" = ", 1)[-1] for line in main.splitlines() if "self." in line]
    assert calls == [
        "self.scale(slice, slice_1)",
        "self.main_incore_0(a, d_buf, deps=[t0])",
        "self.scale(slice_2, slice_3, deps=[t0, d])",
        "self.scale(slice_4, slice_5, deps=[t0_1, d])",   # the 2nd unrolled copy: the 1st copy's t0
        "self.scale(a_1, x, deps=[b])",                   # the inlined helper's two tasks
        "self.scale(a_1, y, deps=[b])",
    ]
    a = torch.randn(*S)
    b, c = torch.empty(*S), torch.empty(*S)
    compiled(a, b, c)
    torch.testing.assert_close(b, torch.cat([2 * a[:16], 2 * a[16:]]))
    torch.testing.assert_close(c, torch.cat([2 * a[:16], 2 * a[:16]]))
    tasks = compiled.last_run.tasks
    assert [t.kernel for t in tasks] == ["scale", "main_incore_0", "scale", "scale", "scale", "scale"]
    assert tasks[1].deps == {0: "explicit"}
    assert tasks[2].deps == {0: "explicit", 1: "explicit"}
    assert tasks[3].deps == {2: "WAW+explicit", 1: "explicit"}  # t0 is now task 2's result: a region conflict too
    assert tasks[4].deps == tasks[5].deps == {0: "explicit", 2: "explicit", 3: "explicit"}
