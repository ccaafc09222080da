"""Differential property at tile level: random InCore kernels run on the simulator at their
planned addresses (memory planning, in-place results and reuse included) and must compute what the
PyTorch reference of the frontend IR computes.

- vector kernels: loads, vector ops, one or two loop-carried tiles updated by elementwise ops (in
  place, or beside a carried value read later in the iteration), ifs with results, plain loops,
  stores; `PYPTO_TILE_PROGRAMS` (default 80) sets how many;
- cube kernels (`CubeGen`): matmul / matmul_acc chains and carried accumulators, on small
  integers so the comparison is exact; `PYPTO_CUBE_PROGRAMS` (default 40) sets how many.

Seeded, so every run checks the same programs, in chunks of 10 (one test each, so xdist spreads
them). `check_tile_program(seed)` / `check_cube_program(seed)` are the property for one program;
`benchmarks/stress.py` runs them at scale."""

import os
import random

import pytest
import torch

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserError
from pypto.debug import torch_codegen

PROGRAMS = int(os.environ.get("PYPTO_TILE_PROGRAMS", "80"))
BIN = ["add", "sub", "mul", "maximum", "minimum"]
UN = ["exp", "neg", "abs", "relu"]

def gen(rng):  # noqa: C901 - a random program generator: one branch per statement kind
    """DSL text of a random @pl.program with one InCore kernel `k` and an orchestration `main`."""
    lines = []
    tiles = []
    k = [0]

    def fresh(p="t"):
        k[0] += 1
        return f"{p}{k[0]}"

    def emit(d, s):
        lines.append("    " * d + s)

    def tile_expr(d):
        c = rng.randrange(4)
        if c == 0 or not tiles:
            r = rng.randrange(0, 4) * 8
            return f"pl.load(x, [{r}, 0], [8, 16])"
        if c == 1:
            return f"pl.{rng.choice(BIN)}({rng.choice(tiles)}, {rng.choice(tiles)})"
        if c == 2:
            return f"pl.{rng.choice(['adds', 'muls'])}({rng.choice(tiles)}, {rng.choice(['0.5', '2.0', '-1.0'])})"
        return f"pl.{rng.choice(UN[1:])}({rng.choice(tiles)})"
    def block(d, budget):
        for _ in range(rng.randint(1, 4)):
            c = rng.randrange(6 if budget > 0 else 3)
            if c in (0, 1, 2):
                name = fresh() if c != 2 or len(tiles) < 2 else rng.choice(tiles)
                emit(d, f"{name} = {tile_expr(d)}")
                if name not in tiles:
                    tiles.append(name)
            elif c == 3 and tiles:  # one or two carried tiles
                lv = fresh("i")
                accs = [fresh("acc") for _ in range(rng.choice([1, 1, 2]))]
                outs = [fresh("o") for _ in accs]
                inits = ", ".join(rng.choice(tiles) for _ in accs)
                emit(d, f"for {lv}, ({', '.join(accs)},) in pl.range({rng.randint(1, 3)}, init_values=({inits},)):")
                saved = list(tiles)
                tiles.extend(accs)
                block(d + 1, budget - 1)
                ys = []
                for acc in accs:
                    if rng.random() < 0.6:  # updated by an elementwise op (in place unless read later)
                        nxt, other = fresh(), rng.choice(tiles)
                        emit(d + 1, f"{nxt} = pl.{rng.choice(BIN)}({', '.join(rng.sample([acc, other], 2))})")
                        tiles.append(nxt)
                        ys.append(nxt)
                    else:
                        ys.append(rng.choice(tiles))
                emit(d + 1, f"{', '.join(outs)} = pl.yield_({', '.join(ys)})")
                tiles[:] = saved + outs
            elif c == 4 and tiles:
                r = fresh("r")
                emit(d, f"if n < {rng.randrange(6)}:")
                saved = list(tiles)
                block(d + 1, budget - 1)
                emit(d + 1, f"{r} = pl.yield_({rng.choice(tiles)})")
                tiles[:] = list(saved)
                emit(d, "else:")
                block(d + 1, budget - 1)
                emit(d + 1, f"{r} = pl.yield_({rng.choice(tiles)})")
                tiles[:] = saved + [r]
            elif c == 5 and tiles:
                lv = fresh("j")
                emit(d, f"for {lv} in pl.range({rng.randint(0, 3)}):")
                saved = list(tiles)
                block(d + 1, budget - 1)
                tiles[:] = saved
        if not tiles:
            emit(d, f"{fresh()} = pl.load(x, [0, 0], [8, 16])")
            tiles.append(f"t{k[0]}")
    block(2, 2)
    for idx in range(2):
        emit(2, f"y = pl.store({rng.choice(tiles)}, [{idx * 8}, 0], y)")
    emit(2, "return y")
    head = ["import pypto.language as pl", "", "@pl.program", "class T:",
            "    @pl.function(type=pl.FunctionType.InCore)",
            "    def k(self, x: pl.Tensor[[32, 16], pl.FP32], n: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:"]
    tail = ["", "    @pl.function(type=pl.FunctionType.Orchestration)",
            "    def main(self, x: pl.Tensor[[32, 16], pl.FP32], n: pl.Scalar[pl.INDEX], y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:",
            "        y = self.k(x, n, y)", "        return y"]
    return "\n".join(head + lines + tail) + "\n"



