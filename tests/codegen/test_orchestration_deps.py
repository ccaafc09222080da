"""Host orchestration codegen of explicit task dependencies (`deps=[...]`, SPEC §1): `add_dep` on a
kernel's task argument list, `push_task_deps` / `pop_task_deps` around a call of another host
function (Group, nested orchestration). The text compiles against the runtime API stub."""

from cpp_check import compiles_as_cpp

import pypto.language as pl
from pypto import ir
from pypto.codegen import emit_orchestration

H = [16, 64]
S = [32, 64]
M = [16, 16]


@pl.program
class WithDeps:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        t = pl.load(a, [0, 0], H)
        o = pl.store(pl.mul(t, 2.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def inner(self, a: pl.Tensor[H, pl.FP32], o: pl.Out[pl.Tensor[H, pl.FP32]]) -> pl.Tensor[H, pl.FP32]:
        o = self.scale(a, o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[S, pl.FP32], b: pl.Out[pl.Tensor[S, pl.FP32]],
             c: pl.Out[pl.Tensor[S, pl.FP32]]) -> pl.Tensor[S, pl.FP32]:
        t0 = self.scale(a[0:16], b[0:16])
        t1 = self.scale(a[16:32], b[16:32], deps=[t0, a])
        r = self.inner(a[0:16], c[0:16], deps=[t1])
        with pl.at(level=pl.Level.CORE_GROUP, deps=[r]):
            c[16:32] = pl.exp(a[16:32])
        return c


def _lines(text: str, start: str) -> list[str]:
    body = text[text.index(start):]
    return [ln.strip() for ln in body.splitlines()]


def test_kernel_deps_are_add_dep_lines_and_helper_deps_bracket_the_call(tmp_path):
    compiled = ir.compile(WithDeps, output_dir=tmp_path / "b")
    text = (tmp_path / "b" / "orchestration" / "main.cpp").read_text()
    lines = _lines(text, 'extern "C"')
    task1 = lines.index(next(ln for ln in lines if ln.startswith("TaskArgs task1;")))
    assert lines[task1 + 1:task1 + 6] == [
        "task1.add_input(slice_2);", "task1.add_output(slice_3);", "task1.add_dep(t0);", "task1.add_dep(a);",
        "submit_aiv_task(rt, FUNC_SCALE, task1);"]
    push = next(i for i, ln in enumerate(lines) if ln.startswith("push_task_deps("))
    assert lines[push].startswith("push_task_deps(rt, {t1});")
    assert lines[push + 1].endswith("= inner(rt, slice_4, slice_5);") and lines[push + 2] == "pop_task_deps(rt);"
    region = next(ln for ln in lines if ln.startswith("TaskArgs task2;"))
    assert "main_incore_0" in region
    assert "task2.add_dep(r);" in lines
    assert text.count("add_dep(") == 3 and text.count("push_task_deps(") == 1  # the helper has none
    compiles_as_cpp(text, tmp_path)
    helper = emit_orchestration(compiled.program.get_function("inner"), compiled.program,
                                {"scale": 0, "main_incore_0": 1})
    assert "add_dep" not in helper and "push_task_deps" not in helper
