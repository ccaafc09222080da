"""Property (issue 11 item 4): random tensor-level chains of random sizes — elementwise, scalar,
broadcast and row-reduction steps on FP32 `[R, C]` tensors — compile without MemoryCapacityError
(TileTensorBlocks blocks what does not fit) and compute what torch computes; so do FP16 matmuls
of random sizes (M / N / K blocks with partial tails)."""

import os

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import pypto.language as pl
from pypto import ir
from pypto.backend import BackendType

EXAMPLES = int(os.environ.get("PYPTO_TILING_EXAMPLES", "12"))

#  step name      DSL (x: the running value)                                      torch
STEPS = {
    "neg":       ("pl.tensor.neg({x})",                                           lambda x, b, v: -x),
    "abs":       ("pl.tensor.abs({x})",                                           lambda x, b, v: x.abs()),
    "relu":      ("pl.tensor.relu({x})",                                          lambda x, b, v: torch.relu(x)),
    "exp_neg":   ("pl.tensor.exp(pl.tensor.neg(pl.tensor.abs({x})))",             lambda x, b, v: torch.exp(-x.abs())),
    "add_b":     ("pl.tensor.add({x}, b)",                                        lambda x, b, v: x + b),
    "mul_b":     ("pl.tensor.mul({x}, b)",                                        lambda x, b, v: x * b),
    "max_b":     ("pl.tensor.maximum({x}, b)",                                    lambda x, b, v: torch.maximum(x, b)),
    "muls":      ("pl.tensor.muls({x}, 0.5)",                                     lambda x, b, v: x * 0.5),
    "adds":      ("pl.tensor.adds({x}, 1.0)",                                     lambda x, b, v: x + 1.0),
    "row_mul_v": ("pl.tensor.row_expand_mul({x}, v)",                             lambda x, b, v: x * v),
    "shift_max": ("pl.tensor.row_expand_sub({x}, pl.tensor.row_max({x}))",        lambda x, b, v: x - x.amax(-1, keepdim=True)),
    "norm_sum":  ("pl.tensor.row_expand_div({x}, pl.tensor.adds(pl.tensor.row_sum(pl.tensor.abs({x})), 1.0))",
                  lambda x, b, v: x / (x.abs().sum(-1, keepdim=True) + 1.0)),
}


def _source(r: int, c: int, steps: list[str]) -> str:
    t = f"pl.Tensor[[{r}, {c}], pl.FP32]"
    body = []
    x = "a"
    for n, s in enumerate(steps):
        body.append(f"        t{n}: {t} = {STEPS[s][0].format(x=x)}")
        x = f"t{n}"
    return f"""
import pypto.language as pl

@pl.program
class Chain:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: {t}, b: {t}, v: pl.Tensor[[{r}, 1], pl.FP32], c: pl.Out[{t}]) -> {t}:
{chr(10).join(body)}
        c1: {t} = pl.tensor.assemble(c, {x}, [0, 0])
        return c1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: {t}, b: {t}, v: pl.Tensor[[{r}, 1], pl.FP32], c: pl.Out[{t}]) -> {t}:
        c1: {t} = self.k(a, b, v, c)
        return c1
"""


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.integers(1, 400), st.integers(1, 2500), st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=6),
       st.sampled_from(["a2a3sim", "a5sim"]))
def test_random_chains_of_any_size_match_torch(r, c, steps, platform):
    prog = pl.parse(_source(r, c, steps))
    g = torch.Generator().manual_seed(r * 7919 + c)
    a, b, v = torch.randn(r, c, generator=g), torch.randn(r, c, generator=g), torch.rand(r, 1, generator=g)
    want = a
    for s in steps:
        want = STEPS[s][1](want, b, v)
    out = torch.full((r, c), float("nan"))
    compiled = ir.compile(prog, dump_passes=False, platform=platform,
                          backend_type=BackendType.Ascend910B if platform == "a2a3sim" else BackendType.Ascend950)
    compiled(a, b, v, out)
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-5)


def _matmul_source(m: int, k: int, n: int) -> str:
    return f"""
import pypto.language as pl

@pl.program
class Mm:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[{m}, {k}], pl.FP16], b: pl.Tensor[[{k}, {n}], pl.FP16],
          c: pl.Out[pl.Tensor[[{m}, {n}], pl.FP32]]) -> pl.Tensor[[{m}, {n}], pl.FP32]:
        p: pl.Tensor[[{m}, {n}], pl.FP32] = pl.tensor.matmul(a, b)
        c1: pl.Tensor[[{m}, {n}], pl.FP32] = pl.tensor.assemble(c, p, [0, 0])
        return c1

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[{m}, {k}], pl.FP16], b: pl.Tensor[[{k}, {n}], pl.FP16],
             c: pl.Out[pl.Tensor[[{m}, {n}], pl.FP32]]) -> pl.Tensor[[{m}, {n}], pl.FP32]:
        c1: pl.Tensor[[{m}, {n}], pl.FP32] = self.k(a, b, c)
        return c1
"""


def _check_matmul(m: int, k: int, n: int, platform: str) -> None:
    g = torch.Generator().manual_seed(m * 31 + k * 7 + n)
    a = (torch.randn(m, k, generator=g) / k ** 0.5).half()
    b = torch.randn(k, n, generator=g).half()
    out = torch.full((m, n), float("nan"))
    compiled = ir.compile(pl.parse(_matmul_source(m, k, n)), dump_passes=False, platform=platform,
                          backend_type=BackendType.Ascend910B if platform == "a2a3sim" else BackendType.Ascend950)
    compiled(a, b, out)
    torch.testing.assert_close(out, a.float() @ b.float(), rtol=2e-3, atol=2e-3)


@settings(max_examples=max(4, EXAMPLES // 2), deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(st.integers(1, 700), st.integers(1, 900), st.integers(1, 700), st.sampled_from(["a2a3sim", "a5sim"]))
@example(1, 145, 193, "a2a3sim")
@example(1, 161, 177, "a5sim")
def test_random_matmul_sizes_match_torch(m, k, n, platform):
    _check_matmul(m, k, n, platform)


# Found by the property above: a single output row (or column) too large to compute unblocked was
# blocked with 16-row operand slices of the 1-row `a` ("tensor.slice: region ... exceeds dimension 1").
@pytest.mark.parametrize("m, k, n", [(1, 145, 193), (1, 161, 177), (1, 900, 700), (700, 900, 1), (1, 900, 1)])
def test_single_row_or_column_matmul_blocks_match_torch(m, k, n):
    _check_matmul(m, k, n, "a2a3sim")
