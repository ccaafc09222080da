"""Fuzz property: random mutations of valid programs raise only ParserError subclasses that carry
a source location — never an internal exception. When a mutant still parses, it must round-trip.

The corpus is the printed IR of the examples and a few guide programs; the mutations are seeded
so every CI run checks the same 2,000+ cases; `PYPTO_FUZZ_SEEDS` (default 21) sets how many seeds
of 100 cases run. `mutants(seed)` and `check_mutant` are callable on their own:
`benchmarks/stress.py` runs them at scale.
"""

import os
import random
import re

import pytest

import pypto.language as pl
from pypto import ir
from pypto.core.errors import ParserError

CORPUS_SRC = [
    '''
import pypto.language as pl

M = pl.dynamic("M")

@pl.program
class Fuzz:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, 64], pl.FP16], n: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[M, 64], pl.FP16]]) -> pl.Tensor[[M, 64], pl.FP16]:
        acc0 = pl.create_tile([16, 64], dtype=pl.FP16, target_memory=pl.Mem.Vec)
        for i, (acc,) in pl.range(0, n, 2, init_values=(acc0,)):
            t = pl.load(x, [i * 16, 0], [16, 64])
            if i < 4:
                u = pl.add(acc, t)
                v = pl.yield_(u)
            else:
                w = pl.sub(acc, t)
                v = pl.yield_(w)
            nxt = pl.yield_(v)
        for (j,) in pl.while_(init_values=(0,)):
            pl.cond(j < 3)
            j2 = j + 1
            jo = pl.yield_(j2)
        y = pl.store(nxt, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 64], pl.FP16], n: pl.Scalar[pl.INDEX],
             y: pl.Out[pl.Tensor[[M, 64], pl.FP16]]) -> pl.Tensor[[M, 64], pl.FP16]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            z = pl.mul(x, 0.5)
            w = pl.row_max(z)
        y = self.k(z, n, y)
        return y
''',
    '''
import pypto.language as pl

@pl.program
class Mm:
    @pl.function(type=pl.FunctionType.InCore)
    def mm(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP16],
           c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        a_l1 = pl.load(a, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        b_l1 = pl.load(b, [0, 0], [64, 64], target_memory=pl.Mem.Mat)
        a_l0a = pl.move(a_l1, target_memory=pl.Mem.Left)
        b_l0b = pl.move(b_l1, target_memory=pl.Mem.Right)
        c_acc = pl.matmul(a_l0a, b_l0b)
        c_acc2 = pl.matmul_acc(c_acc, a_l0a, b_l0b)
        out = pl.store(c_acc2, [0, 0], c)
        return out
''',
    '''
import pypto.language as pl

@pl.function
def f(x: pl.Tensor[[4, 64], pl.FP32], s: pl.Scalar[pl.FP32]) -> pl.Tensor[[1, 64], pl.FP32]:
    init_max: pl.Tensor[[1, 64], pl.FP32] = pl.create_tensor([1, 64], dtype=pl.FP32)
    init_sum: pl.Tensor[[1, 64], pl.FP32] = pl.create_tensor([1, 64], dtype=pl.FP32)
    for i, (acc_max, acc_sum) in pl.range(4, init_values=(init_max, init_sum)):
        row: pl.Tensor[[1, 64], pl.FP32] = x[i:i + 1, :]
        new_max: pl.Tensor[[1, 64], pl.FP32] = pl.maximum(acc_max, row)
        new_sum: pl.Tensor[[1, 64], pl.FP32] = pl.add(acc_sum, row) * 2.0
        out_max, out_sum = pl.yield_(new_max, new_sum)
    for k in pl.range(3, 0, -1):
        if k == 2:
            break
        out_sum = pl.cast(pl.cast(out_sum, pl.FP16, mode="round"), pl.FP32)
    pl.static_assert(4 > 1, "ok")
    return out_sum
''',
]

CORPUS = [pl.parse(s).as_python() for s in CORPUS_SRC] + CORPUS_SRC

