"""Fuzz property past the parser: a mutated valid program that still parses is compiled (every pass,
ROUNDTRIP verification) and, when it compiles, run on the simulator with arguments made from its
entry's signature. Each stage may refuse the program only with a located PyPTOError (SPEC §2.4:
every error a kernel author can cause names their line) — never an internal exception, and never
an error without a location.

The bases are the parser-fuzz corpus and programs of the tile, cube and access generators
(tests/properties), mutated by `test_parser_fuzz.mutate`. Seeded: `PYPTO_MUTANT_PROGRAMS`
(default 200) sets how many mutants run, in chunks of 50. `check_mutant_compiles(seed)` is the
property for one mutant; `benchmarks/stress.py` runs it at scale. Numbers are not compared: a
mutant may read out of its tensors, which must then be a located run-time error.
"""

from __future__ import annotations

import os
import random

import pytest
import torch
from test_access_differential import Gen as AccessGen
from test_parser_fuzz import CORPUS, mutate
from test_tile_differential import CubeGen, gen

import pypto.language as pl
from pypto import ir
from pypto.core.errors import PyPTOError
from pypto.ir.expr import ConstInt
from pypto.ir.types import ScalarType, TensorType

PROGRAMS = int(os.environ.get("PYPTO_MUTANT_PROGRAMS", "200"))
CHUNK = 50
DYN = 32   # the size of every dynamic dimension in the arguments


def mutant(seed: int) -> str:
    """The mutated source of `seed`: one base program (corpus or generated), mutated."""
    rng = random.Random(seed)
    kind = rng.randrange(4)
    if kind == 0:
        base = rng.choice(CORPUS)
    elif kind == 1:
        base = gen(random.Random(rng.randrange(10**6)))
    elif kind == 2:
        base = CubeGen(random.Random(rng.randrange(10**6))).program()
    else:
        base = AccessGen(random.Random(rng.randrange(10**6))).program()
    return mutate(base, rng)


def arguments(func) -> list | None:  # type: ignore[no-untyped-def]
    """Arguments for `func`'s parameters (random tensors of their shapes, small scalars), or None
    when a parameter has a type the host cannot make."""
    args: list = []
    for p in func.params:
        t = p.type
        if isinstance(t, ScalarType):
            d = t.dtype
            args.append(0.5 if d.is_float() else (True if d.is_bool() else 2))
        elif isinstance(t, TensorType):
            dt = t.dtype.to_torch(strict=False)
            if dt is None:
                return None
            shape = [e.value if isinstance(e, ConstInt) else DYN for e in t.shape]
            if t.dtype.is_float():
                args.append(torch.randn(shape).to(dt))
            elif t.dtype.is_bool():
                args.append(torch.rand(shape) < 0.5)
            else:
                args.append(torch.randint(0, 4, shape).to(dt))
        else:
            return None
    return args


def _located(e: PyPTOError) -> str:
    if e.span is None or not e.span.is_known():
        raise e
    return "rejected"


def check_mutant_compiles(seed: int) -> str:
    """The property for mutant `seed`: "rejected" when parse, compile or run refuses it with a
    located PyPTOError (an unlocated one, or any other exception, propagates), "parse-only" when a
    mutant parses but its entry has no host-makeable arguments, else "ran"."""
    src = mutant(seed)
    try:
        prog = pl.parse(src)
    except PyPTOError as e:
        return _located(e)
    if isinstance(prog, ir.Function):   # a parsed `@pl.function` compiles as a one-function program
        prog = ir.Program(prog.name, (prog,))
    try:
        compiled = ir.compile(prog, dump_passes=False, skip_ptoas=True,
                              verification_level=ir.VerificationLevel.ROUNDTRIP)
    except PyPTOError as e:
        return _located(e)
    torch.manual_seed(seed)
    args = arguments(compiled.entry_function)
    if args is None:
        return "parse-only"
    try:
        compiled(*args)
    except PyPTOError as e:
        return _located(e)
    return "ran"


@pytest.mark.parametrize("first", range(0, PROGRAMS, CHUNK))
def test_mutants_compile_and_run_or_fail_located(first: int) -> None:
    outcomes = []
    for seed in range(first, min(first + CHUNK, PROGRAMS)):
        try:
            outcomes.append(check_mutant_compiles(seed))
        except Exception as e:  # pragma: no cover - a failure of the property
            raise AssertionError(f"mutant {seed}: {type(e).__name__}: {e}\n--- source ---\n{mutant(seed)}") from e
    assert outcomes.count("ran") >= 1, outcomes   # some mutants get through to the simulator
