"""Quickstart (User Manual): a tensor-level @pl.jit add inside an InCore scope, run on the simulator.

4096 x 4096 FP32 inputs (64 MiB each) do not fit one core: the compiler splits the region into
row blocks that do and runs them as parallel tasks (docs/language.md, "What the compiler does with
a tensor-level region").

    python examples/quickstart_add.py
"""

import torch
from _check import check

import pypto.language as pl
from pypto.runtime import RunConfig


@pl.jit
def add_kernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        c[:] = pl.add(a, b)
    return c


def main() -> None:
    torch.manual_seed(0)
    a = torch.randn(4096, 4096)
    b = torch.randn(4096, 4096)
    c = torch.empty(4096, 4096)
    add_kernel(a, b, c, config=RunConfig(platform="a2a3sim"))
    check("quickstart add (4096x4096 fp32, a2a3sim)", c, a + b)


if __name__ == "__main__":
    main()