TOKENS = ["pl.", "(", ")", "[", "]", ":", ",", "=", "0", "1", "-1", "16", "2.0", "x", "acc", "i",
          "pl.yield_(", "pl.range(", "pl.Tile", "pl.Tensor", "pl.FP32", "pl.Mem.Left", "self.", "if ",
          "for ", "return ", "with ", "break", "pl.Out[", "None", "'s'", "*", "+", "//", "<", "not ",
          "    ", "\n", "pl.tile.", "pl.tensor.", "lambda: 0", "...", "yield", "@pl.function", "#"]


def mutate(src: str, rng: random.Random) -> str:
    lines = src.splitlines()
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(7)
        i = rng.randrange(len(lines))
        line = lines[i]
        if kind == 0 and len(lines) > 2:  # drop a line
            del lines[i]
        elif kind == 1:  # duplicate a line elsewhere
            lines.insert(rng.randrange(len(lines)), line)
        elif kind == 2 and line:  # delete a character span
            a = rng.randrange(len(line))
            lines[i] = line[:a] + line[a + rng.randint(1, 4):]
        elif kind == 3:  # insert a token
            a = rng.randrange(len(line) + 1)
            lines[i] = line[:a] + rng.choice(TOKENS) + line[a:]
        elif kind == 4:  # swap two identifiers or numbers within the line
            words = re.findall(r"[A-Za-z_][A-Za-z_0-9]*|\d+", line)
            if len(words) >= 2:
                w1, w2 = rng.sample(words, 2)
                lines[i] = line.replace(w1, "\0").replace(w2, w1).replace("\0", w2)
        elif kind == 5:  # change indentation
            lines[i] = (" " * rng.choice([0, 2, 4, 8, 12])) + line.lstrip()
        else:  # replace a number
            lines[i] = re.sub(r"\d+", lambda m: str(rng.choice([0, 1, 3, 7, 100000, 17])), line, count=1)
    return "\n".join(lines) + "\n"


CASES_PER_SEED = 100  # × 21 seeds = 2,100 cases
SEEDS = int(os.environ.get("PYPTO_FUZZ_SEEDS", "21"))


def mutants(seed: int) -> list[str]:
    """The CASES_PER_SEED mutated sources of `seed` (deterministic)."""
    rng = random.Random(seed)
    return [mutate(rng.choice(CORPUS), rng) for _ in range(CASES_PER_SEED)]


def check_mutant(src: str) -> str:
    """The property for one mutant: "rejected" when it fails with a located ParserError (an
    unlocated one, or any other exception, propagates), else "parsed" after checking it round-trips
    (AssertionError if not). `benchmarks/stress.py` runs it at scale."""
    try:
        prog = pl.parse(src)
    except ParserError as e:
        if e.span is None or not e.span.is_known():
            raise
        return "rejected"
    text = prog.as_python()
    ir.assert_structural_equal(pl.parse(text), prog)
    return "parsed"


@pytest.mark.parametrize("seed", range(SEEDS))
def test_mutated_programs_fail_only_with_located_parser_errors(seed):
    parsed = 0
    for n, src in enumerate(mutants(seed)):
        try:
            parsed += check_mutant(src) == "parsed"
        except Exception as e:  # pragma: no cover - a failure of the property
            raise AssertionError(f"case {seed}/{n}: {type(e).__name__}: {e}\n--- source ---\n{src}") from e
    assert parsed < CASES_PER_SEED  # the mutations do break programs


@pytest.mark.parametrize("name", ["M:", "", "Mpl.", "for", "pl"])
def test_a_dynamic_dimension_needs_a_name_printed_ir_can_declare(name):
    """Mutants the fuzzing found (seeds 41, 57, 67, 448, 583 at PYPTO_FUZZ_SEEDS=600): a
    `pl.dynamic` name that is no identifier parsed, and its printed declaration `M: = ...` did not."""
    from pypto.core.errors import ArgumentValueError

    src = f'import pypto.language as pl\n\nM = pl.dynamic("{name}")\n\n' \
          '@pl.function\ndef f(x: pl.Tensor[[M, 64], pl.FP16]) -> pl.Tensor[[M, 64], pl.FP16]:\n    return x\n'
    with pytest.raises(ParserError, match="pl.dynamic: the name must be a Python identifier") as info:
        pl.parse(src)
    assert info.value.span is not None and info.value.span.begin_line == 3
    with pytest.raises(ArgumentValueError, match=repr(name)):
        pl.dynamic(name)
