"""Host orchestration C++ around the blocks it opens (runtime scopes, loops, ifs), the AUTO scope of
an `auto_scope=True` entry, and the one spelling of a tensor dimension.

- A value computed inside a `PTO2_SCOPE(rt) { ... }` block (or a loop body, an if branch) and used
  after it is declared before the block and assigned inside (a `Tensor` is a copyable handle).
- Language Guide, `@pl.jit` family: "entry True + inline False is legal and just nests hand scopes
  inside compiler AUTO scopes" — in the C++ and in the simulator's runtime scopes.
- `tensor.dim` and the dynamic dimensions passed to a kernel both read `x.shape(axis)`.

Every generated file is compiled against the runtime API stub (`cpp_check.py`) and every program
also runs on the simulator against torch, so the declared-early values carry the right tensors.
"""

import re
from pathlib import Path

import pytest
import torch
from cpp_check import compiles_as_cpp

import pypto.language as pl
from pypto import ir

R, N = 16, 64


@pl.jit.incore
def add1(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    y = pl.store(pl.adds(pl.load(x, [0, 0], [R, N]), 1.0), [0, 0], y)
    return y


@pl.jit(auto_scope=False)
def chain(x: pl.Tensor, y: pl.Out[pl.Tensor]):
    with pl.scope():
        t = pl.create_tensor([R, N], dtype=pl.FP32)
        t = add1(x, t)
        u = pl.create_tensor([R, N], dtype=pl.FP32)
        u = add1(t, u, deps=[t])
    with pl.scope():
        with pl.at(level=pl.Level.CORE_GROUP, deps=[u]):
            y[:] = pl.muls(u, 10.0)
    return y


def _entry(text: str) -> list[str]:
    """The entry function's lines, stripped."""
    return [ln.strip() for ln in text.split('extern "C"', 1)[1].splitlines()]


def _scopes(text: str) -> list[tuple[int, str]]:
    """(nesting depth, comment) of every `PTO2_SCOPE(rt) {` line of the entry, depth 1 = its body."""
    body = text.split('extern "C"', 1)[1]
    return [((len(m.group(1)) // 2), m.group(2)) for m in re.finditer(r"\n( *)PTO2_SCOPE\(rt\) \{ *(.*)", body)]


def _orchestration(compiled, name: str) -> str:
    return (Path(compiled.output_dir) / "orchestration" / f"{name}.cpp").read_text()


def test_value_of_one_scope_used_in_the_next(tmp_path):
    x, y = torch.randn(R, N), torch.zeros(R, N)
    chain(x, y)
    torch.testing.assert_close(y, (x + 2.0) * 10.0)
    text = _orchestration(chain.compile(x, y), "chain")
    lines = _entry(text)
    first, second = [i for i, ln in enumerate(lines) if ln.startswith("PTO2_SCOPE(rt) {")]
    # u is declared in the function body before the first scope, assigned inside it, read in the second
    decl = lines.index("Tensor u;  // set in the block below, used after it")
    assert decl < first
    assert "u = u_1;" in lines[first:second]
    assert lines[second:].count("task2.add_input(u);") == 1 and "task2.add_dep(u);" in lines[second:]
    # values used only inside their scope stay there
    assert not any(ln.startswith(("Tensor t", "Tensor t_1")) for ln in lines[:first])
    compiles_as_cpp(text, tmp_path)


@pl.program
class ScopedFlow:
    """A loop's result, an if's result and a scalar, each computed inside one scope and used in a
    later one."""

    @pl.function(type=pl.FunctionType.InCore)
    def add1(self, x: pl.Tensor[[R, N], pl.FP32], y: pl.Out[pl.Tensor[[R, N], pl.FP32]]) -> pl.Tensor[[R, N], pl.FP32]:
        y = pl.store(pl.adds(pl.load(x, [0, 0], [R, N]), 1.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, y: pl.InOut[pl.Tensor[[R, N], pl.FP32]]) -> pl.Tensor[[R, N], pl.FP32]:
        y = pl.store(pl.adds(pl.load(y, [0, 0], [R, N]), 1.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
    def main(self, x: pl.Tensor[[R, N], pl.FP32], n: pl.Scalar[pl.INT64],
             y: pl.Out[pl.Tensor[[R, N], pl.FP32]]) -> pl.Tensor[[R, N], pl.FP32]:
        with pl.scope():
            acc = pl.create_tensor([R, N], dtype=pl.FP32)
            acc = self.add1(x, acc)
            for i in pl.range(n):            # carried value; the loop's result leaves the scope
                nxt = pl.create_tensor([R, N], dtype=pl.FP32)
                acc = self.add1(acc, nxt)
            k = n * 2                        # a scalar that leaves the scope
        with pl.scope():
            if n > 2:                        # the if's result leaves the scope
                r = self.inc(acc)
            else:
                r = acc
        with pl.scope():
            y = self.add1(r, y)
            for j in pl.range(k):
                y = self.inc(y)
        return y


@pytest.mark.parametrize("n", [1, 3])
def test_loop_if_and_scalar_results_used_after_their_scope(n, tmp_path):
    compiled = ir.compile(ScopedFlow, output_dir=tmp_path / "b", dump_passes=False)
    x, y = torch.randn(R, N), torch.zeros(R, N)
    compiled(x, n, y)
    r = x + 1.0 + n + (1.0 if n > 2 else 0.0)
    torch.testing.assert_close(y, r + 1.0 + 2 * n)
    text = _orchestration(compiled, "main")
    lines = _entry(text)
    scopes = [i for i, ln in enumerate(lines) if ln.startswith("PTO2_SCOPE(rt) {")]
    assert len(scopes) == 3
    early = [(i, ln.split("  //")[0]) for i, ln in enumerate(lines) if ln.endswith("// set in the block below, used after it")]
    # the loop's result and the scalar before scope 1, the if's result before scope 2: all in the body
    names = {decl: i for i, decl in early}
    assert set(names) == {"Tensor acc;", "int64_t k{};", "Tensor r;"}, early
    assert names["Tensor acc;"] < scopes[0] and names["int64_t k{};"] < scopes[0]
    assert scopes[0] < names["Tensor r;"] < scopes[1]
    assert "k = (n * 2);" in lines[scopes[0]:scopes[1]]
    assert any(re.fullmatch(r"acc = acc_\d+;", ln) for ln in lines[scopes[0]:scopes[1]])  # the loop's result
    # the if assigns its predeclared result in both branches and declares nothing of its own
    branch = lines[scopes[1]:scopes[2]]
    assert sum(ln.startswith("r = ") for ln in branch) == 2 and not any(ln.startswith(("Tensor r;", "Tensor r =")) for ln in branch)
    assert "for (int64_t j = 0; j < k; j += 1) {" in lines
    assert "Tensor nxt = tensor_create({16, 64}, DataType::FP32);" in lines  # used only in its loop
    compiles_as_cpp(text, tmp_path)


@pl.jit.inline(auto_scope=False)
def stage(x: pl.Tensor, t: pl.Out[pl.Tensor]):
    with pl.scope():                  # lands in the caller after inlining
        t = add1(x, t)
        u = pl.create_tensor([R, N], dtype=pl.FP32)
        u = add1(t, u)
    return u


@pl.jit(auto_scope=False)
def entry_manual(x: pl.Tensor, t: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor]):
    u = stage(x, t)
    with pl.scope():
        y = add1(u, y)
    return y


@pl.jit
def entry_auto(x: pl.Tensor, t: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor]):
    u = stage(x, t)
    y = add1(u, y)
    return y


def _run(kernel, tmp_path):
    x, t, y = torch.randn(R, N), torch.zeros(R, N), torch.zeros(R, N)
    kernel(x, t, y)
    torch.testing.assert_close(t, x + 1.0)
    torch.testing.assert_close(y, x + 3.0)
    compiled = kernel.compile(x, t, y)
    return compiled, _orchestration(compiled, kernel.__name__)


def test_inline_helper_hand_scope_result_used_by_the_caller(tmp_path):
    compiled, text = _run(entry_manual, tmp_path)
    assert _scopes(text) == [(1, ""), (1, "")]                 # only the two hand-placed scopes
    lines = _entry(text)
    assert lines.index("Tensor u;  // set in the block below, used after it") < lines.index("PTO2_SCOPE(rt) {")
    compiles_as_cpp(text, tmp_path)


def test_auto_scope_entry_nests_inline_hand_scopes_inside_its_auto_scope(tmp_path):
    """Language Guide: `auto_scope` True on the entry, False on an inline helper with `with
    pl.scope():` — the hand scope nests inside the compiler's AUTO scope."""
    compiled, text = _run(entry_auto, tmp_path)
    (auto, auto_note), (hand, hand_note) = _scopes(text)
    assert (auto, hand) == (1, 2) and auto_note.startswith("// AUTO runtime scope") and hand_note == ""
    lines = _entry(text)
    # the helper's result u leaves the hand scope: declared inside the AUTO scope, before the hand one
    at = [i for i, ln in enumerate(lines) if ln.startswith("PTO2_SCOPE(rt) {")]
    assert at[0] < lines.index("Tensor u;  // set in the block below, used after it") < at[1]
    # the helper's tasks are in the hand scope (depth 2), the caller's task after it in the AUTO scope
    for task in ("task0", "task1"):
        assert f"\n      submit_aiv_task(rt, FUNC_ADD1, {task});\n" in text
    assert "\n    submit_aiv_task(rt, FUNC_ADD1, task2);\n" in text
    compiles_as_cpp(text, tmp_path)
    # the simulator: the entry's scope holds the hand scope, which holds the helper's two tasks
    run = compiled.last_run
    root, = [s for s in run.scopes if s.parent is None]
    inner, = [s for s in run.scopes if s.parent is not None]
    assert root.name == "entry_auto" and inner.parent == root.scope_id and inner.name.startswith("scope@")
    assert [t.scope for t in run.tasks] == [(root.scope_id, inner.scope_id)] * 2 + [(root.scope_id,)]


def test_auto_scope_entry_with_its_own_scope_keeps_the_auto_scope(tmp_path):
    @pl.jit
    def own(x: pl.Tensor, t: pl.Out[pl.Tensor], y: pl.Out[pl.Tensor]):
        with pl.scope():
            t = add1(x, t)
        y = add1(t, y)
        y = add1(t, y)
        return y

    x, t, y = torch.randn(R, N), torch.zeros(R, N), torch.zeros(R, N)
    own(x, t, y)
    torch.testing.assert_close(y, x + 2.0)
    text = _orchestration(own.compile(x, t, y), "own")
    assert [d for d, _ in _scopes(text)] == [1, 2]
    compiles_as_cpp(text, tmp_path)


M = pl.dynamic("M")


@pl.program
class DynRows:
    @pl.function(type=pl.FunctionType.InCore)
    def square(self, a: pl.Tensor[[M, 32], pl.FP32],
               out: pl.Out[pl.Tensor[[M, 32], pl.FP32]]) -> pl.Tensor[[M, 32], pl.FP32]:
        for i in pl.range(0, M, 16):
            t = pl.load(a, [i, 0], [16, 32])
            out = pl.store(pl.mul(t, t), [i, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, 32], pl.FP32], out: pl.Out[pl.Tensor[[M, 32], pl.FP32]],
             o2: pl.Out[pl.Tensor[[M, 32], pl.FP32]]) -> pl.Tensor[[M, 32], pl.FP32]:
        out = self.square(a, out)
        rows = pl.tensor.dim(a, 0)
        for i in pl.range(0, rows, 16):
            with pl.at(level=pl.Level.CORE_GROUP):
                o2[i:i + 16] = pl.adds(a[i:i + 16], 1.0)
        return out


def test_tensor_dimension_has_one_spelling(tmp_path):
    compiled = ir.compile(DynRows, output_dir=tmp_path / "b", dump_passes=False)
    a, out, o2 = torch.randn(48, 32), torch.zeros(48, 32), torch.zeros(48, 32)
    compiled(a, out, o2)
    torch.testing.assert_close(out, a * a)
    torch.testing.assert_close(o2, a + 1.0)
    text = _orchestration(compiled, "main")
    assert "int64_t rows = a.shape(0);" in text                              # tensor.dim
    assert "task0.add_scalar(a.shape(0));" in text and "task1.add_scalar(a.shape(0));" in text  # dynamic dims
    assert "tensor_dim" not in text
    compiles_as_cpp(text, tmp_path)


@pl.program
class HelperScope:
    @pl.function(type=pl.FunctionType.InCore)
    def add1(self, x: pl.Tensor[[R, N], pl.FP32], y: pl.Out[pl.Tensor[[R, N], pl.FP32]]) -> pl.Tensor[[R, N], pl.FP32]:
        y = pl.store(pl.adds(pl.load(x, [0, 0], [R, N]), 1.0), [0, 0], y)
        return y

    @pl.function
    def twice(self, x: pl.Tensor[[R, N], pl.FP32], y: pl.Out[pl.Tensor[[R, N], pl.FP32]]) -> pl.Tensor[[R, N], pl.FP32]:
        with pl.scope():
            t = pl.create_tensor([R, N], dtype=pl.FP32)
            t = self.add1(x, t)
            y = self.add1(t, y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, N], pl.FP32], y: pl.Out[pl.Tensor[[R, N], pl.FP32]]) -> pl.Tensor[[R, N], pl.FP32]:
        y = self.twice(x, y)
        return y


def test_helper_returns_a_value_of_its_scope(tmp_path):
    compiled = ir.compile(HelperScope, output_dir=tmp_path / "b", dump_passes=False)
    x, y = torch.randn(R, N), torch.zeros(R, N)
    compiled(x, y)
    torch.testing.assert_close(y, x + 2.0)
    text = _orchestration(compiled, "main")
    helper = text.split("static Tensor twice(PTO2Runtime* rt, Tensor x, Tensor y) {\n", 1)[1].split("\n}\n", 1)[0]
    lines = [ln.strip() for ln in helper.splitlines()]
    assert lines[:2] == ["Tensor y_1;  // set in the block below, used after it", "PTO2_SCOPE(rt) {"]
    assert lines[-3:] == ["y_1 = y;", "}", "return y_1;"]
    compiles_as_cpp(text, tmp_path)


@pl.program
class WhileScope:
    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, y: pl.InOut[pl.Tensor[[R, N], pl.FP32]]) -> pl.Tensor[[R, N], pl.FP32]:
        y = pl.store(pl.adds(pl.load(y, [0, 0], [R, N]), 1.0), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration, auto_scope=False)
    def main(self, n: pl.Scalar[pl.INT64], y: pl.InOut[pl.Tensor[[R, N], pl.FP32]]) -> pl.Tensor[[R, N], pl.FP32]:
        with pl.scope():
            for (c, t) in pl.while_(init_values=(0, y)):
                pl.cond(c < n)
                t2 = self.inc(t)
                c2, t3 = pl.yield_(c + 1, t2)
        with pl.scope():
            for i in pl.range(c2):
                y = self.inc(t3)
        return y


def test_while_results_used_after_their_scope(tmp_path):
    compiled = ir.compile(WhileScope, output_dir=tmp_path / "b", dump_passes=False)
    y = torch.zeros(R, N)
    compiled(3, y)
    torch.testing.assert_close(y, torch.full((R, N), 6.0))
    lines = _entry(_orchestration(compiled, "main"))
    first = lines.index("PTO2_SCOPE(rt) {")
    assert lines[first - 2:first] == ["int64_t c2{};  // set in the block below, used after it",
                                      "Tensor t3;  // set in the block below, used after it"]
    second = lines.index("PTO2_SCOPE(rt) {", first + 1)
    assert lines[second - 3:second] == ["c2 = c;", "t3 = t;", "}"]
    compiles_as_cpp(_orchestration(compiled, "main"), tmp_path)