def check_tile_program(s: int) -> str:
    """The property for the vector kernel of seed `s`: "ran" when the simulator matched the torch
    reference (AssertionError if not), "rejected" when parsing refused it with a located ParserError
    (an unlocated one propagates). `benchmarks/stress.py` runs it at scale."""
    rng = random.Random(s)
    src = gen(rng)
    try:
        prog = pl.parse(src)
    except ParserError as e:  # e.g. a carried name rebound in a nested loop: a located error
        if e.span is None or not e.span.is_known():
            raise
        return "rejected"
    torch.manual_seed(s)
    x, n = torch.randn(32, 16), rng.randrange(6)
    ns: dict = {}
    exec(compile(torch_codegen(prog), "<reference>", "exec"), ns)  # noqa: S102
    expected = torch.zeros(16, 16)
    ns["run"](x.clone(), n, expected)
    compiled = ir.compile(prog, dump_passes=False, verification_level=ir.VerificationLevel.ROUNDTRIP)
    got = torch.zeros(16, 16)
    compiled(x.clone(), n, got)
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4, equal_nan=True,
                               msg=lambda m: f"seed {s}: {m}\n{src}")
    return "ran"


@pytest.mark.parametrize("seed", range(0, PROGRAMS, 10))
def test_tile_kernels_match_the_torch_reference(seed):
    ran = sum(check_tile_program(s) == "ran" for s in range(seed, seed + 10))
    assert ran >= 7


# ---- cube kernels: matmul / matmul_acc chains and carried accumulators ------------------------

CUBE_PROGRAMS = int(os.environ.get("PYPTO_CUBE_PROGRAMS", "40"))
_CUBE_HEAD = """import pypto.language as pl


@pl.program
class C:
    @pl.function(type=pl.FunctionType.InCore)
    def mm(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16], n: pl.Scalar[pl.INDEX],
           y: pl.Out[pl.Tensor[[128, 16], pl.FP32]]) -> pl.Tensor[[128, 16], pl.FP32]:
"""
_CUBE_TAIL = """        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16], n: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[128, 16], pl.FP32]]) -> pl.Tensor[[128, 16], pl.FP32]:
        y = self.mm(a, b, n, y)
        return y
"""


