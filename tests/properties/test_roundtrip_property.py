"""Hypothesis property: generated programs over the language's constructs print → parse →
structurally equal (and print identically a second time). `PYPTO_ROUNDTRIP_EXAMPLES` (default
150) sets how many programs Hypothesis draws; `check_round_trip` is the property for one program."""

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto import ir

BIN = ["add", "sub", "mul", "maximum", "minimum", "div"]
UN = ["exp", "neg", "abs", "relu"]


class Gen:
    """Builds DSL source line by line from Hypothesis draws, tracking the names in scope."""

    def __init__(self, draw) -> None:  # type: ignore[no-untyped-def]
        self.draw = draw
        self.lines: list[str] = []
        self.tensors = ["a", "b"]
        self.scalars = ["n"]
        self.k = 0
        self.in_scope = False  # inside a pl.at: InCore regions do not nest

    def fresh(self, prefix: str = "v") -> str:
        self.k += 1
        return f"{prefix}{self.k}"

    def tensor(self) -> str:
        return self.draw(st.sampled_from(self.tensors))

    def tensor_expr(self, depth: int = 0) -> str:
        kind = self.draw(st.integers(0, 5 if depth < 2 else 1))
        if kind == 5:  # a matmul, its operands maybe computed by vector ops (routed through Mat)
            return f"pl.matmul({self.tensor_expr(depth + 1)}, {self.tensor_expr(depth + 1)})"
        if kind == 0:
            return self.tensor()
        if kind == 1:
            return f"pl.{self.draw(st.sampled_from(BIN))}({self.tensor()}, {self.tensor()})"
        if kind == 2:
            return f"pl.{self.draw(st.sampled_from(UN))}({self.tensor_expr(depth + 1)})"
        if kind == 3:
            c = self.draw(st.sampled_from(["2.0", "0.5", "-1.0", "3"]))
            return f"pl.{self.draw(st.sampled_from(['add', 'mul', 'sub']))}({self.tensor_expr(depth + 1)}, {c})"
        op = self.draw(st.sampled_from(["+", "-", "*"]))
        return f"({self.tensor_expr(depth + 1)} {op} {self.tensor()})"

    def scalar_expr(self) -> str:
        s = self.draw(st.sampled_from(self.scalars))
        op = self.draw(st.sampled_from(["+", "-", "*", "//", "%"]))
        return f"{s} {op} {self.draw(st.integers(1, 5))}"

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)

    def block(self, depth: int, budget: int) -> None:
        for _ in range(self.draw(st.integers(1, 3))):
            self.stmt(depth, budget)

    def stmt(self, depth: int, budget: int) -> None:
        kind = self.draw(st.integers(0, (5 if self.in_scope else 6) if budget > 0 else 2))
        annotate = self.draw(st.booleans())
        ann = ": pl.Tensor[[16, 16], pl.FP32]" if annotate else ""
        if kind in (0, 1):  # new tensor, or rebinding an existing one (non-SSA)
            # rebinding a loop-carried name (acc*) inside a nested loop would make it loop-local
            plain = [t for t in self.tensors if not t.startswith("acc")]
            name = self.fresh() if kind == 0 or len(plain) < 3 else self.draw(st.sampled_from(plain))
            self.emit(depth, f"{name}{ann} = {self.tensor_expr()}")
            if name not in self.tensors:
                self.tensors.append(name)
        elif kind == 2:
            name = self.fresh("s")
            self.emit(depth, f"{name} = {self.scalar_expr()}")
            self.scalars.append(name)
        elif kind == 3:  # plain loop, rebinding outer names
            lv = self.fresh("i")
            lo, hi = self.draw(st.integers(0, 3)), self.draw(st.integers(0, 6))
            step = self.draw(st.sampled_from(["", ", 1", ", 2", ", -1"]))
            helper = self.draw(st.sampled_from(["range", "range", "parallel", "unroll"]))
            if step == ", -1":
                lo, hi = hi, lo
            saved = (list(self.tensors), list(self.scalars))
            self.emit(depth, f"for {lv} in pl.{helper}({lo}, {hi}{step}):")
            self.scalars.append(lv)
            self.block(depth + 1, budget - 1)
            self.tensors, self.scalars = saved[0] + [t for t in self.tensors if t in saved[0]][:0], saved[1]
        elif kind == 4:  # loop with init_values / yield
            lv, acc, out = self.fresh("i"), self.fresh("acc"), self.fresh("out")
            self.emit(depth, f"for {lv}, ({acc},) in pl.range({self.draw(st.integers(1, 4))}, "
                             f"init_values=({self.tensor()},)):")
            saved = (list(self.tensors), list(self.scalars))
            self.tensors.append(acc)
            self.scalars.append(lv)
            self.block(depth + 1, budget - 1)
            self.emit(depth + 1, f"{out}{ann} = pl.yield_({self.tensor_expr()})")
            self.tensors, self.scalars = saved[0] + [out], saved[1]
        elif kind == 5:  # if / else with yields
            res = self.fresh("r")
            self.emit(depth, f"if {self.draw(st.sampled_from(self.scalars))} < {self.draw(st.integers(0, 9))}:")
            saved = (list(self.tensors), list(self.scalars))
            self.block(depth + 1, budget - 1)
            self.emit(depth + 1, f"{res} = pl.yield_({self.tensor()})")
            self.tensors, self.scalars = list(saved[0]), list(saved[1])
            self.emit(depth, "else:")
            self.block(depth + 1, budget - 1)
            self.emit(depth + 1, f"{res} = pl.yield_({self.tensor()})")
            self.tensors, self.scalars = saved[0] + [res], saved[1]
        else:  # an InCore scope
            opts = self.draw(st.sampled_from(["", ", optimizations=[pl.split(pl.SplitMode.UP_DOWN)]",
                                              ", optimizations=[pl.cross_core_slot(slot_num=2)]"]))
            self.emit(depth, f"with pl.at(level=pl.Level.CORE_GROUP{opts}):")
            scalars = list(self.scalars)
            self.in_scope = True
            self.block(depth + 1, budget - 1)
            self.in_scope = False
            self.scalars = scalars  # only tensors leave an InCore scope

    def program(self) -> str:
        head = ["import pypto.language as pl", "", "@pl.program", "class Gen:",
                "    @pl.function",
                "    def f(self, a: pl.Tensor[[16, 16], pl.FP32], b: pl.Tensor[[16, 16], pl.FP32], "
                "n: pl.Scalar[pl.INDEX]) -> pl.Tensor[[16, 16], pl.FP32]:"]
        self.block(2, 2)
        self.emit(2, f"return {self.tensor()}")
        return "\n".join(head + self.lines) + "\n"


@st.composite
def programs(draw) -> str:  # type: ignore[no-untyped-def]
    return Gen(draw).program()


EXAMPLES = int(os.environ.get("PYPTO_ROUNDTRIP_EXAMPLES", "150"))


def check_round_trip(src: str) -> str:
    """The property for one generated program: parse → print → parse is structurally equal, prints
    identically and hashes alike (also through the concise form). Returns "ran"; raises
    AssertionError (or the parser's error) otherwise. `benchmarks/stress.py` runs it at scale."""
    prog = pl.parse(src)
    text = prog.as_python()
    again = pl.parse(text)
    ir.assert_structural_equal(prog, again)
    assert again.as_python() == text
    assert ir.structural_hash(again) == ir.structural_hash(prog)
    ir.assert_structural_equal(pl.parse(prog.as_python(concise=True)), prog)
    return "ran"


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_generated_programs_round_trip(src):
    check_round_trip(src)
