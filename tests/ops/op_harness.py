"""Helpers for the op-catalog tests: build a one-kernel program from DSL text, run it on the
simulator, and make inputs / tolerances per dtype. Expected values are always computed by the
tests with torch directly, never through an OpSpec's `compute`.
"""

from __future__ import annotations

import textwrap

import torch

import pypto.language as pl
from pypto import ir

TORCH = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16, "INT32": torch.int32,
         "INT16": torch.int16, "INT8": torch.int8, "UINT8": torch.uint8}
TOL = {"FP32": (1e-5, 1e-5), "FP16": (1e-3, 1e-3), "BF16": (1e-2, 1e-2), "INT32": (0, 0), "INT16": (0, 0),
       "INT8": (0, 0), "UINT8": (0, 0)}
FLOATS = ("FP32", "FP16", "BF16")


def tensor_t(dt: str, shape: tuple) -> str:
    return f"pl.Tensor[[{', '.join(map(str, shape))}], pl.{dt}]"


def kernel_program(body: str, ins: list[tuple], outs: list[tuple]) -> ir.Program:
    """A program with InCore kernel `k` and an Orchestration `main` that calls it.

    `ins`: (name, dtype, shape) tensors or (name, dtype, None) scalars; `outs`: (name, dtype, shape).
    `body` must bind a tile `<name>_t` for every output; the kernel stores it at [0, ...].
    """
    def param(n: str, dt: str, shape: tuple | None) -> str:
        return f"{n}: pl.Scalar[pl.{dt}]" if shape is None else f"{n}: {tensor_t(dt, shape)}"

    params = [param(*i) for i in ins] + [f"{n}: pl.Out[{tensor_t(dt, s)}]" for n, dt, s in outs]
    sig = f"self, {', '.join(params)}"
    stores = "\n".join(f"{n} = pl.store({n}_t, [{', '.join('0' for _ in s)}], {n})" for n, _, s in outs)
    kbody = textwrap.indent(textwrap.dedent(body).strip() + "\n" + stores, " " * 8)
    args = ", ".join([i[0] for i in ins] + [o[0] for o in outs])
    text = f"""
import pypto.language as pl

@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k({sig}):
{kbody}

    @pl.function(type=pl.FunctionType.Orchestration)
    def main({sig}):
        self.k({args})
"""
    return pl.parse(text)


def run(prog: ir.Program, *inputs, outs: list[tuple]) -> list[torch.Tensor]:
    """Compile `prog` and run it on `inputs`; returns the output tensors (initialised to zero)."""
    ys = [torch.zeros(*s, dtype=TORCH[dt]) for _, dt, s in outs]
    ir.compile(prog, dump_passes=False, skip_ptoas=True)(*inputs, *ys)
    return ys


def run_kernel(body: str, ins: list[tuple], outs: list[tuple], *inputs) -> list[torch.Tensor]:
    return run(kernel_program(body, ins, outs), *inputs, outs=outs)


def rand(dt: str, shape: tuple, positive: bool = False, low: int = -50, high: int = 50) -> torch.Tensor:
    """Random data of `dt`; integers in [low, high), floats normal (|x| + 0.5 when positive)."""
    if not TORCH[dt].is_floating_point:
        if positive:
            low = max(low, 1)
        return torch.randint(low, high, shape, dtype=TORCH[dt])
    x = torch.randn(*shape)
    if positive:
        x = x.abs() + 0.5
    return x.to(TORCH[dt])


def close(got: torch.Tensor, want: torch.Tensor, dt: str, scale: float = 1.0) -> None:
    rtol, atol = TOL[dt]
    torch.testing.assert_close(got, want.to(got.dtype), rtol=rtol * scale, atol=atol * scale)