class CubeGen:
    """DSL text of a random program whose InCore kernel `mm` only uses the cube: products of 16x16
    blocks of `a` and `b` accumulated by `matmul_acc` (computed in place over an accumulator that
    dies at the op, or beside one stored later), accumulators carried through loops — one or two,
    yielded straight or swapped, the carried value stored again after its update in some, the
    initial value stored after the loop in some — and `if`s choosing between accumulators."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.lines: list[str] = []
        self.accs: list[str] = []   # Acc tiles that may still be read
        self.k = 0
        self.stores = 0

    def fresh(self, p: str) -> str:
        self.k += 1
        return f"{p}{self.k}"

    def emit(self, d: int, s: str) -> None:
        self.lines.append("    " * d + s)

    def operands(self, d: int, kk: str) -> tuple[str, str]:
        """A Left block of `a` and a Right block of `b` at K block `kk`."""
        left, right = self.fresh("l"), self.fresh("r")
        row, col = self.rng.randrange(4) * 16, self.rng.randrange(4) * 16
        self.emit(d, f"{left} = pl.move(pl.load(a, [{row}, ({kk}) * 16], [16, 16], target_memory=pl.Mem.Mat), "
                     "target_memory=pl.Mem.Left)")
        self.emit(d, f"{right} = pl.move(pl.load(b, [({kk}) * 16, {col}], [16, 16], target_memory=pl.Mem.Mat), "
                     "target_memory=pl.Mem.Right)")
        return left, right

    def store(self, d: int, t: str) -> None:
        self.emit(d, f"y = pl.store({t}, [{self.stores % 8 * 16}, 0], y)")
        self.stores += 1

    def acc_update(self, d: int, acc: str, kk: str) -> str:
        out = self.fresh("c")
        left, right = self.operands(d, kk)
        self.emit(d, f"{out} = pl.matmul_acc({acc}, {left}, {right})")
        return out

    def stmt(self, d: int, loop_vars: list[str]) -> None:
        r = self.rng
        kk = r.choice([str(r.randrange(4))] + [f"{v} % 4" for v in loop_vars])
        kind = r.randrange(5) if self.accs else 0
        if kind == 0:
            c = self.fresh("c")
            left, right = self.operands(d, kk)
            self.emit(d, f"{c} = pl.matmul({left}, {right})")
            self.accs.append(c)
        elif kind == 1:   # a chain: the old accumulator dies at the op or stays readable
            acc = r.choice(self.accs)
            if r.random() < 0.6:
                self.accs.remove(acc)
            self.accs.append(self.acc_update(d, acc, kk))
        elif kind == 2:
            self.store(d, r.choice(self.accs))
        elif kind == 3 and d < 4:
            self.loop(d, loop_vars)
        else:
            self.if_(d, loop_vars, kk)

    def loop(self, d: int, loop_vars: list[str]) -> None:
        r = self.rng
        inits = r.sample(self.accs, min(len(self.accs), r.choice([1, 2])))
        lv = self.fresh("i")
        its = [self.fresh("p") for _ in inits]
        outs = [self.fresh("o") for _ in inits]
        head = r.choice(["pl.range(1, 4)", "pl.range(3)", "pl.range(3, 0, -1)", "pl.range(n, n + 2)"])
        self.emit(d, f"for {lv}, ({', '.join(its)},) in {head[:-1]}, init_values=({', '.join(inits)},)):")
        for init in inits:
            if r.random() < 0.6:   # else the initial value is stored after the loop (a copy is carried)
                self.accs.remove(init)
        saved = list(self.accs)
        self.accs = list(its)
        if r.random() < 0.3:
            self.stmt(d + 1, loop_vars + [lv])
        nxt = [self.acc_update(d + 1, p, f"{lv} % 4") if r.random() < 0.8 else p for p in its]
        if r.random() < 0.4:   # a carried value read after its update
            self.store(d + 1, r.choice(its))
        if len(nxt) == 2 and r.random() < 0.4:
            nxt.reverse()
        self.emit(d + 1, f"{', '.join(outs)} = pl.yield_({', '.join(nxt)})")
        self.accs = saved + outs

    def if_(self, d: int, loop_vars: list[str], kk: str) -> None:
        r = self.rng
        acc, res = r.choice(self.accs), self.fresh("q")
        self.emit(d, f"if n < {r.randrange(6)}:")
        self.emit(d + 1, f"{res} = pl.yield_({self.acc_update(d + 1, acc, kk)})")
        self.emit(d, "else:")
        other = r.choice(self.accs)
        self.emit(d + 1, f"{res} = pl.yield_({other if r.random() < 0.5 else self.acc_update(d + 1, other, kk)})")
        self.accs.append(res)

    def program(self) -> str:
        for _ in range(self.rng.randint(2, 5)):
            self.stmt(2, [])
        for acc in self.accs[-3:]:
            self.store(2, acc)
        return _CUBE_HEAD + "\n".join(self.lines) + "\n" + _CUBE_TAIL


def check_cube_program(s: int) -> str:
    """The property for the cube kernel of seed `s`: "ran" when the simulator matched the torch
    reference exactly (AssertionError if not). `benchmarks/stress.py` runs it at scale."""
    src = CubeGen(random.Random(s)).program()
    prog = pl.parse(src)
    g = torch.Generator().manual_seed(s)
    # small integers: every product and sum is exact in FP32, whatever the order
    a, b = (torch.randint(-2, 3, (64, 64), generator=g).half() for _ in range(2))
    n = s % 4
    ns: dict = {}
    exec(compile(torch_codegen(prog), "<reference>", "exec"), ns)  # noqa: S102
    expected = torch.zeros(128, 16)
    ns["run"](a, b, n, expected)
    compiled = ir.compile(prog, dump_passes=False, verification_level=ir.VerificationLevel.ROUNDTRIP)
    got = torch.zeros(128, 16)
    compiled(a, b, n, got)
    torch.testing.assert_close(got, expected, rtol=0, atol=0, msg=lambda m: f"seed {s}: {m}\n{src}")
    return "ran"


@pytest.mark.parametrize("first", range(0, CUBE_PROGRAMS, 10))
def test_cube_kernels_match_the_torch_reference(first):
    for s in range(first, min(first + 10, CUBE_PROGRAMS)):
        check_cube_program(s)
